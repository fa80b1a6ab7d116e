"""The pointer and keyboard primitives a backend provides; LocalDesktop builds clicks, drags and chords from them."""

from __future__ import annotations

from typing import Protocol

from symphony_mcp.desktop.types import MouseButton


class InputDevice(Protocol):
    """Synthetic pointer and key events on the local screen. Used from one thread."""

    key_names: list[str]  # every key name `key` accepts (single characters and named keys)

    def position(self) -> tuple[int, int]: ...
    def move_to(self, x: int, y: int) -> None: ...
    def button(self, button: MouseButton, down: bool) -> None: ...
    def wheel(self, vertical: int, horizontal: int) -> None:
        """Wheel clicks at the pointer: vertical > 0 scrolls up, horizontal > 0 scrolls right."""
        ...

    def key(self, name: str, down: bool) -> None: ...
    def close(self) -> None: ...
