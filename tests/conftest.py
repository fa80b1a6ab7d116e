"""Shared fixtures: a real Xvfb display with a window manager, real apps, and the server in memory."""

from __future__ import annotations

import contextlib
import json
import os
import shutil
import subprocess
import sys
import tempfile
import time
from collections.abc import AsyncIterator, Callable, Iterator
from pathlib import Path
from typing import Any

import pytest
from mcp import Client

from symphony_mcp.config import DisplaySettings, load_settings
from symphony_mcp.desktop.types import WindowInfo
from symphony_mcp.desktop.virtual_display import VirtualDisplay, start_virtual_display
from symphony_mcp.desktop.x11_windows import X11WindowManager
from symphony_mcp.server import SymphonyServer, build_server
from testkit.model_server import StandInModel
from testkit.web_site import WebSite, running_site

APPS = Path(__file__).parent / "apps"
SCREEN = (1920, 1080)
# Every program the tests start (Xvfb's openbox, Chromium, Tk, xterm) renders with the same fonts whatever else
# the machine has installed: other fonts change a page's layout and what is inside its viewport. Set on import,
# before any fixture starts a program; each program inherits it.
FONTS_CONF = Path(__file__).parent / "fonts" / "fonts.conf"
os.environ["FONTCONFIG_FILE"] = str(FONTS_CONF)
# Trajectories and the audit log go to a fresh state directory, never the user's own (~/.local/state).
os.environ["XDG_STATE_HOME"] = tempfile.mkdtemp(prefix="symphony-tests-state-")


def wait_for(predicate: Callable[[], Any], timeout: float = 10.0, interval: float = 0.05) -> Any:
    """Poll until predicate returns something truthy; fail with the last value otherwise."""
    deadline = time.monotonic() + timeout
    value = None
    while time.monotonic() < deadline:
        value = predicate()
        if value:
            return value
        time.sleep(interval)
    raise AssertionError(f"condition not met within {timeout} s (last value: {value!r})")


@pytest.fixture(scope="session")
def anyio_backend() -> str:
    return "asyncio"


@pytest.fixture(scope="session")
def xdisplay() -> Iterator[VirtualDisplay]:
    """One Xvfb + openbox for the whole run, started by the package's own virtual-display code."""
    if not Path("/usr/share/fonts/truetype/dejavu/DejaVuSans.ttf").exists():
        pytest.fail(f"fonts-dejavu-core is not installed; the tests render with it only ({FONTS_CONF})")
    display = start_virtual_display(DisplaySettings(resolution=f"{SCREEN[0]}x{SCREEN[1]}", window_manager="openbox"))
    previous = os.environ.get("DISPLAY")
    os.environ["DISPLAY"] = display.name
    yield display
    display.stop()
    if previous is None:
        os.environ.pop("DISPLAY", None)
    else:
        os.environ["DISPLAY"] = previous


def wait_for_active_window(title: str, timeout: float = 10.0) -> None:
    manager = X11WindowManager()
    try:
        wait_for(lambda: (active := manager.active()) is not None and active.title == title, timeout)
    finally:
        manager.close()


def wait_for_window_manager(timeout: float = 60.0) -> None:
    """Block until the window manager has handled every event sent before this call (an EWMH round trip).

    Typing characters the keymap lacks rebinds spare keycodes, and each rebinding makes openbox re-grab its keys:
    beside two busy loops it was measured 11.5 s behind after one test's typing, so the next test's window was not
    managed within that test's 10 s wait, or was clicked while openbox was still framing it. The request is sent
    again each second: one sent before openbox listens on a fresh display is never answered.
    """
    from Xlib import X, display, protocol

    connection = display.Display()
    try:
        root = connection.screen().root
        window = root.create_window(0, 0, 1, 1, 0, X.CopyFromParent)
        extents = connection.intern_atom("_NET_FRAME_EXTENTS")
        request = protocol.event.ClientMessage(
            window=window, client_type=connection.intern_atom("_NET_REQUEST_FRAME_EXTENTS"), data=(32, [0] * 5)
        )
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            root.send_event(request, event_mask=X.SubstructureRedirectMask | X.SubstructureNotifyMask)
            connection.flush()
            with contextlib.suppress(AssertionError):
                wait_for(lambda: window.get_full_property(extents, X.AnyPropertyType) is not None, timeout=1.0)
                return
        raise AssertionError(f"the window manager did not answer within {timeout} s")
    finally:
        connection.close()


@pytest.fixture(autouse=True)
def settled_window_manager(request: pytest.FixtureRequest) -> None:
    """A test on the display starts once the window manager has caught up with what earlier tests did."""
    if "xdisplay" in request.fixturenames:
        request.getfixturevalue("xdisplay")
        wait_for_window_manager()


class TkProbe:
    """A running tests/apps/tk_probe.py window and its reported state."""

    def __init__(self, state_file: Path, process: subprocess.Popen[bytes]) -> None:
        self.state_file = state_file
        self.process = process

    def state(self) -> dict[str, Any]:
        try:
            return json.loads(self.state_file.read_text(encoding="utf-8"))
        except (FileNotFoundError, json.JSONDecodeError):
            return {}

    def centre(self, widget: str) -> tuple[int, int]:
        box = self.state()["widgets"][widget]
        return box["left"] + box["width"] // 2, box["top"] + box["height"] // 2

    def wait(self, predicate: Callable[[dict[str, Any]], Any], timeout: float = 10.0) -> dict[str, Any]:
        try:
            wait_for(lambda: predicate(self.state()), timeout)
        except AssertionError as exc:
            raise AssertionError(f"{exc}; Tk state: {self.state()}") from None
        return self.state()


