"""The stand-in WAA server as a process of its own, like the VM's: its own HOME (the "VM's" files, with the
Desktop, Documents and Downloads folders WAA's tasks use), a marker in its environment that only commands run by it
see, and `python` on its PATH as WAA's client expects it (this environment's, which has pyautogui)."""

from __future__ import annotations

import contextlib
import os
import subprocess
import sys
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

from testkit.osworld_controller.process import VM_MARKER
from testkit.paths import ROOT
from testkit.ports import free_port, port_open
from testkit.waiting import wait_for


@dataclass(frozen=True)
class RunningWaaServer:
    url: str
    port: int
    home: Path  # the "VM" user's home
    marker: str  # the value of VM_MARKER on the "VM"
    process: subprocess.Popen[bytes]


@contextlib.contextmanager
def running_waa_server(home: Path) -> Iterator[RunningWaaServer]:
    """The server on this process's DISPLAY, on a free loopback port; stopped by its pid afterwards."""
    port = free_port()
    for folder in ("Desktop", "Documents", "Downloads"):
        (home / folder).mkdir(parents=True, exist_ok=True)
    marker = f"waa-{port}"
    env = {
        **os.environ,
        "HOME": str(home),
        VM_MARKER: marker,
        "PATH": f"{Path(sys.executable).parent}:{os.environ.get('PATH', '/usr/bin:/bin')}",
        "PYTHONPATH": str(ROOT),
    }
    process = subprocess.Popen([sys.executable, "-m", "testkit.waa_server", "--port", str(port)], env=env, cwd=home)
    try:
        wait_for(lambda: port_open(port) or process.poll() is not None, timeout=30)
        if process.poll() is not None:
            raise RuntimeError(f"the stand-in WAA server exited with {process.returncode}")
        yield RunningWaaServer(f"http://127.0.0.1:{port}", port, home, marker, process)
    finally:
        process.terminate()
        try:
            process.wait(timeout=5)
        except subprocess.TimeoutExpired:
            process.kill()
            process.wait(timeout=5)
