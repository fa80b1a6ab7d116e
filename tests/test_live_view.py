"""The live view of a display: real x11vnc and websockify on a real Xvfb, watched through noVNC's page in real
Chromium. What is drawn on the display shows in the viewer; the viewer's input is dropped unless asked for; a wrong
token or password gets nothing; nothing but websockify's port listens; `serve --view` and bench environments start
and stop it with their display."""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import sys
import urllib.request
from collections.abc import Iterator
from pathlib import Path
from urllib.error import URLError

import pytest
from playwright.sync_api import Page, sync_playwright
from pydantic import SecretStr, ValidationError
from Xlib import display as xdisplay_module

from symphony_mcp.bench.environments import started_environments
from symphony_mcp.config import DisplaySettings, Settings, ViewSettings
from symphony_mcp.desktop.live_view import LiveView, missing_parts, start_live_view
from symphony_mcp.desktop.virtual_display import VirtualDisplay, start_virtual_display
from symphony_mcp.errors import DisplayUnavailableError
from testkit.chromium import QUIET_ARGS, chromium_executable
from testkit.display import paint_root
from testkit.server_process import children, names, wait_gone
from testkit.waiting import wait_for

pytestmark = pytest.mark.skipif(bool(missing_parts()), reason=f"live view parts missing: {missing_parts()}")

_CANVAS_PIXEL = """() => {
  const canvas = document.querySelector('#noVNC_container canvas');
  if (!canvas || canvas.width < 2) return null;
  const [r, g, b] = canvas.getContext('2d').getImageData(canvas.width >> 1, canvas.height >> 1, 1, 1).data;
  return [r, g, b];
}"""
_STATUS = "() => document.querySelector('#noVNC_status')?.textContent || ''"


@pytest.fixture(scope="module")
def screen() -> Iterator[VirtualDisplay]:
    """A display of its own: its root window's colour is what the tests draw."""
    display = start_virtual_display(DisplaySettings(resolution="640x480", window_manager=""))
    yield display
    display.stop()


@pytest.fixture(scope="module")
def viewer() -> Iterator[Page]:
    executable = chromium_executable()
    if executable is None:
        pytest.skip("Chromium is not installed")
    with sync_playwright() as playwright:
        browser = playwright.chromium.launch(executable_path=executable, args=list(QUIET_ARGS))
        yield browser.new_page(viewport={"width": 800, "height": 600})
        browser.close()


def pointer(display: str) -> tuple[int, int]:
    connection = xdisplay_module.Display(display)
    try:
        where = connection.screen().root.query_pointer()
        return where.root_x, where.root_y
    finally:
        connection.close()


def warp(display: str, x: int, y: int) -> None:
    connection = xdisplay_module.Display(display)
    try:
        connection.screen().root.warp_pointer(x, y)
        connection.sync()
    finally:
        connection.close()


def open_viewer(page: Page, url: str) -> None:
    page.goto("about:blank")  # else a URL that differs only in its fragment would not load the page again
    page.goto(url)


def shows(page: Page, rgb: tuple[int, int, int]) -> None:
    page.wait_for_function(f"() => JSON.stringify(({_CANVAS_PIXEL})()) === '{list(rgb)}'.replace(/ /g, '')")


@pytest.fixture
def view(screen: VirtualDisplay, request: pytest.FixtureRequest) -> Iterator[LiveView]:
    settings = getattr(request, "param", ViewSettings(enabled=True))
    live = start_live_view(screen.name, settings)
    yield live
    live.stop()


def test_what_is_drawn_shows_in_the_viewer(screen: VirtualDisplay, view: LiveView, viewer: Page) -> None:
    paint_root(screen.name, (200, 30, 120))
    open_viewer(viewer, view.url)
    shows(viewer, (200, 30, 120))
    paint_root(screen.name, (20, 180, 60))  # live: a later drawing follows
    shows(viewer, (20, 180, 60))


