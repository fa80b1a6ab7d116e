"""The local backend: mss for capture, pyautogui for input, Xlib for Unicode text and windows on X11.

pyautogui is imported lazily: importing it without a display raises KeyError('DISPLAY').
"""

from __future__ import annotations

import contextlib
import os
import sys
import time
from collections.abc import Iterator, Sequence
from typing import Any

from PIL import Image

from symphony_mcp.config import InputSettings
from symphony_mcp.desktop.capture import ScreenCapturer
from symphony_mcp.desktop.keys import normalize_keys
from symphony_mcp.desktop.launcher import launch, plan_launch
from symphony_mcp.desktop.types import Launched, MonitorInfo, MouseButton, WindowInfo
from symphony_mcp.errors import DisplayUnavailableError
from symphony_mcp.imaging.geometry import Point, Rect
from symphony_mcp.policy.programs import ProgramAllowList

_IS_X11 = sys.platform.startswith("linux") or "bsd" in sys.platform
_HOVER_SETTLE_SECONDS = 0.05


def _import_pyautogui() -> Any:
    if _IS_X11 and not os.environ.get("DISPLAY"):
        raise DisplayUnavailableError(
            "no display: DISPLAY is not set. Start the server with a virtual display "
            "(`symphony-mcp serve --virtual-display always`) or pass DISPLAY to it"
        )
    try:
        import pyautogui
    except Exception as exc:  # Xlib raises DisplayConnectionError and friends
        raise DisplayUnavailableError(f"cannot connect to the display for input: {exc}") from exc
    # A pointer parked in a corner must not make every later call raise FailSafeException.
    pyautogui.FAILSAFE = False
    # We pace actions ourselves (settle after each action), not with a fixed pause per call.
    pyautogui.PAUSE = 0
    return pyautogui


