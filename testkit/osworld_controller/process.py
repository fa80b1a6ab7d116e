"""A stand-in VM's server as a process of its own, like the VM's: its own HOME (the "VM's" files), a marker in its
environment that only commands run by it see, and `python` on its PATH the way the benchmarks' clients expect it
(this environment's, which has pyautogui). The OSWorld controller here; WAA's server (testkit/waa_server/process.py)
starts the same way."""

from __future__ import annotations

import contextlib
import os
import subprocess
import sys
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path

from testkit.osworld_controller.app import Faults
from testkit.paths import ROOT
from testkit.ports import free_port, port_open
from testkit.waiting import wait_for

VM_MARKER = "SYMPHONY_TEST_VM_MARKER"  # set in the server's environment only: code that sees it ran "on the VM"


@dataclass(frozen=True)
class RunningController:
    url: str
    port: int
    home: Path  # the "VM" user's home
    marker: str  # the value of VM_MARKER on the "VM"
    process: subprocess.Popen[bytes]


@contextlib.contextmanager
def running_vm_server(
    module: str, flags: Sequence[str], home: Path, folders: Sequence[str], display: str | None
) -> Iterator[RunningController]:
    """`python -m module --port N *flags` on `display` (default: this process's DISPLAY), on a free loopback port,
    with `folders` made in `home`; stopped by its pid afterwards."""
    port = free_port()
    for folder in folders:
        (home / folder).mkdir(parents=True, exist_ok=True)
    marker = f"vm-{port}"
    env = {
        **os.environ,
        "HOME": str(home),
        VM_MARKER: marker,
        "PATH": f"{Path(sys.executable).parent}:{os.environ.get('PATH', '/usr/bin:/bin')}",
        "PYTHONPATH": str(ROOT),
        **({"DISPLAY": display} if display else {}),
    }
    process = subprocess.Popen([sys.executable, "-m", module, "--port", str(port), *flags], env=env, cwd=home)
    try:
        wait_for(lambda: port_open(port) or process.poll() is not None, timeout=30)
        if process.poll() is not None:
            raise RuntimeError(f"the stand-in {module} exited with {process.returncode}")
        yield RunningController(f"http://127.0.0.1:{port}", port, home, marker, process)
    finally:
        process.terminate()
        try:
            process.wait(timeout=5)
        except subprocess.TimeoutExpired:  # a wedged server's threads never end: stop it outright
            process.kill()
            process.wait(timeout=5)


def running_controller(
    home: Path, faults: Faults | None = None, display: str | None = None
) -> contextlib.AbstractContextManager[RunningController]:
    """The OSWorld controller stand-in, with the faults asked for."""
    faults = faults or Faults()
    flags = [
        *(["--bash-script-500"] if faults.bash_script_500 else []),
        *(["--wedge-when-parallel"] if faults.wedge_when_parallel else []),
        *(["--accessibility-500"] if faults.accessibility_500 else []),
        *(["--accessibility-file", faults.accessibility_file] if faults.accessibility_file else []),
        *(["--screenshot-flood"] if faults.screenshot_flood else []),
    ]
    return running_vm_server("testkit.osworld_controller", flags, home, ("Desktop",), display)
