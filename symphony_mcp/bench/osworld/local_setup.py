"""A local environment as the machine OSWorld's setup steps act on (setup.SetupMachine): its sandbox, as the task user.

Commands run with the in-VM server's semantics (commands.py) inside the environment's sandbox as the task user, on
its display; `open` is xdg-open (or an application on PATH), then the window whose title holds the file name waited
for and activated; the window steps use wmctrl's matching (title contains the name, case-insensitively; `strict`:
the whole title; `by_class`: the WM_CLASS) through the environment's window manager; files are read and written as
the task user. Downloads come from the copy of OSWorld's cache only, never the network.
"""

from __future__ import annotations

import logging
import os
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

from symphony_mcp.bench.osworld.commands import Command, CommandResult, execute, launch
from symphony_mcp.bench.osworld.sandbox import Sandbox
from symphony_mcp.bench.osworld.setup import LOCAL_STEPS, POLL_SECONDS, SetupError, WindowAction
from symphony_mcp.desktop.types import WindowInfo
from symphony_mcp.desktop.x11_windows import X11WindowManager
from symphony_mcp.errors import SymphonyError

log = logging.getLogger(__name__)


class SandboxMachine:
    """One environment's sandbox (its task user, its display) as the machine the steps act on."""

    name = "the local environment"
    steps = LOCAL_STEPS
    devtools: str | None = None  # its tasks' tab steps open live sites: not run (LOCAL_STEPS)
    network = False

    def __init__(self, sandbox: Sandbox, screen_size: tuple[int, int]) -> None:
        self.sandbox = sandbox
        self.screen_size = screen_size
        self.password = sandbox.user.password

    def execute(self, command: Command, shell: bool) -> CommandResult:
        result = execute(self.sandbox, command, shell)
        if not result.ok:
            log.warning("setup on %s: %r did not run: %s", self.name, command, result.error)
        return result

    def launch(self, command: Command, shell: bool) -> None:
        launch(self.sandbox, command, shell)

    def open(self, path: str, timeout: float) -> None:
        target = Path(self.sandbox.user.expand(path))
        if execute(self.sandbox, ["test", "-e", str(target)]).returncode == 0:
            launch(self.sandbox, ["xdg-open", str(target)])
            names = (target.name, target.stem)
        else:  # OSWorld opens an application name on PATH too
            found = execute(self.sandbox, ["sh", "-c", 'command -v "$0"', path])
            if not found.ok or found.returncode != 0:
                raise SetupError(f"application or file not found: {path}")
            launch(self.sandbox, [path])
            names = (path, path)
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            window = self._find(lambda w: names[0] in w.title or names[1] in w.title)
            if window is not None:
                self._activate(window)
                return
            time.sleep(POLL_SECONDS)
        raise SetupError(f"no window for {target.name} appeared within {timeout:g} s")

    def window(self, action: WindowAction, name: str, strict: bool, by_class: bool) -> None:
        """A window that does not match is logged, not an error (as OSWorld's controller does)."""
        window = self._find(_matcher(name, strict, by_class))
        if window is None:
            log.warning("setup: no window matches %r; nothing to %s", name, action)
        elif action == "activate":
            self._activate(window)
        else:
            self._windows(lambda manager: manager.request_close(window.id, 2.0))

    def window_exists(self, name: str) -> bool:
        return self._find(_matcher(name, False, False)) is not None

    def read_file(self, path: str) -> bytes | None:
        return self.sandbox.read_file(self.sandbox.user.expand(path))

    def put_file(self, path: str, data: bytes) -> None:
        """`~` and variables expanded, a relative path from the user's home, missing folders made."""
        user = self.sandbox.user
        expanded = os.path.expandvars(user.expand(path))
        self.sandbox.write_file(expanded if os.path.isabs(expanded) else str(user.home / expanded), data)

    def _find(self, match: Callable[[WindowInfo], bool]) -> WindowInfo | None:
        windows: list[WindowInfo] = self._windows(lambda manager: manager.list_windows())
        return next((w for w in windows if match(w)), None)

    def _activate(self, window: WindowInfo) -> None:
        self._windows(lambda manager: manager.activate(window.id))

    def _windows(self, action: Callable[[X11WindowManager], Any]) -> Any:
        manager = X11WindowManager(self.sandbox.display)
        try:
            return action(manager)
        except SymphonyError as exc:
            log.warning("setup: window manager: %s", exc)
            return []
        finally:
            manager.close()


def _matcher(name: str, strict: bool, by_class: bool) -> Callable[[WindowInfo], bool]:
    """wmctrl's matching: the title (or class) contains the name case-insensitively, or equals it (-F)."""

    def match(window: WindowInfo) -> bool:
        text = window.app if by_class else window.title
        return text == name if strict else name.lower() in text.lower()

    return match
