"""A live view of a display in a browser: x11vnc serves the display, websockify serves noVNC's page and bridges it.

x11vnc listens on a Unix socket in a folder only this user can open (`-rfbport 0 -rfbportv6 0`: no TCP port, IPv4
or IPv6), so the one way in is websockify's port. websockify gets that port already bound (`--inetd`: no race for
it, and the port is known before it starts) and lets a WebSocket through only with this start's random token (its
ReadOnlyTokenFile plugin maps exactly that token to the socket); VNC's password is asked on top. The viewer's URL
carries both in its fragment, which the browser never sends in the page's request. View-only unless the settings say
`interactive`: x11vnc itself then drops the viewer's mouse and keys, whatever the page sends.

Both programs are tied to this process like the display (virtual_display.tied_to_this_process).
"""

from __future__ import annotations

import contextlib
import logging
import os
import secrets
import shutil
import socket
import string
import subprocess
import tempfile
import time
import urllib.request
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from urllib.error import URLError
from urllib.parse import urlencode

from symphony_mcp.config import ViewSettings
from symphony_mcp.desktop.virtual_display import stop_processes, tied_to_this_process
from symphony_mcp.errors import DisplayUnavailableError

log = logging.getLogger(__name__)
NOVNC_PAGES = Path("/usr/share/novnc")  # Debian's novnc package
VIEW_FIX = "apt-get install -y x11vnc novnc websockify"
_PASSWORD_CHARACTERS = string.ascii_letters + string.digits
_ANY_ADDRESS = ("0.0.0.0", "::", "[::]", "")


def missing_parts() -> list[str]:
    """What the live view needs and this machine lacks (empty when it can start)."""
    missing = [program for program in ("x11vnc", "websockify") if shutil.which(program) is None]
    return missing + ([] if (NOVNC_PAGES / "vnc.html").is_file() else [f"noVNC ({NOVNC_PAGES})"])


@dataclass
class LiveView:
    url: str
    folder: Path
    processes: list[subprocess.Popen[bytes]] = field(default_factory=list)

    def stop(self) -> None:
        stop_processes(reversed(self.processes))
        shutil.rmtree(self.folder, ignore_errors=True)


def start_live_view(display: str, settings: ViewSettings, port: int | None = None, timeout: float = 10.0) -> LiveView:
    """Serve `display` to a browser on settings.host and `port` (default settings.port; 0 picks a free one)."""
    if missing := missing_parts():
        raise DisplayUnavailableError(f"the live view needs {', '.join(missing)}: {VIEW_FIX}")
    if settings.password is not None and not 6 <= len(settings.password.get_secret_value()) <= 8:
        # Checked here, not by pydantic, whose errors would repeat the password.
        raise DisplayUnavailableError("SYMPHONY_VIEW__PASSWORD must be 6 to 8 characters: VNC authentication uses 8")
    folder = Path(tempfile.mkdtemp(prefix="symphony-view-"))  # mode 0700: the socket and secrets are ours alone
    view = LiveView(url="", folder=folder)
    try:
        password = settings.password.get_secret_value() if settings.password else _random_password()
        vnc_socket = folder / "vnc.sock"
        view.processes.append(_start_x11vnc(display, settings, vnc_socket, _private_file(folder / "passwd", password)))
        _wait_for_socket(vnc_socket, view.processes[0], timeout)
        token = secrets.token_urlsafe(24)
        tokens = _private_file(folder / "tokens", f"{token}: unix_socket:{vnc_socket}\n")
        listener = _listen(settings.host, settings.port if port is None else port)
        try:
            view.processes.append(_start_websockify(listener, tokens))
            bound = listener.getsockname()[1]
        finally:
            listener.close()  # websockify holds its own copy
        view.url = _viewer_url(settings, bound, token, password)
        _wait_for_page(settings.host, bound, view.processes[1], timeout)
    except BaseException:
        view.stop()
        raise
    return view


def _listen(host: str, port: int) -> socket.socket:
    try:
        return socket.create_server((host.strip("[]"), port), family=socket.AF_INET6 if ":" in host else socket.AF_INET)
    except OSError as exc:
        raise DisplayUnavailableError(
            f"the live view cannot listen on {host}:{port}: {exc.strerror}; choose another SYMPHONY_VIEW__PORT "
            "(0 picks a free one) or SYMPHONY_VIEW__HOST"
        ) from None


