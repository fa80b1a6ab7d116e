"""What the X server holds down: keys (query_keymap) and pointer buttons (query_pointer's mask)."""

from __future__ import annotations

from dataclasses import dataclass

from Xlib import X, display

BUTTON_MASKS = {
    X.Button1Mask: 1,
    X.Button2Mask: 2,
    X.Button3Mask: 3,
    X.Button4Mask: 4,
    X.Button5Mask: 5,
}


@dataclass(frozen=True)
class Held:
    keycodes: frozenset[int]
    buttons: frozenset[int]

    def describe(self, connection: display.Display) -> str:
        names = []
        for code in sorted(self.keycodes):
            keysym = connection.keycode_to_keysym(code, 0)
            names.append(f"{code}:{connection.lookup_string(keysym) or hex(keysym)}")
        return f"keys [{', '.join(names)}], buttons {sorted(self.buttons)}"


class DesktopState:
    """A client connection of the fuzzer's own to the server's display."""

    def __init__(self, name: str) -> None:
        self.connection = display.Display(name)

    def held(self) -> Held:
        keymap = self.connection.query_keymap()
        codes = frozenset(byte * 8 + bit for byte, bits in enumerate(keymap) for bit in range(8) if bits >> bit & 1)
        mask = self.connection.screen().root.query_pointer().mask
        return Held(codes, frozenset(button for bit, button in BUTTON_MASKS.items() if mask & bit))

    def describe(self, held: Held) -> str:
        return held.describe(self.connection)

    def close(self) -> None:
        self.connection.close()
