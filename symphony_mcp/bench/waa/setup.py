"""WAA's task setup (`config`, `postconfig`) through its server's routes, as its SetupController sends them, and its
reset: no snapshot is reverted on a WAA machine; every window is closed, the server is polled until it answers, and
the Downloads folder is emptied (`/setup/close_all`, `/probe`, `/setup/clear_task_files`), as WAA's DesktopEnv does.
A step whose route answers an error fails the setup, saying which step and what the server answered.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from typing import Any

from symphony_mcp.desktop.remote.waa_controller import WaaController
from symphony_mcp.errors import SymphonyError

OPEN_SECONDS = 120  # /setup/open_file on Windows sleeps 5 s after starting the application
PROBE_SECONDS = 60


class WaaSetupError(SymphonyError):
    """A setup step WAA's server refused or failed."""


def _route(route: str, *keys: str) -> Callable[[WaaController, dict[str, Any]], None]:
    """A step sent as is to `/setup/<route>` with the parameters `keys` (those the task gives)."""

    def send(controller: WaaController, parameters: dict[str, Any]) -> None:
        payload = {key: parameters[key] for key in keys if key in parameters}
        controller.setup(route, payload, timeout=OPEN_SECONDS)

    return send


def _download(controller: WaaController, parameters: dict[str, Any]) -> None:
    for entry in parameters.get("files", []):
        controller.setup("download_file", {"url": entry["url"], "path": entry["path"]}, timeout=OPEN_SECONDS)


def _sleep(_: WaaController, parameters: dict[str, Any]) -> None:
    time.sleep(float(parameters.get("seconds", 1)))


SETUP_STEPS: dict[str, Callable[[WaaController, dict[str, Any]], None]] = {
    "launch": _route("launch", "command", "shell"),
    "execute": _route("execute", "command", "shell"),
    "command": _route("execute", "command", "shell"),
    "open": _route("open_file", "path"),
    "activate_window": _route("activate_window", "window_name", "strict", "by_class"),
    "close_window": _route("close_window", "window_name", "strict", "by_class"),
    "close_all": _route("close_all"),
    "create_folder": _route("create_folder", "path"),
    "create_file": _route("create_file", "path", "content"),
    "recycle": _route("recycle", "path"),
    "download": _download,
    "sleep": _sleep,
}


def run_steps(controller: WaaController, steps: list[dict[str, Any]]) -> None:
    for index, step in enumerate(steps, 1):
        try:
            SETUP_STEPS[step["type"]](controller, step.get("parameters") or {})
        except SymphonyError as exc:
            raise WaaSetupError(f"setup step {index} ({step['type']}) failed: {exc}") from exc


def reset_machine(controller: WaaController) -> None:
    """WAA's reset of a machine it cannot revert: close every window, wait for the server, empty Downloads."""
    controller.setup("close_all", {})
    deadline = time.monotonic() + PROBE_SECONDS
    while True:
        try:
            if controller.probe():
                break
        except SymphonyError:
            if time.monotonic() > deadline:
                raise
        time.sleep(1)
    controller.setup("clear_task_files", {})
