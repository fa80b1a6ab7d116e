"""Reading one Coder answer: a thought and exactly one fenced python or bash block, or a verdict.

The answer is data: the block is handed to the confined executor as text, never evaluated here.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Literal

from symphony_mcp.models.reask import UnusableAnswerError

Verdict = Literal["DONE", "FAIL", "INFEASIBLE"]
VERDICTS: tuple[Verdict, ...] = ("DONE", "FAIL", "INFEASIBLE")
_LANGUAGE_TAGS = {"python": "python", "python3": "python", "py": "python", "bash": "bash", "sh": "bash"}
_FENCE = re.compile(r"```[ \t]*([A-Za-z0-9_+-]*)[ \t]*\n(.*?)```", re.DOTALL)
# A verdict stands on a line of its own, possibly emphasised (**DONE**) or followed by a reason (FAIL: ...).
_VERDICT = re.compile(r"^[ \t*_#>`-]*(DONE|FAIL|INFEASIBLE)\b.*$", re.MULTILINE)


@dataclass(frozen=True)
class CoderAnswer:
    """One usable answer: a block to run (language, code) or a verdict, with the thought before it."""

    thought: str
    language: Literal["python", "bash"] | None = None
    code: str | None = None
    verdict: Verdict | None = None


def parse_answer(text: str, final: bool, languages: tuple[str, ...] = ("python", "bash")) -> CoderAnswer:
    """The answer's one block or verdict; UnusableAnswerError says what was wrong and what is allowed."""
    blocks = _FENCE.findall(text)
    verdicts = {match.group(1) for match in _VERDICT.finditer(_FENCE.sub("", text))}
    allowed = " or ".join(languages) or "no language"
    if final:
        if blocks and not verdicts:
            raise UnusableAnswerError("this is the last turn: no more code runs; answer DONE, FAIL or INFEASIBLE")
        blocks = []
    if blocks and verdicts:
        raise UnusableAnswerError("give either one code block or a verdict (DONE, FAIL, INFEASIBLE), not both")
    if len(verdicts) > 1:
        raise UnusableAnswerError(f"give one verdict, not {', '.join(sorted(verdicts))}")
    if verdicts:
        verdict = verdicts.pop()
        thought = text[: text.find(verdict)].strip()
        return CoderAnswer(thought=thought, verdict=verdict)  # type: ignore[arg-type]
    if not blocks:
        raise UnusableAnswerError(
            f"no code block and no verdict: write one fenced ```{allowed} block, or DONE / FAIL / INFEASIBLE"
        )
    if len(blocks) > 1:
        raise UnusableAnswerError(f"the answer has {len(blocks)} code blocks: write exactly one per turn")
    tag, code = blocks[0]
    language = _LANGUAGE_TAGS.get(tag.lower())
    if language is None:
        named = f"'{tag}'" if tag else "no language"
        raise UnusableAnswerError(
            f"the code block names {named}: start it with ```{allowed.replace(' or ', ' or ```')}"
        )
    if language not in languages:
        raise UnusableAnswerError(f"{language} is not enabled here; write {allowed}")
    if not code.strip():
        raise UnusableAnswerError("the code block is empty")
    return CoderAnswer(thought=text[: text.find("```")].strip(), language=language, code=code)  # type: ignore[arg-type]
