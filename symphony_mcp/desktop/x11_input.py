"""Pointer and keys on X11 through the XTest extension of python-xlib.

The server's own input path on Linux: no pyautogui, whose dependency python3-xlib 0.15 ships an `Xlib` package of
its own that overwrites python-xlib's (then every connection insists on ~/.Xauthority). Named keys are resolved to
keysyms and then to keycodes of the live keymap; single characters through the same keysyms text is typed with,
with Shift held for a character on the shifted level (pressing "!" sends Shift and the "1" key, as a person would).
"""

from __future__ import annotations

import string
from typing import Any

from symphony_mcp.desktop.types import MouseButton
from symphony_mcp.desktop.x11_display import open_display
from symphony_mcp.desktop.x11_typing import keysym_for
from symphony_mcp.errors import InvalidInputError

# Core protocol buttons; 4-7 are the wheel (up, down, left, right).
_BUTTONS: dict[MouseButton, int] = {"left": 1, "middle": 2, "right": 3}
_WHEEL_UP, _WHEEL_DOWN, _WHEEL_LEFT, _WHEEL_RIGHT = 4, 5, 6, 7

# Key names (the vocabulary of desktop/keys.py) to X keysym names.
_NAMED_KEYSYMS: dict[str, str] = {
    "enter": "Return",
    "tab": "Tab",
    "space": "space",
    "backspace": "BackSpace",
    "esc": "Escape",
    "delete": "Delete",
    "insert": "Insert",
    "home": "Home",
    "end": "End",
    "pageup": "Prior",
    "pagedown": "Next",
    "up": "Up",
    "down": "Down",
    "left": "Left",
    "right": "Right",
    "shift": "Shift_L",
    "shiftleft": "Shift_L",
    "shiftright": "Shift_R",
    "ctrl": "Control_L",
    "ctrlleft": "Control_L",
    "ctrlright": "Control_R",
    "alt": "Alt_L",
    "altleft": "Alt_L",
    "altright": "Alt_R",
    "win": "Super_L",
    "winleft": "Super_L",
    "winright": "Super_R",
    "capslock": "Caps_Lock",
    "numlock": "Num_Lock",
    "scrolllock": "Scroll_Lock",
    "printscreen": "Print",
    "pause": "Pause",
    "menu": "Menu",
    "apps": "Menu",
    "clear": "Clear",
    "help": "Help",
    "select": "Select",
    "execute": "Execute",
    "add": "KP_Add",
    "subtract": "KP_Subtract",
    "multiply": "KP_Multiply",
    "divide": "KP_Divide",
    "decimal": "KP_Decimal",
    "separator": "KP_Separator",
    "volumeup": "XF86AudioRaiseVolume",
    "volumedown": "XF86AudioLowerVolume",
    "volumemute": "XF86AudioMute",
    "playpause": "XF86AudioPlay",
    "stop": "XF86AudioStop",
    "nexttrack": "XF86AudioNext",
    "prevtrack": "XF86AudioPrev",
    "browserback": "XF86Back",
    "browserforward": "XF86Forward",
    "browserrefresh": "XF86Refresh",
    "browserhome": "XF86HomePage",
    "browsersearch": "XF86Search",
    **{f"f{number}": f"F{number}" for number in range(1, 25)},
    **{f"num{digit}": f"KP_{digit}" for digit in range(10)},
}
# Printable ASCII without capitals (desktop/keys.py maps "A" to "a"), plus the whitespace keys.
_CHARACTERS = [c for c in string.printable if c not in string.ascii_uppercase and c not in "\r\x0b\x0c"]
KEY_NAMES = sorted(_NAMED_KEYSYMS) + _CHARACTERS


def keysym_name(key: str) -> str:
    """The X keysym name of a key of this vocabulary (`Return`, `exclam`): how a key is named to xdotool on a
    remote X machine."""
    from Xlib import XK

    if key in _NAMED_KEYSYMS:
        return _NAMED_KEYSYMS[key]
    keysym = keysym_for(key)
    name = next((n[3:] for n, value in vars(XK).items() if n.startswith("XK_") and value == keysym), None)
    if len(key) != 1 or name is None:
        raise InvalidInputError(f"unknown key {key!r}; use a single character or one of: {', '.join(KEY_NAMES)}")
    return name


class X11Input:
    """Owns one Xlib connection; used from the desktop thread only."""

    key_names = KEY_NAMES

    def __init__(self, display_name: str | None = None) -> None:
        from Xlib import XK

        XK.load_keysym_group("xf86")  # the media and browser keys
        self._display = open_display("input", display_name)
        self._root = self._display.screen().root
        self._shift = self._keycode("Shift_L")

    def position(self) -> tuple[int, int]:
        pointer = self._root.query_pointer()
        return int(pointer.root_x), int(pointer.root_y)

    def move_to(self, x: int, y: int) -> None:
        from Xlib import X

        self._fake(X.MotionNotify, x=x, y=y)
        self._display.sync()

    def button(self, button: MouseButton, down: bool) -> None:
        from Xlib import X

        self._fake(X.ButtonPress if down else X.ButtonRelease, _BUTTONS[button])
        self._display.sync()

    def wheel(self, vertical: int, horizontal: int) -> None:
        from Xlib import X

        for button, clicks in (
            (_WHEEL_UP if vertical > 0 else _WHEEL_DOWN, abs(vertical)),
            (_WHEEL_RIGHT if horizontal > 0 else _WHEEL_LEFT, abs(horizontal)),
        ):
            for _ in range(clicks):
                self._fake(X.ButtonPress, button)
                self._fake(X.ButtonRelease, button)
        self._display.sync()

    def key(self, name: str, down: bool) -> None:
        from Xlib import X

        keycode, shifted = self._stroke(name)
        if down:
            if shifted:
                self._fake(X.KeyPress, self._shift)
            self._fake(X.KeyPress, keycode)
        else:
            self._fake(X.KeyRelease, keycode)
            if shifted:
                self._fake(X.KeyRelease, self._shift)
        self._display.sync()

    def close(self) -> None:
        self._display.close()

    def _stroke(self, name: str) -> tuple[int, bool]:
        """The keycode of a key name and whether Shift selects it; named keys never take Shift."""
        if name in _NAMED_KEYSYMS:
            return self._keycode(_NAMED_KEYSYMS[name]), False
        if len(name) != 1:
            raise InvalidInputError(f"unknown key {name!r}; use a single character or one of: {', '.join(KEY_NAMES)}")
        levels = sorted(
            (index, keycode) for keycode, index in self._display.keysym_to_keycodes(keysym_for(name)) if index in (0, 1)
        )
        if not levels:
            raise InvalidInputError(f"the keyboard of this display has no key for {name!r}; type it with type_text")
        index, keycode = levels[0]
        return keycode, index == 1

    def _keycode(self, keysym_name: str) -> int:
        from Xlib import XK

        keycode = int(self._display.keysym_to_keycode(XK.string_to_keysym(keysym_name)))
        if not keycode:
            raise InvalidInputError(f"the keyboard of this display has no {keysym_name} key; nothing was pressed")
        return keycode

    def _fake(self, event_type: int, detail: int = 0, **position: Any) -> None:
        from Xlib.ext import xtest

        xtest.fake_input(self._display, event_type, detail, **position)