def test_view_only_drops_the_viewers_input(screen: VirtualDisplay, view: LiveView, viewer: Page) -> None:
    warp(screen.name, 5, 5)
    paint_root(screen.name, (10, 10, 10))
    open_viewer(viewer, view.url.replace("view_only=true", "view_only=false"))  # a viewer that sends input anyway
    shows(viewer, (10, 10, 10))
    box = viewer.locator("#noVNC_container canvas").bounding_box()
    assert box is not None
    viewer.mouse.move(box["x"] + box["width"] / 2, box["y"] + box["height"] / 2)
    viewer.mouse.click(box["x"] + box["width"] / 2, box["y"] + box["height"] / 2)
    # x11vnc reads the connection in order: once a screen change after the input shows, the input was read (and
    # dropped).
    paint_root(screen.name, (240, 240, 0))
    shows(viewer, (240, 240, 0))
    assert pointer(screen.name) == (5, 5)


@pytest.mark.parametrize("view", [ViewSettings(enabled=True, interactive=True)], indirect=True)
def test_an_interactive_view_moves_the_pointer(screen: VirtualDisplay, view: LiveView, viewer: Page) -> None:
    """The control for the view-only test: the same input, when asked for, does reach the display."""
    warp(screen.name, 5, 5)
    paint_root(screen.name, (10, 10, 10))
    open_viewer(viewer, view.url)
    shows(viewer, (10, 10, 10))
    box = viewer.locator("#noVNC_container canvas").bounding_box()
    assert box is not None
    viewer.mouse.move(box["x"] + box["width"] / 2, box["y"] + box["height"] / 2)
    wait_for(lambda: abs(pointer(screen.name)[0] - 320) <= 2 and abs(pointer(screen.name)[1] - 240) <= 2)


def test_a_wrong_token_or_password_gets_nothing(screen: VirtualDisplay, view: LiveView, viewer: Page) -> None:
    token = re.search(r"token%3D([^&]+)", view.url)
    password = re.search(r"password=([^&]+)", view.url)
    assert token and password
    open_viewer(viewer, view.url.replace(token[1], "guessed-token"))
    viewer.wait_for_function(f"() => ({_STATUS})().includes('Failed to connect')")
    open_viewer(viewer, view.url.replace(f"password={password[1]}", "password=guessed1"))
    viewer.wait_for_function(f"() => ({_STATUS})().includes('password check failed')")
    assert viewer.evaluate(_CANVAS_PIXEL) in (None, [0, 0, 0])


def test_only_websockify_listens_and_only_on_loopback(view: LiveView) -> None:
    x11vnc, websockify = view.processes
    assert _listening(x11vnc.pid) == []  # the VNC server is on a Unix socket in a private folder only
    assert [address for address, _ in _listening(websockify.pid)] == ["127.0.0.1"]
    assert os.stat(view.folder).st_mode & 0o077 == 0


def test_beyond_loopback_needs_a_chosen_password() -> None:
    with pytest.raises(ValidationError, match="beyond loopback, only with a password"):
        ViewSettings(enabled=True, host="0.0.0.0")
    with pytest.raises(DisplayUnavailableError, match="6 to 8 characters") as failure:
        start_live_view(":0", ViewSettings(enabled=True, password=SecretStr("much-too-long-for-vnc")))
    assert "much-too-long" not in str(failure.value)  # the error does not repeat the password
    assert ViewSettings(enabled=True, host="0.0.0.0", password=SecretStr("s3cret!x")).host == "0.0.0.0"
    assert not ViewSettings(host="0.0.0.0").enabled  # off (e.g. a bench task's server): nothing to guard


