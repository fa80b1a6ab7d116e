"""Toolkit windows for the screen set: apps (apps/*.py) that report where their text is drawn, and X helpers.

Each app prints one JSON line once drawn: its window title, the text of its status line, and every line of
text it shows with the x edge of each character in screen pixels, from the toolkit's own geometry. Each
`edit TEXT` line it reads from stdin replaces the status line's text and prints the JSON again, plus the
status line's box. Any other line (or end of input) closes it.
"""

from __future__ import annotations

import contextlib
import json
import os
import select
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from benchmarks.ocr_grounding.truth import Reading, Source, rect, rotate_words, segment_from_line
from symphony_mcp.imaging.geometry import Rect

APPS = Path(__file__).with_name("apps")


class ReportingApp:
    """One app process speaking the protocol above; its window is placed at `geometry` (X geometry string)."""

    def __init__(self, command: list[str], display: str, env: dict[str, str] | None = None) -> None:
        self.process = subprocess.Popen(
            command,
            env={**os.environ, "DISPLAY": display, **(env or {})},
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            text=True,
        )
        try:
            self.report = self._receive()
        except BaseException:
            self.close()
            raise
        self.status = self.report["status"]

    def _receive(self, timeout: float = 30.0) -> dict[str, Any]:
        assert self.process.stdout is not None
        ready, _, _ = select.select([self.process.stdout], [], [], timeout)
        line = self.process.stdout.readline() if ready else ""
        if not line:
            raise RuntimeError(
                f"{self.process.args!r} did not report within {timeout:g} s (exit {self.process.poll()})"
            )
        return json.loads(line)

    def read(self) -> Reading:
        segments = tuple(segment_from_line(line) for line in self.report["lines"])
        return Reading(segments, elsewhere=(self.report["title"],))

    def edit(self, step: int) -> Rect:
        assert self.process.stdin is not None
        self.process.stdin.write(f"edit {rotate_words(self.status, step)}\n")
        self.process.stdin.flush()
        self.report = self._receive()
        return rect(self.report["edited"])

    def close(self) -> None:
        stop(self.process)


def app_window(display: str, script: str, *args: str, env: dict[str, str] | None = None) -> ReportingApp:
    return ReportingApp([sys.executable, str(APPS / script), *args], display, env)


def tk_form(display: str, width: int, height: int) -> Iterator[tuple[str, Source]]:
    """A Tk order form in classic Tk widgets (apps/tk_form.py)."""
    geometry = f"{width - 120}x{height - 110}+40+30"
    with contextlib.closing(app_window(display, "tk_form.py", geometry)) as form:
        yield "tk-form", form


# (screen name suffix, theme, variant: font and labels)
TTK_THEMES = (
    ("clam", "clam", 0),
    ("alt", "alt", 1),
    ("default", "default", 2),
    ("classic", "classic", 4),
    ("alt-5", "alt", 5),
)


def ttk_dialogs(display: str, width: int, height: int) -> Iterator[tuple[str, Source]]:
    """Dialogs and forms in ttk widgets, one screen per built-in theme (apps/ttk_dialogs.py)."""
    for name, theme, variant in TTK_THEMES:
        geometry = f"{width - 80}x{height - 60}+20+10"
        with contextlib.closing(app_window(display, "ttk_dialogs.py", geometry, theme, str(variant))) as app:
            yield f"ttk-{name}", app


QT_STYLES = (  # name, style, variant
    ("fusion", "Fusion", 0),
    ("windows", "Windows", 1),
    ("fusion-serif", "Fusion", 2),
    ("windows-3", "Windows", 3),
)


def qt_dialogs(display: str, width: int, height: int) -> Iterator[tuple[str, Source]]:
    """Dialogs and forms in Qt widgets on the X server itself (xcb), one screen per built-in style."""
    for name, style, variant in QT_STYLES:
        geometry = f"{width - 80}x{height - 60}+20+10"
        env = {"QT_QPA_PLATFORM": "xcb", "QT_SCALE_FACTOR": "1", "QT_ENABLE_HIGHDPI_SCALING": "0"}
        with contextlib.closing(app_window(display, "qt_dialogs.py", geometry, style, str(variant), env=env)) as app:
            yield f"qt-{name}", app


def stop(process: subprocess.Popen[Any]) -> None:
    with contextlib.suppress(OSError):
        if process.stdin:
            process.stdin.close()
    try:
        process.wait(timeout=5)
    except subprocess.TimeoutExpired:
        process.terminate()
        process.wait(timeout=5)


def client_window(display: str, title: str, timeout: float = 10.0) -> tuple[int, int, int, int]:
    """Screen position and size of the top-level window called `title`, once the window manager framed it."""
    from Xlib import display as xdisplay

    conn = xdisplay.Display(display)
    try:
        root = conn.screen().root
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            for frame in root.query_tree().children:
                for window in frame.query_tree().children:
                    if window.get_wm_name() == title:
                        origin, geometry = root.translate_coords(window, 0, 0), window.get_geometry()
                        return origin.x, origin.y, geometry.width, geometry.height
            time.sleep(0.05)
    finally:
        conn.close()
    raise RuntimeError(f"no framed window called {title!r} within {timeout:g} s")


def park_pointer(display: str, x: int, y: int) -> None:
    """Keep the pointer off the text: hover styles and tooltips would change what is drawn."""
    from Xlib import display as xdisplay

    conn = xdisplay.Display(display)
    try:
        conn.screen().root.warp_pointer(x, y)
        conn.sync()
    finally:
        conn.close()
