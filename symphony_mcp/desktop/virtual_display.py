"""A virtual X display (Xvfb plus an optional window manager) owned by the server process.

Their lives are tied to the server's: they get SIGTERM when it dies, even by SIGKILL, through the
kernel's parent-death signal (PR_SET_PDEATHSIG), set by util-linux's `setpriv` just before it
execs them. `setpriv` rather than a `preexec_fn` because nothing but C code then runs between
fork and exec (Python code there can deadlock when other threads hold locks); rather than a
watchdog process, which would itself need tying to the server. The signal fires when the *thread*
that started them ends, so they are tied only when started from the main thread, which lives as
long as the process; from another thread they are stopped only by `stop()`. SIGTERM lets Xvfb
remove its lock file and socket. A server killed in the instant between fork and setpriv's prctl
would still leave them; that window is only at start-up.
"""

from __future__ import annotations

import contextlib
import logging
import os
import shutil
import subprocess
import sys
import threading
import time
from collections.abc import Iterable, Iterator
from dataclasses import dataclass

from symphony_mcp.config import DisplaySettings
from symphony_mcp.desktop.accessibility import AccessibilityBus, start_accessibility_bus
from symphony_mcp.desktop.x11_display import open_display
from symphony_mcp.errors import DisplayUnavailableError

log = logging.getLogger(__name__)
XVFB_FIX = "apt-get install -y xvfb"
WINDOW_MANAGER_FIX = (
    "apt-get install -y openbox (the virtual display's window manager, settings display.window_manager)"
)


@dataclass
class VirtualDisplay:
    name: str
    xvfb: subprocess.Popen[bytes]
    window_manager: subprocess.Popen[bytes] | None
    accessibility: AccessibilityBus | None = None

    def stop(self) -> None:
        bus = self.accessibility.processes if self.accessibility is not None else []
        stop_processes([*bus, self.window_manager, self.xvfb])


def stop_processes(processes: Iterable[subprocess.Popen[bytes] | None]) -> None:
    """Stop each process still running, in order: SIGTERM, then SIGKILL after 5 s."""
    for process in processes:
        if process is not None and process.poll() is None:
            process.terminate()
            try:
                process.wait(timeout=5)
            except subprocess.TimeoutExpired:
                process.kill()
                process.wait()


def needs_virtual_display(settings: DisplaySettings) -> bool:
    if settings.virtual == "never" or not sys.platform.startswith("linux"):
        return False
    if settings.virtual == "always":
        return True
    return not (settings.display or os.environ.get("DISPLAY"))


def start_virtual_display(settings: DisplaySettings, timeout: float = 10.0) -> VirtualDisplay:
    """Start Xvfb on a free display number (Xvfb picks it via -displayfd) and a window manager."""
    if shutil.which("Xvfb") is None:
        raise DisplayUnavailableError(f"no display and Xvfb is not installed: {XVFB_FIX} (and openbox), or set DISPLAY")
    width, height = settings.size
    read_fd, write_fd = os.pipe()
    tie = tied_to_this_process()
    xvfb = subprocess.Popen(
        [
            *tie,
            "Xvfb",
            "-displayfd",
            str(write_fd),
            "-screen",
            "0",
            f"{width}x{height}x24",
            "-nolisten",
            "tcp",
            "-noreset",
            "+extension",
            "RANDR",
        ],
        pass_fds=(write_fd,),
        stdin=subprocess.DEVNULL,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
    )
    os.close(write_fd)
    display = VirtualDisplay(name="", xvfb=xvfb, window_manager=None)
    try:  # a failure or a stop signal (stop_signals.StopRequested) part way stops what was started
        display.name = f":{_read_display_number(read_fd, xvfb, timeout)}"
        display.accessibility = start_accessibility_bus(display.name, tie)
        if settings.window_manager:
            if shutil.which(settings.window_manager):
                display.window_manager = subprocess.Popen(
                    [*tie, settings.window_manager],
                    env={**os.environ, "DISPLAY": display.name},
                    stdin=subprocess.DEVNULL,
                    stdout=subprocess.DEVNULL,
                    stderr=subprocess.DEVNULL,
                )
                _wait_for_window_manager(display.name, timeout)
            else:
                log.warning(
                    "window manager %r not found; windows will not be listable or focusable (MiniWoB++ cannot run): %s",
                    settings.window_manager,
                    WINDOW_MANAGER_FIX,
                )
    except BaseException:
        display.stop()
        raise
    log.info("started virtual display %s (%dx%d)", display.name, width, height)
    return display


