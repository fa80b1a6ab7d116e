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

from symphony_mcp.desktop.x11_display import open_display
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
        self._display = open_display("typing", display_name)
        self._spare_keycodes = self._find_spare_keycodes()
        self._shift_keycode = self._display.keysym_to_keycode(_SHIFT_L)
        self._bindings = _SpareBindings(self)

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
        missing = [char for char in dict.fromkeys(text) if native[char] is None]
        if missing and not self._spare_keycodes:
            raise DisplayUnavailableError("the X keymap has no unused keycode to type non-keyboard characters with")
        self._bindings.prepare(missing)
        for char in text:
            stroke = native[char] or _Stroke(keycode=self._bindings.keycode_for(char), shift=False)
            self._send(stroke)
            if interval:
                time.sleep(interval)

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
        self._bindings.release()
        self._display.close()


class _SpareBindings:
    """Spare keycodes bound to characters, kept across calls and reused least-recently-used first.

    Clients translate a key event with the keymap they fetch when they process it, which may be
    after we have moved on. So a keycode is only rebound once it has been unused for a quiet
    period, and fresh bindings get a moment to reach clients before their first key is sent.
    Bindings stay in place between calls (repeated characters cost nothing) until `release`.
    """

    QUIET_SECONDS = 0.15

    def __init__(self, typer: X11Typer) -> None:
        self._typer = typer
        self._char_of: dict[int, str] = {}
        self._last_used: dict[int, float] = dict.fromkeys(typer._spare_keycodes, 0.0)

    def _bound(self, char: str) -> int | None:
        return next((k for k, c in self._char_of.items() if c == char), None)

    def prepare(self, chars: list[str]) -> None:
        """Bind as many of the upcoming characters as free or quiet keycodes allow, with one settle."""
        now = time.monotonic()
        fresh = [c for c in chars if self._bound(c) is None]
        candidates = sorted(self._last_used, key=self._last_used.__getitem__)
        reusable = [k for k in candidates if k not in self._char_of or now - self._last_used[k] >= self.QUIET_SECONDS]
        needed = set(chars)
        reusable = [k for k in reusable if self._char_of.get(k) not in needed]
        for char, keycode in zip(fresh, reusable, strict=False):
            self._assign(keycode, char)
        if fresh and reusable:
            time.sleep(_MAPPING_SETTLE_SECONDS)

    def keycode_for(self, char: str) -> int:
        keycode = self._bound(char)
        if keycode is None:  # more distinct characters than spare keycodes: rebind one on the fly
            keycode = min(self._last_used, key=self._last_used.__getitem__)
            idle = time.monotonic() - self._last_used[keycode]
            if keycode in self._char_of and idle < self.QUIET_SECONDS:
                time.sleep(self.QUIET_SECONDS - idle)
            self._assign(keycode, char)
            time.sleep(_MAPPING_SETTLE_SECONDS)
        self._last_used[keycode] = time.monotonic()
        return keycode

    def _assign(self, keycode: int, char: str) -> None:
        self._typer._bind(keycode, char)
        self._char_of[keycode] = char

    def release(self) -> None:
        if not self._char_of:
            return
        time.sleep(self.QUIET_SECONDS)
        for keycode in self._char_of:
            self._typer._bind(keycode, None)
        self._char_of.clear()
