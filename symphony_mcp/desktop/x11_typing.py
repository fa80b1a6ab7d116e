"""Type any text exactly on X11 with XTest.

pyautogui loses non-ASCII characters and even mistypes some ASCII ('<' comes out as '>' on a
keymap with the 102nd key), and `xdotool type` is lossy too. Here every character is resolved
against the live keymap: characters the keyboard has are typed with their own keycode (with
Shift for the shifted level), so held modifiers still apply; the others get a spare keycode
bound to their keysym. All bindings of a chunk are made before any key is sent and stay fixed
while it is typed, so clients that refresh their keymap late still read the right character.
Works in terminals too, unlike clipboard paste.
"""

from __future__ import annotations

import time
from dataclasses import dataclass

from symphony_mcp.errors import DisplayUnavailableError

_MAPPING_SETTLE_SECONDS = 0.03
_SPECIAL_KEYSYMS = {"\n": 0xFF0D, "\t": 0xFF09}  # Return, Tab
_SHIFT_L = 0xFFE1


def keysym_for(char: str) -> int:
    """X keysym of a character: Latin-1 maps directly, the rest through the Unicode keysym range."""
    if char in _SPECIAL_KEYSYMS:
        return _SPECIAL_KEYSYMS[char]
    code = ord(char)
    if 0x20 <= code <= 0x7E or 0xA0 <= code <= 0xFF:
        return code
    return 0x01000000 + code


@dataclass(frozen=True)
class _Stroke:
    keycode: int
    shift: bool


class X11Typer:
    """Owns one Xlib connection; used from the desktop thread only."""

    def __init__(self, display_name: str | None = None) -> None:
        from Xlib import display as xdisplay
        from Xlib.error import DisplayError

        try:
            self._display = xdisplay.Display(display_name)
        except DisplayError as exc:
            raise DisplayUnavailableError(f"cannot open X display for typing: {exc}") from exc
        self._spare_keycodes = self._find_spare_keycodes()
        self._shift_keycode = self._display.keysym_to_keycode(_SHIFT_L)

    def _find_spare_keycodes(self) -> list[int]:
        info = self._display.display.info
        first, count = info.min_keycode, info.max_keycode - info.min_keycode + 1
        mapping = self._display.get_keyboard_mapping(first, count)
        return [first + offset for offset, keysyms in enumerate(mapping) if not any(keysyms)]

    def _native_stroke(self, char: str) -> _Stroke | None:
        levels = sorted(
            (index, keycode)
            for keycode, index in self._display.keysym_to_keycodes(keysym_for(char))
            if index in (0, 1) and keycode not in self._spare_keycodes
        )
        if not levels:
            return None
        index, keycode = levels[0]
        return _Stroke(keycode=keycode, shift=index == 1)

    def type(self, text: str, interval: float = 0.0) -> None:
        native = {char: self._native_stroke(char) for char in set(text)}
        if any(stroke is None for stroke in native.values()) and not self._spare_keycodes:
            raise DisplayUnavailableError("the X keymap has no unused keycode to type non-keyboard characters with")
        bindings = _SpareBindings(self)
        try:
            for char in text:
                stroke = native[char] or _Stroke(keycode=bindings.keycode_for(char), shift=False)
                self._send(stroke)
                if interval:
                    time.sleep(interval)
        finally:
            bindings.release()

    def _send(self, stroke: _Stroke) -> None:
        from Xlib import X
        from Xlib.ext import xtest

        if stroke.shift:
            xtest.fake_input(self._display, X.KeyPress, self._shift_keycode)
        xtest.fake_input(self._display, X.KeyPress, stroke.keycode)
        xtest.fake_input(self._display, X.KeyRelease, stroke.keycode)
        if stroke.shift:
            xtest.fake_input(self._display, X.KeyRelease, self._shift_keycode)
        self._display.sync()

    def _bind(self, keycode: int, char: str | None) -> None:
        sym = 0 if char is None else keysym_for(char)
        self._display.change_keyboard_mapping(keycode, [(sym, sym)])
        self._display.sync()

    def close(self) -> None:
        self._display.close()


class _SpareBindings:
    """Spare keycodes bound to characters, reused least-recently-used first.

    Clients translate a key event with the keymap they fetch when they process it, which may be
    after we have moved on. So a keycode is only rebound once it has been unused for a quiet
    period, and a fresh binding gets a moment to reach clients before its first key is sent.
    """

    QUIET_SECONDS = 0.15

    def __init__(self, typer: X11Typer) -> None:
        self._typer = typer
        self._char_of: dict[int, str] = {}
        self._last_used: dict[int, float] = dict.fromkeys(typer._spare_keycodes, 0.0)

    def keycode_for(self, char: str) -> int:
        keycode = next((k for k, c in self._char_of.items() if c == char), None)
        if keycode is None:
            keycode = min(self._last_used, key=self._last_used.__getitem__)
            idle = time.monotonic() - self._last_used[keycode]
            if keycode in self._char_of and idle < self.QUIET_SECONDS:
                time.sleep(self.QUIET_SECONDS - idle)
            self._typer._bind(keycode, char)
            self._char_of[keycode] = char
            time.sleep(_MAPPING_SETTLE_SECONDS)
        self._last_used[keycode] = time.monotonic()
        return keycode

    def release(self) -> None:
        if not self._char_of:
            return
        time.sleep(self.QUIET_SECONDS)
        for keycode in self._char_of:
            self._typer._bind(keycode, None)