def _random_password() -> str:
    return "".join(secrets.choice(_PASSWORD_CHARACTERS) for _ in range(8))


def _private_file(path: Path, text: str) -> Path:
    descriptor = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
    with os.fdopen(descriptor, "w", encoding="utf-8") as file:
        file.write(text)
    return path


def _start_x11vnc(display: str, settings: ViewSettings, vnc_socket: Path, passwords: Path) -> subprocess.Popen[bytes]:
    command = [*tied_to_this_process(), "x11vnc", "-display", display, "-unixsock", str(vnc_socket)]
    command += ["-rfbport", "0", "-rfbportv6", "0", "-noipv6"]  # no TCP port at all
    command += ["-passwdfile", f"rm:{passwords}"]  # x11vnc deletes it once read: the password is not left on disk
    command += ["-shared", "-forever", "-quiet", "-noxdamage"]
    if not settings.interactive:
        command.append("-viewonly")
    return subprocess.Popen(
        command, env={**os.environ, "DISPLAY": display}, stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )  # fmt: skip


def _start_websockify(listener: socket.socket, tokens: Path) -> subprocess.Popen[bytes]:
    command = [*tied_to_this_process(), "websockify", "--inetd", "--web", str(NOVNC_PAGES)]
    command += ["--token-plugin", "ReadOnlyTokenFile", "--token-source", str(tokens)]
    return subprocess.Popen(command, stdin=listener.fileno(), stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)


def _viewer_url(settings: ViewSettings, port: int, token: str, password: str) -> str:
    host = socket.gethostname() if settings.host in _ANY_ADDRESS else settings.host.strip("[]")
    host = f"[{host}]" if ":" in host else host
    query = urlencode({"autoconnect": "true", "resize": "scale", "view_only": str(not settings.interactive).lower()})
    fragment = urlencode({"path": f"websockify?token={token}", "password": password})
    return f"http://{host}:{port}/vnc.html?{query}#{fragment}"


def _wait_for_socket(path: Path, process: subprocess.Popen[bytes], timeout: float) -> None:
    deadline = time.monotonic() + timeout
    while not path.is_socket():
        if process.poll() is not None:
            raise DisplayUnavailableError(f"x11vnc exited with status {process.returncode}")
        if time.monotonic() > deadline:
            raise DisplayUnavailableError(f"x11vnc did not listen within {timeout:g} s")
        time.sleep(0.02)


def _wait_for_page(host: str, port: int, process: subprocess.Popen[bytes], timeout: float) -> None:
    """websockify answers the viewer's page (its port was listening from the start; this sees it serve)."""
    host = "127.0.0.1" if host in _ANY_ADDRESS else host
    page = f"http://{f'[{host}]' if ':' in host else host}:{port}/vnc.html"
    deadline = time.monotonic() + timeout
    while True:
        try:
            with urllib.request.urlopen(page, timeout=max(0.1, deadline - time.monotonic())) as answer:
                if answer.status == 200:
                    return
        except (URLError, OSError):
            pass
        if process.poll() is not None:
            raise DisplayUnavailableError(f"websockify exited with status {process.returncode}")
        if time.monotonic() > deadline:
            raise DisplayUnavailableError(f"websockify did not serve the viewer within {timeout:g} s")
        time.sleep(0.05)


@contextlib.contextmanager
def live_view_for(display: str | None, settings: ViewSettings, port: int | None = None) -> Iterator[LiveView | None]:
    """The live view of `display` while the block runs, when the settings ask for one. Its URL is logged as a warning:
    it is a credential, and it must show at any log level."""
    if not settings.enabled:
        yield None
        return
    if display is None:
        raise DisplayUnavailableError("the live view needs an X display, and this server has none")
    view = start_live_view(display, settings, port)
    mode = "interactive: whoever opens it can act" if settings.interactive else "view-only"
    log.warning("live view of display %s (%s); anyone with this URL can watch: %s", display, mode, view.url)
    try:
        yield view
    finally:
        view.stop()