def tied_to_this_process(signal: str = "TERM") -> list[str]:
    """The command prefix that gives a child SIGTERM (or `signal`, for a program that ignores it) when this process
    dies (see the module's docstring); also for other programs a process starts for its own life, e.g. a benchmark's
    browser or environment."""
    if threading.current_thread() is not threading.main_thread():
        log.info("virtual display started off the main thread: it will not be stopped if the server is killed")
        return []
    setpriv = shutil.which("setpriv") or shutil.which("setpriv", path=os.defpath)  # a client's PATH may lack it
    if setpriv is None:
        log.warning("setpriv (util-linux) not found: the virtual display will outlive a killed server")
        return []
    return [setpriv, "--pdeathsig", signal, "--"]


def _read_display_number(read_fd: int, xvfb: subprocess.Popen[bytes], timeout: float) -> int:
    deadline = time.monotonic() + timeout
    data = b""
    with os.fdopen(read_fd, "rb", buffering=0) as pipe:
        os.set_blocking(read_fd, False)
        while not data.endswith(b"\n"):
            if xvfb.poll() is not None:
                stderr = xvfb.stderr.read().decode(errors="replace") if xvfb.stderr else ""
                raise DisplayUnavailableError(f"Xvfb exited with status {xvfb.returncode}: {stderr.strip()[-500:]}")
            if time.monotonic() > deadline:
                xvfb.kill()
                raise DisplayUnavailableError(f"Xvfb did not start within {timeout:g} s")
            with contextlib.suppress(BlockingIOError):
                data += pipe.read() or b""
            time.sleep(0.01)
    if xvfb.stderr:
        xvfb.stderr.close()  # nothing reads it from here on; a full pipe must not block Xvfb
    return int(data.strip())


def _wait_for_window_manager(display_name: str, timeout: float) -> None:
    """Wait until the window manager announces itself; the server starts anyway (with a warning) if it does not."""
    deadline = time.monotonic() + timeout
    try:
        while not has_window_manager(display_name):
            if time.monotonic() > deadline:
                log.warning("window manager did not announce itself within %g s", timeout)
                return
            time.sleep(0.05)
    except DisplayUnavailableError as exc:
        # The server still starts: every tool that needs the display then answers with this reason.
        log.warning("%s", exc)


def has_window_manager(display_name: str) -> bool:
    """Whether an EWMH window manager runs on the display: it announces itself with _NET_SUPPORTING_WM_CHECK on the
    root window and lists its windows in _NET_CLIENT_LIST (openbox sets the list some tens of ms after the
    announcement; listing windows in between finds no manager). Raises DisplayUnavailableError when the display
    cannot be opened."""
    from Xlib import X

    conn = open_display("checking for a window manager", display_name)
    try:
        root = conn.screen().root
        names = ("_NET_SUPPORTING_WM_CHECK", "_NET_CLIENT_LIST")
        return all(root.get_full_property(conn.intern_atom(n), X.AnyPropertyType) is not None for n in names)
    finally:
        conn.close()


@contextlib.contextmanager
def display_for(settings: DisplaySettings) -> Iterator[str | None]:
    """Use the configured or inherited display, or start (and later stop) a virtual one."""
    if settings.display:
        os.environ["DISPLAY"] = settings.display
    if not needs_virtual_display(settings):
        yield os.environ.get("DISPLAY")
        return
    virtual = start_virtual_display(settings)
    previous = os.environ.get("DISPLAY")
    previous_bus = os.environ.get("DBUS_SESSION_BUS_ADDRESS")
    os.environ["DISPLAY"] = virtual.name
    os.environ.pop("XAUTHORITY", None)
    if virtual.accessibility is not None:  # the programs the server starts join the display's own session bus
        os.environ["DBUS_SESSION_BUS_ADDRESS"] = virtual.accessibility.session_address
    try:
        yield virtual.name
    finally:
        virtual.stop()
        for name, value in (("DISPLAY", previous), ("DBUS_SESSION_BUS_ADDRESS", previous_bus)):
            if value is None:
                os.environ.pop(name, None)
            else:
                os.environ[name] = value
