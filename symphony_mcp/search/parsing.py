"""Reading one searcher answer: a thought, then exactly one action in a ```python block.

The answer is data: the call is read with `ast` (literals only, never evaluated), and each argument is
checked here; whether an element exists or a URL may be opened is checked against the page and the policy
by the loop, and every refusal goes back to the model as feedback.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Any, Literal

from symphony_mcp.limits import MAX_DESCRIPTION, MAX_NOTE, MAX_TUTORIAL, MAX_TYPED_TEXT, MAX_URL
from symphony_mcp.models.calls import action_block, bind_arguments, call_name, single_call
from symphony_mcp.models.reask import UnusableAnswerError

ActionName = Literal["click", "type", "scroll", "go_back", "open_url", "save_note", "done", "fail"]
PARAMETERS: dict[str, tuple[str, ...]] = {
    "click": ("element",),
    "type": ("element", "text", "enter"),
    "scroll": ("direction", "amount"),
    "go_back": (),
    "open_url": ("url",),
    "save_note": ("text", "element"),
    "done": ("tutorial",),
    "fail": ("hint",),
}
REQUIRED: dict[str, tuple[str, ...]] = {
    "click": ("element",),
    "type": ("element", "text"),
    "open_url": ("url",),
    "save_note": ("text",),
    "done": ("tutorial",),
}
VERDICTS = ("done", "fail")
MAX_SCROLL_AMOUNT = 20
MAX_SEARCH_TEXT = 1_000  # what one type() may enter in a page (a query, a form field)
_NUMBERED_STEP = re.compile(r"^\s*\d{1,3}[.)]\s+\S", re.MULTILINE)
Element = int | str  # an id from the page's list, or a description of the element


@dataclass(frozen=True)
class SearchAction:
    """One checked action; only the fields its name uses are set."""

    name: ActionName
    code: str
    thought: str
    element: Element | None = None
    text: str | None = None
    enter: bool = False
    direction: Literal["up", "down"] = "down"
    amount: int = 5
    url: str | None = None


def parse_action(answer: str, final: bool) -> SearchAction:
    """The answer's one action; UnusableAnswerError says what was wrong and what is allowed."""
    block = action_block(answer)
    code = block.code
    call = single_call(code)
    name = call_name(call)
    if name not in PARAMETERS:
        raise UnusableAnswerError(f"there is no action {name!r}; the actions are: {', '.join(PARAMETERS)}")
    if final and name not in VERDICTS:
        raise UnusableAnswerError(
            f"this is the last step: only done(tutorial=...) or fail(hint=...) are allowed, not {name}()"
        )
    arguments = bind_arguments(call, name, PARAMETERS[name])
    missing = [p for p in REQUIRED.get(name, ()) if arguments.get(p) is None]
    if missing:
        raise UnusableAnswerError(f"{name}() needs {', '.join(missing)}; its parameters: {', '.join(PARAMETERS[name])}")
    return SearchAction(name=name, code=code, thought=block.before, **_checked(name, arguments))  # type: ignore[arg-type]


def _checked(name: str, arguments: dict[str, Any]) -> dict[str, Any]:
    checked: dict[str, Any] = {}
    if "element" in arguments and arguments["element"] is not None:
        checked["element"] = _element(arguments["element"])
    if name == "type":
        checked["text"] = _text(arguments["text"], "text", MAX_SEARCH_TEXT)
        checked["enter"] = _flag(arguments.get("enter", False), "enter")
    elif name == "scroll":
        checked["direction"] = _direction(arguments.get("direction", "down"))
        checked["amount"] = _amount(arguments.get("amount", 5))
    elif name == "open_url":
        checked["url"] = _text(arguments["url"], "url", MAX_URL).strip()
    elif name == "save_note":
        checked["text"] = _text(arguments["text"], "text", MAX_NOTE)
    elif name == "done":
        tutorial = _text(arguments["tutorial"], "tutorial", MAX_TUTORIAL)
        if not _NUMBERED_STEP.search(tutorial):
            raise UnusableAnswerError('write the tutorial as numbered Markdown steps ("1. Open ...", "2. Click ...")')
        checked["text"] = tutorial
    elif name == "fail":
        checked["text"] = _text(arguments.get("hint") or "no hint given", "hint", MAX_NOTE)
    return checked


def _element(value: object) -> Element:
    if isinstance(value, bool) or not isinstance(value, int | str):
        raise UnusableAnswerError(
            "element must be an id number from the element list or a short description (a string)"
        )
    if isinstance(value, int):
        if value < 1:
            raise UnusableAnswerError(f"element ids start at 1, got {value}")
        return value
    text = value.strip()
    if text.isdigit():
        return int(text)
    if not text or len(text) > MAX_DESCRIPTION:
        raise UnusableAnswerError(f"an element description must be 1 to {MAX_DESCRIPTION} characters")
    return text


def _text(value: object, name: str, limit: int) -> str:
    if not isinstance(value, str) or not value.strip():
        raise UnusableAnswerError(f"{name} must be a non-empty string")
    if len(value) > min(limit, MAX_TYPED_TEXT):
        raise UnusableAnswerError(
            f"{name} is {len(value)} characters; at most {min(limit, MAX_TYPED_TEXT)} are allowed"
        )
    return value


def _flag(value: object, name: str) -> bool:
    if not isinstance(value, bool):
        raise UnusableAnswerError(f"{name} must be True or False")
    return value


def _direction(value: object) -> Literal["up", "down"]:
    if value not in ("up", "down"):
        raise UnusableAnswerError(f"direction must be 'up' or 'down', got {value!r}"[:200])
    return value


def _amount(value: object) -> int:
    if isinstance(value, bool) or not isinstance(value, int) or not 1 <= value <= MAX_SCROLL_AMOUNT:
        raise UnusableAnswerError(f"amount must be a whole number from 1 to {MAX_SCROLL_AMOUNT} (units of 100 pixels)")
    return value