class LocalDesktop:
    """Drives the screen this process can see. One instance per thread."""

    def __init__(
        self,
        pacing: InputSettings | None = None,
        layout: Sequence[Rect] = (),
        programs: ProgramAllowList | None = None,
    ) -> None:
        self._gui = _import_pyautogui()
        self._capturer = ScreenCapturer(layout)
        pacing = pacing or InputSettings()
        self._type_interval = pacing.type_interval
        self._click_interval = pacing.click_interval
        self._known_keys = list(self._gui.KEYBOARD_KEYS)
        self._programs = programs or ProgramAllowList()
        self._typer: Any = None
        self._window_manager: Any = None

    # --- screen -------------------------------------------------------------------------------
    def monitors(self) -> list[MonitorInfo]:
        return self._capturer.monitors()

    def grab(self, area: Rect) -> Image.Image:
        return self._capturer.grab(area)

    def cursor(self) -> Point:
        x, y = self._gui.position()
        return Point(x=int(x), y=int(y))

    # --- pointer ------------------------------------------------------------------------------
    def move(self, to: Point, duration: float = 0.0) -> None:
        self._gui.moveTo(to.x, to.y, duration=duration)

    def click(self, at: Point, button: MouseButton, count: int, hold_keys: Sequence[str]) -> None:
        with self._held(hold_keys):
            for clicked in range(count):
                if clicked:
                    time.sleep(self._click_interval)
                self._gui.click(at.x, at.y, button=button)

    def drag(self, start: Point, end: Point, button: MouseButton, hold_keys: Sequence[str], duration: float) -> None:
        with self._held(hold_keys):
            self._gui.moveTo(start.x, start.y)
            self._gui.mouseDown(button=button)
            try:
                # Intermediate motion events: many apps ignore a drag that jumps straight to the end.
                steps = max(2, int(duration / 0.02))
                for step in range(1, steps + 1):
                    self._gui.moveTo(
                        round(start.x + (end.x - start.x) * step / steps),
                        round(start.y + (end.y - start.y) * step / steps),
                    )
                    time.sleep(duration / steps)
            finally:
                self._gui.mouseUp(button=button)

    def scroll(self, at: Point, vertical: int, horizontal: int, hold_keys: Sequence[str]) -> None:
        if self.cursor() != at:
            self._gui.moveTo(at.x, at.y)
            # Apps route wheel events by the last motion they processed; wheel clicks sent right
            # after the pointer warps in were seen dropped by Chromium.
            time.sleep(_HOVER_SETTLE_SECONDS)
        with self._held(hold_keys):
            if vertical:
                self._gui.scroll(vertical)
            if horizontal:
                self._gui.hscroll(horizontal)

    # --- keyboard -----------------------------------------------------------------------------
    def normalize_keys(self, keys: Sequence[str]) -> list[str]:
        return normalize_keys(keys, self._known_keys)

    def type_text(self, text: str) -> None:
        if _IS_X11:
            if self._typer is None:
                from symphony_mcp.desktop.x11_typing import X11Typer

                self._typer = X11Typer()
            self._typer.type(text, self._type_interval)
            return
        for is_ascii, run in _ascii_runs(text):
            if is_ascii:
                self._gui.write(run, interval=self._type_interval)
            else:
                self._paste(run)

    def _paste(self, text: str) -> None:
        """Windows/macOS: put the text on the clipboard, paste, and restore the previous clipboard."""
        import pyperclip

        previous = pyperclip.paste()
        pyperclip.copy(text)
        self._gui.hotkey("command" if sys.platform == "darwin" else "ctrl", "v")
        time.sleep(0.05)
        pyperclip.copy(previous)

    def press(self, keys: Sequence[str]) -> None:
        self._gui.hotkey(*keys)

    def hold_and_press(self, hold_keys: Sequence[str], press_keys: Sequence[str]) -> None:
        with self._held(hold_keys):
            for key in press_keys:
                self._gui.press(key)

    def key_down(self, key: str) -> None:
        self._gui.keyDown(key)

    def key_up(self, key: str) -> None:
        self._gui.keyUp(key)

    @contextlib.contextmanager
    def _held(self, keys: Sequence[str]) -> Iterator[None]:
        pressed: list[str] = []
        try:
            for key in keys:
                self._gui.keyDown(key)
                pressed.append(key)
            yield
        finally:
            for key in reversed(pressed):
                self._gui.keyUp(key)

    # --- windows and apps ---------------------------------------------------------------------
    def _windows(self) -> Any:
        if not _IS_X11:
            raise DisplayUnavailableError(
                f"window listing and focusing are implemented for X11 only, not {sys.platform}; "
                "screenshots, pointer and keyboard tools work on every platform"
            )
        if self._window_manager is None:
            from symphony_mcp.desktop.x11_windows import X11WindowManager

            self._window_manager = X11WindowManager()
        return self._window_manager

    def windows(self) -> list[WindowInfo]:
        return list(self._windows().list_windows())

    def active_window(self) -> WindowInfo | None:
        if not _IS_X11:
            return None
        try:
            return self._windows().active()
        except DisplayUnavailableError:
            return None  # no EWMH window manager: there is no notion of an active window

    def activate_window(self, window_id: str) -> WindowInfo:
        info: WindowInfo = self._windows().activate(window_id)
        return info

    def close_window(self, window_id: str) -> bool:
        closed: bool = self._windows().request_close(window_id)
        return closed

    def open(self, target: str) -> Launched:
        plan = plan_launch(target)
        self._programs.check(plan.programs, plan.file, plan.opened_with)
        return Launched(pid=launch(plan, dict(os.environ)), command=plan.argv, opened_with=plan.opened_with)

    def close(self) -> None:
        self._capturer.close()
        for resource in (self._typer, self._window_manager):
            if resource is not None:
                resource.close()


def _ascii_runs(text: str) -> Iterator[tuple[bool, str]]:
    """Split text into maximal runs of printable ASCII (plus newline/tab) and of everything else."""
    if not text:
        return

    def is_plain(char: str) -> bool:
        return 0x20 <= ord(char) <= 0x7E or char in "\n\t"

    start = 0
    for index in range(1, len(text) + 1):
        if index == len(text) or is_plain(text[index]) != is_plain(text[start]):
            yield is_plain(text[start]), text[start:index]
            start = index
