"""The local backend: mss for capture; on X11 XTest (python-xlib) for pointer and keys, Xlib for Unicode text and
windows; pyautogui for pointer and keys on Windows and macOS."""

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
from symphony_mcp.desktop.input_device import InputDevice
from symphony_mcp.desktop.keys import normalize_keys
from symphony_mcp.desktop.launcher import launch, plan_launch
from symphony_mcp.desktop.types import Launched, MachineInfo, MonitorInfo, MouseButton, WindowInfo
from symphony_mcp.errors import DisplayUnavailableError
from symphony_mcp.imaging.downscale import BgrxImage
from symphony_mcp.imaging.geometry import Point, Rect
from symphony_mcp.policy.programs import ProgramAllowList

_IS_X11 = sys.platform.startswith("linux") or "bsd" in sys.platform
_HOVER_SETTLE_SECONDS = 0.05
_MOTION_STEP_SECONDS = 0.02  # one motion event per step of a timed move or drag


def _open_input() -> InputDevice:
    if _IS_X11:
        from symphony_mcp.desktop.x11_input import X11Input

        return X11Input()
    from symphony_mcp.desktop.pyautogui_input import PyAutoGuiInput

    return PyAutoGuiInput()


class LocalDesktop:
    """Drives the screen this process can see. One instance per thread."""

    def __init__(
        self,
        pacing: InputSettings | None = None,
        layout: Sequence[Rect] = (),
        programs: ProgramAllowList | None = None,
    ) -> None:
        self._input = _open_input()
        self._capturer = ScreenCapturer(layout)
        pacing = pacing or InputSettings()
        self._type_interval = pacing.type_interval
        self._click_interval = pacing.click_interval
        self._programs = programs or ProgramAllowList()
        self._typer: Any = None
        self._window_manager: Any = None

    # --- screen -------------------------------------------------------------------------------
    def machine(self) -> MachineInfo:
        return MachineInfo(backend="local", url=None, platform=sys.platform, display=os.environ.get("DISPLAY"))

    def monitors(self) -> list[MonitorInfo]:
        return self._capturer.monitors()

    def grab(self, area: Rect) -> Image.Image:
        return self._capturer.grab(area)

    def grab_scaled(self, area: Rect, size: tuple[int, int]) -> BgrxImage:
        return self._capturer.grab_scaled(area, size)

    def cursor(self) -> Point:
        x, y = self._input.position()
        return Point(x=x, y=y)

    # --- pointer ------------------------------------------------------------------------------
    def move(self, to: Point, duration: float = 0.0) -> None:
        if duration <= 0:
            self._input.move_to(to.x, to.y)
            return
        self._glide(self.cursor(), to, duration)

    def _glide(self, start: Point, end: Point, duration: float) -> None:
        """Intermediate motion events from start to end over `duration`: many apps ignore a pointer that jumps
        (a drag straight to its end is not a drag to them)."""
        steps = max(2, int(duration / _MOTION_STEP_SECONDS))
        for step in range(1, steps + 1):
            self._input.move_to(
                round(start.x + (end.x - start.x) * step / steps),
                round(start.y + (end.y - start.y) * step / steps),
            )
            time.sleep(duration / steps)

    def click(self, at: Point, button: MouseButton, count: int, hold_keys: Sequence[str]) -> None:
        with self._held(hold_keys):
            self._input.move_to(at.x, at.y)
            for clicked in range(count):
                if clicked:
                    time.sleep(self._click_interval)
                self._input.button(button, down=True)
                self._input.button(button, down=False)

    def drag(self, start: Point, end: Point, button: MouseButton, hold_keys: Sequence[str], duration: float) -> None:
        with self._held(hold_keys):
            self._input.move_to(start.x, start.y)
            self._input.button(button, down=True)
            try:
                self._glide(start, end, duration)
            finally:
                self._input.button(button, down=False)

    def scroll(self, at: Point, vertical: int, horizontal: int, hold_keys: Sequence[str]) -> None:
        if self.cursor() != at:
            self._input.move_to(at.x, at.y)
            # Apps route wheel events by the last motion they processed; wheel clicks sent right
            # after the pointer warps in were seen dropped by Chromium.
            time.sleep(_HOVER_SETTLE_SECONDS)
        with self._held(hold_keys):
            self._input.wheel(vertical, horizontal)

    # --- keyboard -----------------------------------------------------------------------------
    def normalize_keys(self, keys: Sequence[str]) -> list[str]:
        return normalize_keys(keys, self._input.key_names)

    def type_text(self, text: str) -> None:
        if _IS_X11:
            if self._typer is None:
                from symphony_mcp.desktop.x11_typing import X11Typer

                self._typer = X11Typer()
            self._typer.type(text, self._type_interval)
            return
        for is_ascii, run in _ascii_runs(text):
            if is_ascii:
                for char in run:
                    self.press([char])
                    time.sleep(self._type_interval)
            else:
                self._paste(run)

    def _paste(self, text: str) -> None:
        """Windows/macOS: put the text on the clipboard, paste, and restore the previous clipboard."""
        import pyperclip

        previous = pyperclip.paste()
        pyperclip.copy(text)
        self.press(["command" if sys.platform == "darwin" else "ctrl", "v"])
        time.sleep(0.05)
        pyperclip.copy(previous)

    def press(self, keys: Sequence[str]) -> None:
        """A chord: every key down in order, then up in reverse."""
        with self._held(keys):
            pass

    def hold_and_press(self, hold_keys: Sequence[str], press_keys: Sequence[str]) -> None:
        with self._held(hold_keys):
            for key in press_keys:
                self.press([key])

    def key_down(self, key: str) -> None:
        self._input.key(key, down=True)

    def key_up(self, key: str) -> None:
        self._input.key(key, down=False)

    @contextlib.contextmanager
    def _held(self, keys: Sequence[str]) -> Iterator[None]:
        pressed: list[str] = []
        try:
            for key in keys:
                self._input.key(key, down=True)
                pressed.append(key)
            yield
        finally:
            for key in reversed(pressed):
                self._input.key(key, down=False)

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
        for resource in (self._input, self._typer, self._window_manager):
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