def test_serve_view_starts_and_stops_with_the_server(tmp_path: Path) -> None:
    env = {**os.environ, "SYMPHONY_MEMORY__TRAJECTORY_DIR": str(tmp_path), "SYMPHONY_POLICY__AUDIT": "false"}
    command = [sys.executable, "-m", "symphony_mcp", "serve", "--view", "--virtual-display", "always"]
    server = subprocess.Popen(command, env=env, stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    assert server.stderr is not None and server.stdin is not None
    lines = []
    for raw in server.stderr:
        lines.append(raw.decode())
        if "live view of display" in lines[-1] or server.poll() is not None:
            break
    found = re.search(r"(http://\S+/vnc\.html)\?\S*view_only=true\S*#path=websockify%3Ftoken%3D\S+", lines[-1])
    assert found, "".join(lines)
    with urllib.request.urlopen(found[1], timeout=10) as page:
        assert page.status == 200
    server.stdin.close()  # the client goes away: the server ends, and its view with it
    server.wait(timeout=30)
    with pytest.raises(URLError):
        urllib.request.urlopen(found[1], timeout=5)


def test_a_killed_server_leaves_no_view_behind(tmp_path: Path) -> None:
    """x11vnc and websockify are tied to the server like its display: SIGKILL, and they go too."""
    env = {**os.environ, "SYMPHONY_MEMORY__TRAJECTORY_DIR": str(tmp_path), "SYMPHONY_POLICY__AUDIT": "false"}
    command = [sys.executable, "-m", "symphony_mcp", "serve", "--view", "--virtual-display", "always"]
    server = subprocess.Popen(command, env=env, stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    assert server.stderr is not None
    for raw in server.stderr:
        if b"live view of display" in raw or server.poll() is not None:
            break
    started = children(server.pid)
    assert {"websockify", "x11vnc"} <= set(names(started))
    folder = next(Path(f"/proc/{pid}/cmdline").read_bytes() for pid in started if names({pid}) == ["websockify"])
    tokens = Path(folder.split(b"\0")[-2].decode())  # --token-source FOLDER/tokens, the last argument
    assert sorted(p.name for p in tokens.parent.iterdir()) == ["tokens", "vnc.sock"]  # the password file is gone
    server.kill()
    server.wait()
    assert wait_gone(started) == set()
    shutil.rmtree(tokens.parent)  # what a SIGKILL cannot clean: the view's folder (no secret but the dead token)


def test_each_bench_environment_has_its_own_view(tmp_path: Path) -> None:
    settings = Settings(
        display=DisplaySettings(resolution="320x240", window_manager=""), view=ViewSettings(enabled=True)
    )
    with started_environments(2, settings, tmp_path) as environments:
        urls = [environment.view_url for environment in environments]
        assert all(urls) and len(set(urls)) == 2
        # A task's server on the environment's display must not start a second view (SYMPHONY_VIEW__ENABLED=true in
        # the environment, or a config file, reaches it too).
        assert all(environment.server.env["SYMPHONY_VIEW__ENABLED"] == "false" for environment in environments)
        for url in urls:
            assert url is not None
            with urllib.request.urlopen(url.split("?")[0], timeout=10) as page:
                assert page.status == 200
    for url in urls:
        assert url is not None
        with pytest.raises(URLError):
            urllib.request.urlopen(url.split("?")[0], timeout=5)


def _listening(pid: int) -> list[tuple[str, int]]:
    """(address, port) of the TCP sockets process `pid` listens on, IPv4 and IPv6, from /proc."""
    inodes = set()
    for fd in Path(f"/proc/{pid}/fd").iterdir():
        target = os.readlink(fd)
        if target.startswith("socket:["):
            inodes.add(target[8:-1])
    found = []
    for table, width in (("tcp", 8), ("tcp6", 32)):
        for line in Path(f"/proc/net/{table}").read_text().splitlines()[1:]:
            fields = line.split()
            if fields[3] == "0A" and fields[9] in inodes:  # 0A: LISTEN
                address, port = fields[1].split(":")
                found.append((_address(address, width), int(port, 16)))
    return found


def _address(hex_address: str, width: int) -> str:
    if width == 8:
        return ".".join(str(b) for b in reversed(bytes.fromhex(hex_address)))
    return hex_address
