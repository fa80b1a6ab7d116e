"""The Tk probe (tests/apps/tk_probe.py): a real window whose widgets report their state, started and waited for
the way a person would wait for it."""

from __future__ import annotations

import contextlib
import json
import subprocess
import sys
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

from symphony_mcp.desktop.types import WindowInfo
from symphony_mcp.desktop.x11_windows import X11WindowManager
from testkit.paths import APPS
from testkit.waiting import wait_for


class TkProbe:
    """A running tests/apps/tk_probe.py window and its reported state."""

    def __init__(self, state_file: Path, process: subprocess.Popen[bytes]) -> None:
        self.state_file = state_file
        self.process = process

    def state(self) -> dict[str, Any]:
        try:
            return json.loads(self.state_file.read_text(encoding="utf-8"))
        except (FileNotFoundError, json.JSONDecodeError):
            return {}

    def centre(self, widget: str) -> tuple[int, int]:
        box = self.state()["widgets"][widget]
        return box["left"] + box["width"] // 2, box["top"] + box["height"] // 2

    def wait(self, predicate: Callable[[dict[str, Any]], Any], timeout: float = 10.0) -> dict[str, Any]:
        try:
            wait_for(lambda: predicate(self.state()), timeout)
        except AssertionError as exc:
            raise AssertionError(f"{exc}; Tk state: {self.state()}") from None
        return self.state()


@contextlib.contextmanager
def running_probe(directory: Path, geometry: str = "900x700+200+150") -> Iterator[TkProbe]:
    """The Tk probe at `geometry`, ready like a person would wait for it: laid out, framed and made active by the
    window manager, and Tk has seen both (it reports the framed position and has the focus). Under load the window
    was active while Tk still reported its unframed position, so a click at a widget's centre landed 20 px off."""
    state_file = directory / "tk_state.json"
    process = subprocess.Popen([sys.executable, str(APPS / "tk_probe.py"), str(state_file), "Symphony Probe", geometry])
    probe = TkProbe(state_file, process)
    manager = X11WindowManager()
    try:
        probe.wait(lambda s: s.get("widgets", {}).get("swatch", {}).get("width", 0) > 1)
        probe.wait(lambda s: _settled(s, manager.active()))
        yield probe
    finally:
        manager.close()
        process.terminate()
        process.wait(timeout=5)


def _settled(state: dict[str, Any], active: WindowInfo | None) -> bool:
    return (
        active is not None
        and active.title == "Symphony Probe"
        and active.rect is not None
        and state.get("window") == active.rect.model_dump()
        and state.get("focus") not in (None, "None")
    )
