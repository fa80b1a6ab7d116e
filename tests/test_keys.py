"""Key names and aliases (desktop/keys.py) and the keysyms text is typed with (desktop/x11_typing.py)."""

from __future__ import annotations

import pytest

from symphony_mcp.desktop.keys import normalize_key, normalize_keys
from symphony_mcp.desktop.x11_typing import keysym_for
from symphony_mcp.errors import InvalidInputError

KNOWN = ["a", "b", "1", "enter", "ctrl", "shift", "alt", "win", "command", "pageup", "esc", "delete", "f5"]


def test_key_names_and_aliases() -> None:
    assert normalize_keys(["Control", "Return", "PgUp", "Escape", "A"], KNOWN) == [
        "ctrl",
        "enter",
        "pageup",
        "esc",
        "a",
    ]
    assert normalize_key("super", KNOWN) in ("win", "command")
    with pytest.raises(InvalidInputError, match=r"unknown key .hyper.*enter"):
        normalize_key("hyper", KNOWN)
    with pytest.raises(InvalidInputError, match="at least one key"):
        normalize_keys([], KNOWN)


def test_keysyms_for_text() -> None:
    assert keysym_for("a") == ord("a")
    assert keysym_for("é") == 0xE9
    assert keysym_for("→") == 0x01002192
    assert keysym_for("\n") == 0xFF0D
