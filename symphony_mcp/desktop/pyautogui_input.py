"""Pointer and keys on Windows and macOS through pyautogui (X11 uses x11_input.py).

pyautogui is imported lazily, when the desktop opens.
"""

from __future__ import annotations

from typing import Any

from symphony_mcp.desktop.types import MouseButton
from symphony_mcp.errors import DisplayUnavailableError


class PyAutoGuiInput:
    def __init__(self) -> None:
        try:
            import pyautogui
        except Exception as exc:
            raise DisplayUnavailableError(f"cannot use the screen for input: {exc}") from exc
        # A pointer parked in a corner must not make every later call raise FailSafeException.
        pyautogui.FAILSAFE = False
        # We pace actions ourselves (settle after each action), not with a fixed pause per call.
        pyautogui.PAUSE = 0
        self._gui: Any = pyautogui
        self.key_names: list[str] = list(pyautogui.KEYBOARD_KEYS)

    def position(self) -> tuple[int, int]:
        x, y = self._gui.position()
        return int(x), int(y)

    def move_to(self, x: int, y: int) -> None:
        self._gui.moveTo(x, y)

    def button(self, button: MouseButton, down: bool) -> None:
        (self._gui.mouseDown if down else self._gui.mouseUp)(button=button)

    def wheel(self, vertical: int, horizontal: int) -> None:
        if vertical:
            self._gui.scroll(vertical)
        if horizontal:
            self._gui.hscroll(horizontal)

    def key(self, name: str, down: bool) -> None:
        (self._gui.keyDown if down else self._gui.keyUp)(name)

    def close(self) -> None:
        return None
