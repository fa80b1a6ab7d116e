"""The stand-in WAA server as a process of its own, like the VM's (testkit/osworld_controller/process.py), with the
Desktop, Documents and Downloads folders WAA's tasks use in its home."""

from __future__ import annotations

import contextlib
from pathlib import Path

from testkit.osworld_controller.process import RunningController, running_vm_server

RunningWaaServer = RunningController  # the same process handle: url, port, home, marker, process


def running_waa_server(home: Path, display: str | None = None) -> contextlib.AbstractContextManager[RunningWaaServer]:
    """The server on `display` (default: this process's DISPLAY), on a free loopback port."""
    return running_vm_server("testkit.waa_server", [], home, ("Desktop", "Documents", "Downloads"), display)
