"""The Coder's parts that need no server: answer parsing (one fenced python/bash block or a verdict, everything else
refused with feedback), named files and file changes, the summary's word limit, code_agent's time bound."""

from __future__ import annotations

import pytest

from symphony_mcp.code.agent import clip_words
from symphony_mcp.code.parsing import parse_answer
from symphony_mcp.code.workspace import changes, named_files
from symphony_mcp.config import PolicySettings
from symphony_mcp.models.reask import UnusableAnswerError
from symphony_mcp.policy.tools import ToolPolicy


def test_one_block_is_taken_as_text_with_its_language_and_thought() -> None:
    answer = parse_answer("Look first.\n```bash\nls -la\n```\n", final=False)
    assert (answer.language, answer.code, answer.thought, answer.verdict) == ("bash", "ls -la\n", "Look first.", None)
    assert parse_answer("```py\nprint(1)\n```", final=False).language == "python"


@pytest.mark.parametrize(
    ("text", "verdict"),
    [
        ("All checked.\nDONE", "DONE"),
        ("**FAIL**: the file is locked", "FAIL"),
        ("No such app here.\nINFEASIBLE.", "INFEASIBLE"),
    ],
)
def test_verdicts_on_their_own_line(text: str, verdict: str) -> None:
    assert parse_answer(text, final=False).verdict == verdict
    assert parse_answer(text, final=True).verdict == verdict


@pytest.mark.parametrize(
    ("text", "final", "problem"),
    [
        ("I think it is done now", False, "no code block and no verdict"),
        ("```python\na()\n```\n```bash\nb\n```", False, "2 code blocks"),
        ("```\nls\n```", False, "names no language"),
        ("```ruby\nputs 1\n```", False, "names 'ruby'"),
        ("```python\nx()\n```\nDONE", False, "not both"),
        ("```python\n\n```", False, "empty"),
        ("```python\nx()\n```", True, "last turn"),
        ("DONE\nFAIL", False, "one verdict"),
    ],
)
def test_unusable_answers_say_what_is_wrong(text: str, final: bool, problem: str) -> None:
    with pytest.raises(UnusableAnswerError, match=problem):
        parse_answer(text, final=final)


def test_a_disabled_language_is_refused() -> None:
    with pytest.raises(UnusableAnswerError, match="bash is not enabled"):
        parse_answer("```bash\nls\n```", final=False, languages=("python",))


def test_a_verdict_word_inside_code_is_code() -> None:
    assert parse_answer('```python\nprint("DONE")\n```', final=False).code == 'print("DONE")\n'


def test_named_files_and_changes() -> None:
    assert named_files("Fill column B of ~/Documents/sales.xlsx and set debug in config.json") == [
        "~/Documents/sales.xlsx",
        "config.json",
    ]
    listed, more = changes({"/a": (1, 1), "/b": (1, 1)}, {"/a": (2, 3), "/c": (1, 5)})
    assert [(f.path, f.change, f.size) for f in listed] == [
        ("/a", "modified", 3),
        ("/b", "deleted", None),
        ("/c", "created", 5),
    ]
    assert not more


def test_summaries_are_clipped_to_their_word_limit() -> None:
    assert len(clip_words(" ".join(["word"] * 300), 150).split()) == 150
    assert clip_words("short one", 150) == "short one"


def test_code_agent_gets_a_loop_sized_time_bound_unless_set() -> None:
    assert ToolPolicy(PolicySettings()).time_bound("code_agent")[0] == 1800
    assert ToolPolicy(PolicySettings()).time_bound("click")[0] == 120
    assert ToolPolicy(PolicySettings(timeouts={"code_agent": 30})).time_bound("code_agent")[0] == 30
