"""Key names: one vocabulary for every backend, with the aliases models commonly use."""

from __future__ import annotations

import sys
from collections.abc import Iterable, Sequence

from symphony_mcp.errors import InvalidInputError, clip

_ALIASES = {
    "control": "ctrl",
    "ctl": "ctrl",
    "return": "enter",
    "escape": "esc",
    "del": "delete",
    "pgup": "pageup",
    "page_up": "pageup",
    "pgdn": "pagedown",
    "page_down": "pagedown",
    "ins": "insert",
    "spacebar": "space",
    "bksp": "backspace",
    "back_space": "backspace",
    "option": "alt",
    "opt": "alt",
    "arrowup": "up",
    "arrowdown": "down",
    "arrowleft": "left",
    "arrowright": "right",
    "caps_lock": "capslock",
    "print_screen": "printscreen",
    "prtsc": "printscreen",
}
# The "logo" key has a different name per platform in pyautogui.
_LOGO_NAMES = {"super", "win", "windows", "meta", "cmd", "command", "logo"}


def _logo_key() -> str:
    return "command" if sys.platform == "darwin" else "win"


def normalize_key(name: str, known: Iterable[str]) -> str:
    """Map a user-given key name to the backend's name, or explain what is allowed."""
    if not isinstance(name, str) or not name:
        raise InvalidInputError("key names must be non-empty strings such as 'ctrl', 'enter', 'a', 'f5'")
    lowered = name if len(name) == 1 else name.strip().lower().replace(" ", "").replace("-", "_")
    if lowered in _LOGO_NAMES:
        lowered = _logo_key()
    lowered = _ALIASES.get(lowered, lowered)
    known_set = set(known)
    if lowered in known_set:
        return lowered
    if len(lowered) == 1 and lowered.lower() in known_set:
        return lowered.lower()
    named = sorted(k for k in known_set if len(k) > 1)
    raise InvalidInputError(
        f"unknown key {clip(name)}. Use a single character or one of: {', '.join(named)} "
        f"(aliases: {', '.join(sorted(_ALIASES))}, super/win/cmd)"
    )


def normalize_keys(names: Sequence[str], known: Iterable[str]) -> list[str]:
    known_list = list(known)
    if not names:
        raise InvalidInputError("give at least one key, e.g. ['ctrl', 'c']")
    return [normalize_key(name, known_list) for name in names]
