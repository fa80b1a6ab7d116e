"""Reading one function call a model wrote as text (`click(description="Save")`): parsed with `ast`,
arguments as literals only, never evaluated. The planner and the searcher both answer this way.
"""

from __future__ import annotations

import ast
import re
from collections.abc import Sequence
from typing import Any

_CODE_BLOCK = re.compile(r"```(?:python|py)?\s*\n(.*?)```", re.DOTALL)


class CallError(ValueError):
    """The answer's call cannot be used; the message is feedback for the model."""


def last_code_block(answer: str) -> str:
    """The code of the answer's action: its last fenced block (the answer's final section)."""
    blocks = _CODE_BLOCK.findall(answer)
    if not blocks:
        raise CallError("no action found: end the answer with the action in a ```python code block")
    return str(blocks[-1]).strip()


def single_call(code: str) -> ast.Call:
    try:
        tree = ast.parse(code, mode="eval")
    except SyntaxError as exc:
        raise CallError(f"the action is not a valid Python call ({exc.msg}); write exactly one call") from exc
    if not isinstance(tree.body, ast.Call):
        raise CallError('the action must be exactly one function call, e.g. click(description="the OK button")')
    return tree.body


def call_name(call: ast.Call) -> str:
    if isinstance(call.func, ast.Name):
        return call.func.id
    if isinstance(call.func, ast.Attribute) and isinstance(call.func.value, ast.Name):  # agent.click(...)
        return call.func.attr
    raise CallError("call the action by its name, e.g. click(...)")


def literal(node: ast.expr, where: str) -> Any:
    try:
        return ast.literal_eval(node)
    except (ValueError, SyntaxError, TypeError, MemoryError, RecursionError) as exc:
        raise CallError(f"{where} must be a literal value (string, number, list, True/False/None)") from exc


def bind_arguments(call: ast.Call, function: str, parameters: Sequence[str]) -> dict[str, Any]:
    """Positional and keyword arguments as one dict by parameter name, each a literal."""
    if any(isinstance(a, ast.Starred) for a in call.args) or any(k.arg is None for k in call.keywords):
        raise CallError("write arguments out; *args and **kwargs are not allowed")
    if len(call.args) > len(parameters):
        listed = ", ".join(parameters) or "none"
        raise CallError(f"{function}() takes at most {len(parameters)} arguments ({listed})")
    arguments = {parameters[i]: literal(node, f"argument {i + 1}") for i, node in enumerate(call.args)}
    for keyword in call.keywords:
        assert keyword.arg is not None
        if keyword.arg in arguments:
            raise CallError(f"{keyword.arg} is given twice")
        if keyword.arg not in parameters:
            listed = ", ".join(parameters) or "none"
            raise CallError(f"{function}() has no parameter {keyword.arg!r}; its parameters: {listed}")
        arguments[keyword.arg] = literal(keyword.value, keyword.arg)
    return arguments
