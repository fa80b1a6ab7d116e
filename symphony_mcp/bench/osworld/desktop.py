"""One OSWorld environment's desktop: Xvfb, the window manager and the accessibility bus, inside it as the task user.

OSWorld's VM has its own display; here the environment's X server runs in its sandbox (its network namespace holds
the X server's abstract socket, its private /tmp the socket file), started as the task user like everything else
there, so it ends with the environment. The host reaches it as a VM's screen is reached: the display number is
reserved on the host (an X lock file, /tmp/.X<n>-lock, which Xvfb honours) and the host's /tmp/.X11-unix/X<n> is
a link to the socket file inside (through /proc/<PID 1>/root), so host-side X clients (the setup's window steps,
checks) open ":<n>" as usual. Screen: OSWorld's VM's, 1920x1080.
"""

from __future__ import annotations

import contextlib
import os
import shutil
import subprocess
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path

from symphony_mcp.desktop.accessibility import start_accessibility_bus
from symphony_mcp.desktop.virtual_display import WINDOW_MANAGER_FIX, XVFB_FIX, has_window_manager
from symphony_mcp.errors import DisplayUnavailableError, SymphonyError

SCREEN = (1920, 1080)  # OSWorld's VM
WINDOW_MANAGER = "openbox"
FIRST_DISPLAY = 200  # reserved numbers from here up, clear of the runner's own Xvfb displays (picked from 0 up)
LAST_DISPLAY = 999
X_SOCKETS = Path("/tmp/.X11-unix")
START_SECONDS = 15.0
Inside = Callable[[Sequence[str]], list[str]]  # argv -> the command that runs it in the environment as the task user


class DesktopError(SymphonyError):
    """The environment's display could not start (Xvfb or the window manager missing or failing)."""


@dataclass
class Desktop:
    """The environment's display name and its bus; its processes end with the environment (and at stop())."""

    display: str
    session_bus: str | None
    processes: list[subprocess.Popen[bytes]] = field(default_factory=list)
    _reservation: Path | None = None
    _link: Path | None = None

    def stop(self, timeout: float = START_SECONDS) -> None:
        """Once the environment's PID 1 is killed: wait for the processes' nsenter to reap them and end (killing an
        nsenter would leave its child a zombie for the host's init to reap, late), then give the number back."""
        for process in self.processes:
            try:
                process.wait(timeout=timeout)
            except subprocess.TimeoutExpired:
                process.kill()
                process.wait()
        self.processes.clear()
        for path in (self._link, self._reservation):
            if path is not None:
                with contextlib.suppress(FileNotFoundError):
                    path.unlink()
        self._link = self._reservation = None


def desktop_problem() -> str | None:
    """Why an environment cannot have a display here, or None."""
    if shutil.which("Xvfb") is None:
        return f"Xvfb not found: {XVFB_FIX}"
    if shutil.which(WINDOW_MANAGER) is None:
        return f"{WINDOW_MANAGER} not found: {WINDOW_MANAGER_FIX}"
    return None


def start_desktop(inside: Inside, env: dict[str, str], init_pid: int, bus_path: str) -> Desktop:
    """Xvfb on a display number reserved on the host, then the session and accessibility buses (the session bus at
    `bus_path`, where a login's is) and the window manager, each run through `inside` with the task user's `env`."""
    problem = desktop_problem()
    if problem:
        raise DesktopError(problem)
    number, reservation = _reserve_display()
    display = f":{number}"
    desktop = Desktop(display, None, _reservation=reservation)
    try:
        width, height = SCREEN
        screen = f"{width}x{height}x24"
        xvfb = ["Xvfb", display, "-screen", "0", screen, "-nolisten", "tcp", "-noreset", "+extension", "RANDR"]
        desktop.processes.append(_start(inside(xvfb), env))
        socket = Path(f"/proc/{init_pid}/root{X_SOCKETS}/X{number}")
        _wait(lambda: socket.is_socket(), desktop.processes[0], "Xvfb")
        desktop._link = X_SOCKETS / f"X{number}"
        with contextlib.suppress(FileNotFoundError):
            desktop._link.unlink()  # a dangling link of a runner that was killed (its lock is ours now)
        desktop._link.symlink_to(socket)
        on_display = {**env, "DISPLAY": display}
        bus = start_accessibility_bus(display, inside([]), env=on_display, listen=f"unix:path={bus_path}")
        if bus is not None:
            desktop.processes.extend(bus.processes)
            desktop.session_bus = bus.session_address
        manager = _start(inside([WINDOW_MANAGER]), on_display)
        desktop.processes.append(manager)
        _wait(lambda: has_window_manager(display), manager, WINDOW_MANAGER)
    except BaseException:
        for process in desktop.processes:
            process.kill()
        desktop.stop()
        raise
    return desktop


def _reserve_display() -> tuple[int, Path]:
    """A display number free on the host, held by an X lock file naming this process (Xvfb skips a live one; a
    killed runner's, whose process is gone, is taken over as Xvfb takes over a stale lock)."""
    X_SOCKETS.mkdir(mode=0o1777, exist_ok=True)
    for number in range(FIRST_DISPLAY, LAST_DISPLAY + 1):
        lock = Path(f"/tmp/.X{number}-lock")
        if _claim(lock) or (_holder_ended(lock) and _claim(lock, stale=True)):
            return number, lock
    raise DesktopError(f"no free X display number in {FIRST_DISPLAY}..{LAST_DISPLAY}")


def _claim(lock: Path, stale: bool = False) -> bool:
    """Create `lock` naming this process, unless another process made it first."""
    if stale:
        with contextlib.suppress(FileNotFoundError):
            lock.unlink()
    try:
        descriptor = os.open(lock, os.O_CREAT | os.O_EXCL | os.O_WRONLY, 0o444)
    except FileExistsError:
        return False
    with os.fdopen(descriptor, "w") as file:
        file.write(f"{os.getpid():10d}\n")
    return True


def _holder_ended(lock: Path) -> bool:
    try:
        pid = int(lock.read_text().strip())
    except (OSError, ValueError):
        return False  # being written, or not an X lock: leave it
    return not Path(f"/proc/{pid}").exists()


def _start(argv: Sequence[str], env: dict[str, str]) -> subprocess.Popen[bytes]:
    return subprocess.Popen(
        argv, env=env, stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL
    )


def _wait(ready: Callable[[], bool], process: subprocess.Popen[bytes], name: str) -> None:
    deadline = time.monotonic() + START_SECONDS
    while True:
        with contextlib.suppress(DisplayUnavailableError):
            if ready():
                return
        if process.poll() is not None:
            raise DesktopError(f"{name} exited with status {process.returncode} in the environment")
        if time.monotonic() > deadline:
            raise DesktopError(f"{name} did not start in the environment within {START_SECONDS:g} s")
        time.sleep(0.02)
