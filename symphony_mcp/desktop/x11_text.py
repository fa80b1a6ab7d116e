"""Type any Unicode text on X11 by binding characters to spare keycodes.

pyautogui and `xdotool type` lose non-ASCII characters. Here each distinct character of a
chunk gets its own unused keycode, bound to the character's keysym, before any key is sent;
the binding stays fixed while the chunk is typed, so clients that refresh their keymap late
still read the right character. Works in terminals too, unlike clipboard paste.
"""

from __future__ import annotations

import time
from collections.abc import Iterator

from symphony_mcp.errors import DisplayUnavailableError

_MAPPING_SETTLE_SECONDS = 0.03


def keysym_for(char: str) -> int:
    """X keysym of a character: Latin-1 maps directly, the rest through the Unicode keysym range."""
    code = ord(char)
    if 0x20 <= code <= 0x7E or 0xA0 <= code <= 0xFF:
        return code
    return 0x01000000 + code


class X11UnicodeTyper:
    """Owns one Xlib connection; used from the desktop thread only."""

    def __init__(self, display_name: str | None = None) -> None:
        from Xlib import display as xdisplay
        from Xlib.error import DisplayError

        try:
            self._display = xdisplay.Display(display_name)
        except DisplayError as exc:
            raise DisplayUnavailableError(f"cannot open X display for typing: {exc}") from exc
        self._spare_keycodes = self._find_spare_keycodes()
        if not self._spare_keycodes:
            raise DisplayUnavailableError("the X keyboard map has no unused keycode to type Unicode text with")

    def _find_spare_keycodes(self) -> list[int]:
        info = self._display.display.info
        first, count = info.min_keycode, info.max_keycode - info.min_keycode + 1
        mapping = self._display.get_keyboard_mapping(first, count)
        return [first + offset for offset, keysyms in enumerate(mapping) if not any(keysyms)]

    def type(self, text: str, interval: float = 0.0) -> None:
        from Xlib import X
        from Xlib.ext import xtest

        for chunk in _chunks_by_distinct(text, len(self._spare_keycodes)):
            assignment = dict(zip(dict.fromkeys(chunk), self._spare_keycodes, strict=False))
            for char, keycode in assignment.items():
                sym = keysym_for(char)
                self._display.change_keyboard_mapping(keycode, [(sym, sym)])
            self._display.sync()
            time.sleep(_MAPPING_SETTLE_SECONDS)
            try:
                for char in chunk:
                    keycode = assignment[char]
                    xtest.fake_input(self._display, X.KeyPress, keycode)
                    xtest.fake_input(self._display, X.KeyRelease, keycode)
                    self._display.sync()
                    if interval:
                        time.sleep(interval)
                time.sleep(_MAPPING_SETTLE_SECONDS)
            finally:
                for keycode in assignment.values():
                    self._display.change_keyboard_mapping(keycode, [(0, 0)])
                self._display.sync()

    def close(self) -> None:
        self._display.close()


def _chunks_by_distinct(text: str, limit: int) -> Iterator[str]:
    """Split text into consecutive chunks with at most `limit` distinct characters each."""
    start, seen = 0, set[str]()
    for index, char in enumerate(text):
        if char not in seen and len(seen) == limit:
            yield text[start:index]
            start, seen = index, set()
        seen.add(char)
    if start < len(text):
        yield text[start:]