@pytest.fixture
def tk_probe(xdisplay: VirtualDisplay, tmp_path: Path) -> Iterator[TkProbe]:
    with running_probe(tmp_path) as probe:
        yield probe


@contextlib.contextmanager
def running_probe(directory: Path, geometry: str = "900x700+200+150") -> Iterator[TkProbe]:
    """The Tk probe at `geometry`, ready like a person would wait for it: laid out, framed and made active by the
    window manager, and Tk has seen both (it reports the framed position and has the focus). Under load the window
    was active while Tk still reported its unframed position, so a click at a widget's centre landed 20 px off."""
    state_file = directory / "tk_state.json"
    process = subprocess.Popen(
        [sys.executable, str(APPS / "tk_probe.py"), str(state_file), "Symphony Probe", geometry]
    )
    probe = TkProbe(state_file, process)
    manager = X11WindowManager()
    try:
        probe.wait(lambda s: s.get("widgets", {}).get("swatch", {}).get("width", 0) > 1)
        probe.wait(lambda s: _settled(s, manager.active()))
        yield probe
    finally:
        manager.close()
        process.terminate()
        process.wait(timeout=5)


def _settled(state: dict[str, Any], active: WindowInfo | None) -> bool:
    return (
        active is not None
        and active.title == "Symphony Probe"
        and active.rect is not None
        and state.get("window") == active.rect.model_dump()
        and state.get("focus") not in (None, "None")
    )


@pytest.fixture
def xterm_line(xdisplay: VirtualDisplay, tmp_path: Path) -> Iterator[Path]:
    """An xterm whose shell reads one line and writes it to a file; yields that file's path."""
    if shutil.which("xterm") is None:
        pytest.fail("xterm is not installed (apt-get install xterm)")
    out = tmp_path / "xterm_line.txt"
    script = f'read -r line; printf "%s" "$line" > {out}'
    process = subprocess.Popen(
        ["xterm", "-T", "Symphony Term", "-geometry", "80x12+1100+600", "-e", "bash", "-c", script],
        env={**os.environ, "LANG": "C.UTF-8", "LC_ALL": "C.UTF-8"},
    )
    yield out
    process.terminate()
    process.wait(timeout=5)


@pytest.fixture
async def server(xdisplay: VirtualDisplay) -> AsyncIterator[SymphonyServer]:
    built = build_server(load_settings())
    yield built
    built.close()


@pytest.fixture
async def client(server: SymphonyServer) -> AsyncIterator[Client]:
    async with Client(server.mcp) as connected:
        yield connected


async def call_ok(client: Client, tool: str, **arguments: Any) -> dict[str, Any]:
    """Call a tool that must succeed; return its structured content."""
    result = await client.call_tool(tool, arguments)
    assert not result.is_error, f"{tool} failed: {result.content}"
    assert result.structured_content is not None
    return result.structured_content


async def call_error(client: Client, tool: str, **arguments: Any) -> str:
    """Call a tool that must fail with a tool error; return the error text."""
    result = await client.call_tool(tool, arguments)
    assert result.is_error, f"{tool} unexpectedly succeeded: {result.structured_content}"
    return result.content[0].text  # type: ignore[union-attr]


@pytest.fixture(scope="session")
def stand_in_server() -> Iterator[StandInModel]:
    server = StandInModel().start()
    yield server
    server.stop()


@pytest.fixture
def stand_in(stand_in_server: StandInModel) -> StandInModel:
    """The stand-in model server with an empty script."""
    stand_in_server.script()
    return stand_in_server


@pytest.fixture(scope="session")
def web_site() -> Iterator[WebSite]:
    """The local search engine and help centre (testkit/web_site.py) over real HTTP on 127.0.0.1."""
    with running_site() as site:
        yield site


@pytest.fixture
def mime_home(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """A user's XDG configuration and data in tmp_path, read by xdg-mime as a real session's would be."""
    for variable in ("XDG_CURRENT_DESKTOP", "DESKTOP_SESSION", "KDE_FULL_SESSION", "GNOME_DESKTOP_SESSION_ID"):
        monkeypatch.delenv(variable, raising=False)  # xdg-mime's generic rules: mimeapps.list, then the system's
    monkeypatch.delenv("TERMINAL", raising=False)
    monkeypatch.setenv("XDG_CONFIG_HOME", str(tmp_path / "config"))
    monkeypatch.setenv("XDG_DATA_HOME", str(tmp_path / "data"))
    applications = tmp_path / "data" / "applications"
    applications.mkdir(parents=True)
    (applications / "xmessage-file.desktop").write_text(
        "[Desktop Entry]\nType=Application\nName=Message file\nExec=xmessage -title OpenedByDefault -file %f\n"
        "NoDisplay=true\n"
    )
    return tmp_path


def set_default(home: Path, mime_type: str, entry_id: str) -> None:
    (home / "config").mkdir(exist_ok=True)
    (home / "config" / "mimeapps.list").write_text(f"[Default Applications]\n{mime_type}={entry_id}\n")
