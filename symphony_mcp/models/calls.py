"""Reading one function call a model wrote as text (`click(description="Save")`): parsed with `ast`,
arguments as literals only, never evaluated. The planner and the searcher both answer this way.
"""

from __future__ import annotations

import ast
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from markdown_it import MarkdownIt

from symphony_mcp.models.reask import UnusableAnswerError

_MARKDOWN = MarkdownIt("commonmark")
# Fences that can hold the action: Python's, or none. Other languages (a json or bash block in the reasoning) never do.
_ACTION_LANGUAGES = frozenset({"", "python", "python3", "py"})


@dataclass(frozen=True)
class ActionBlock:
    """The answer's action block and the prose around it (its reasoning, when the model gave any)."""

    code: str
    before: str
    after: str


def action_block(answer: str) -> ActionBlock:
    """The answer's last Python (or untagged) fenced block, read as CommonMark reads it: fences pair up whatever
    their language, a block may stand alone or among prose and other blocks, and an unclosed fence (an answer cut
    at its stop sequence) runs to the end."""
    fences = [
        token
        for token in _MARKDOWN.parse(answer)
        if token.type == "fence" and token.map is not None and _language(token.info) in _ACTION_LANGUAGES
    ]
    if not fences:
        raise UnusableAnswerError("no action found: end the answer with the action in a ```python code block")
    last = fences[-1]
    assert last.map is not None
    start, end = last.map
    lines = answer.replace("\r\n", "\n").replace("\r", "\n").split("\n")  # CommonMark's line ends only
    return ActionBlock(
        code=last.content.strip(), before="\n".join(lines[:start]).strip(), after="\n".join(lines[end:]).strip()
    )


def last_code_block(answer: str) -> str:
    """The code of the answer's action: its last Python fenced block (the answer's final section)."""
    return action_block(answer).code


def _language(info: str) -> str:
    return info.strip().split(maxsplit=1)[0].lower() if info.strip() else ""


def single_call(code: str) -> ast.Call:
    try:
        tree = ast.parse(code, mode="eval")
    except SyntaxError as exc:
        raise UnusableAnswerError(f"the action is not a valid Python call ({exc.msg}); write exactly one call") from exc
    if not isinstance(tree.body, ast.Call):
        raise UnusableAnswerError(
            'the action must be exactly one function call, e.g. click(description="the OK button")'
        )
    return tree.body


def call_name(call: ast.Call) -> str:
    if isinstance(call.func, ast.Name):
        return call.func.id
    if isinstance(call.func, ast.Attribute) and isinstance(call.func.value, ast.Name):  # agent.click(...)
        return call.func.attr
    raise UnusableAnswerError("call the action by its name, e.g. click(...)")


def literal(node: ast.expr, where: str) -> Any:
    try:
        return ast.literal_eval(node)
    except (ValueError, SyntaxError, TypeError, MemoryError, RecursionError) as exc:
        raise UnusableAnswerError(f"{where} must be a literal value (string, number, list, True/False/None)") from exc


def bind_arguments(call: ast.Call, function: str, parameters: Sequence[str]) -> dict[str, Any]:
    """Positional and keyword arguments as one dict by parameter name, each a literal."""
    if any(isinstance(a, ast.Starred) for a in call.args) or any(k.arg is None for k in call.keywords):
        raise UnusableAnswerError("write arguments out; *args and **kwargs are not allowed")
    if len(call.args) > len(parameters):
        listed = ", ".join(parameters) or "none"
        raise UnusableAnswerError(f"{function}() takes at most {len(parameters)} arguments ({listed})")
    arguments = {parameters[i]: literal(node, f"argument {i + 1}") for i, node in enumerate(call.args)}
    for keyword in call.keywords:
        assert keyword.arg is not None
        if keyword.arg in arguments:
            raise UnusableAnswerError(f"{keyword.arg} is given twice")
        if keyword.arg not in parameters:
            listed = ", ".join(parameters) or "none"
            raise UnusableAnswerError(f"{function}() has no parameter {keyword.arg!r}; its parameters: {listed}")
        arguments[keyword.arg] = literal(keyword.value, keyword.arg)
    return arguments
