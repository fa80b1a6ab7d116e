"""A remote machine as the machine OSWorld's setup steps act on (setup.SetupMachine): its own OSWorld controller.

What OSWorld's `SetupController` posts, sent by symphony-mcp's controller client (desktop/remote/osworld_controller.py):
one lock per machine (parallel calls wedge the controller), a command never sent twice (a retried `/execute` runs
it again; `/run_bash_script` is never used: it runs, then answers 500), the exit status read, not the HTTP status.
`launch` is `/setup/launch`, `open` is `/setup/open_file` with its wait for the window bounded by the runner's
`open_timeout` (not upstream's 1800 s), the window steps `/setup/activate_window` and `/setup/close_window`, a window's
presence `wmctrl -l` through `/execute`, files `/file` and `/setup/upload`; Chrome's tab steps go to the machine's
DevTools port (remote_chrome.py). A download missing from the copy of OSWorld's cache is fetched on this host when the
network is allowed, as OSWorld's harness does.
"""

from __future__ import annotations

import logging

from symphony_mcp.bench.osworld.commands import Command, CommandResult
from symphony_mcp.bench.osworld.setup import REMOTE_STEPS, WindowAction
from symphony_mcp.desktop.remote.osworld_controller import OsworldController
from symphony_mcp.errors import SymphonyError, clip

log = logging.getLogger(__name__)


class ControllerMachine:
    """One machine with OSWorld's controller at its URL."""

    steps = REMOTE_STEPS

    def __init__(self, controller: OsworldController, *, password: str, network: bool, devtools: str) -> None:
        self.controller = controller
        self.name = controller.url
        self.password = password
        self.network = network  # files not in the copy of OSWorld's cache may be fetched on this host
        self.devtools: str | None = devtools  # the machine's Chrome DevTools endpoint, http://host:port
        self._screen: tuple[int, int] | None = None

    @property
    def screen_size(self) -> tuple[int, int]:
        """The machine's screen, asked once (the {SCREEN_WIDTH} placeholders, OSWorld's getters)."""
        if self._screen is None:
            self._screen = self.controller.screen_size()
        return self._screen

    def execute(self, command: Command, shell: bool) -> CommandResult:
        try:
            done = self.controller.execute(command, shell=shell)
        except SymphonyError as exc:
            log.warning("setup on %s: %r did not run: %s", self.name, command, exc)
            return CommandResult(False, error=str(exc))
        return CommandResult(True, done.output, done.error, done.returncode)

    def launch(self, command: Command, shell: bool) -> None:
        try:
            self.controller.launch(command, shell)
        except SymphonyError as exc:
            log.warning("setup on %s: launching %r failed: %s", self.name, command, exc)

    def open(self, path: str, timeout: float) -> None:
        self.controller.open_file(path, timeout)

    def window(self, action: WindowAction, name: str, strict: bool, by_class: bool) -> None:
        try:
            self.controller.window_step(action, name, strict, by_class)
        except SymphonyError as exc:
            log.warning("setup on %s: %s window %r: %s", self.name, action, name, clip(str(exc)))

    def window_exists(self, name: str) -> bool:
        listing = self.execute(["wmctrl", "-l"], False)
        return listing.ok and name.lower() in listing.output.lower()

    def read_file(self, path: str) -> bytes | None:
        try:
            return self.controller.download(path)
        except SymphonyError:
            return None

    def put_file(self, path: str, data: bytes) -> None:
        self.controller.upload(path, data)
