"""Real applications of other toolkits for the tests, each reporting its own state (what it saw, where its widgets
are) to a JSON file: a GTK 3 window run under Debian's Python, a Qt 6 window run under the venv's PySide6."""

from __future__ import annotations

import contextlib
import json
import subprocess
import sys
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

APPS = Path(__file__).parent / "apps"
SYSTEM_PYTHON = "/usr/bin/python3"


class ProbeApp:
    def __init__(self, state_file: Path, process: subprocess.Popen[bytes]) -> None:
        self.state_file = state_file
        self.process = process

    def state(self) -> dict[str, Any]:
        try:
            return json.loads(self.state_file.read_text(encoding="utf-8"))
        except (FileNotFoundError, json.JSONDecodeError):
            return {}

    def wait(self, predicate: Callable[[dict[str, Any]], Any], timeout: float = 20.0) -> dict[str, Any]:
        """The state once `predicate` holds for it; AssertionError with the last state after `timeout` s."""
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            state = self.state()
            if state and predicate(state):
                return state
            time.sleep(0.05)
        raise AssertionError(f"condition not met within {timeout} s; state: {self.state()}")


@contextlib.contextmanager
def gtk_probe(directory: Path, title: str, env: dict[str, str] | None = None) -> Iterator[ProbeApp]:
    """testkit/apps/gtk_probe.py, shown (its widgets have a size)."""
    with _probe([SYSTEM_PYTHON, "-I", str(APPS / "gtk_probe.py")], directory / "gtk_state.json", title, env) as app:
        yield app


@contextlib.contextmanager
def qt_probe(directory: Path, title: str, env: dict[str, str] | None = None) -> Iterator[ProbeApp]:
    """testkit/apps/qt_probe.py, shown (its widgets have a size). Qt joins the accessibility bus only with the
    server's app environment (QT_LINUX_ACCESSIBILITY_ALWAYS_ON=1) in `env`."""
    with _probe([sys.executable, str(APPS / "qt_probe.py")], directory / "qt_state.json", title, env) as app:
        yield app


@contextlib.contextmanager
def _probe(command: list[str], state_file: Path, title: str, env: dict[str, str] | None) -> Iterator[ProbeApp]:
    process = subprocess.Popen([*command, str(state_file), title], env=env)
    app = ProbeApp(state_file, process)
    try:
        app.wait(lambda s: s.get("mapped") and s["widgets"].get("Save file", {}).get("width", 0) > 1)
        yield app
    finally:
        process.terminate()
        process.wait(timeout=5)
