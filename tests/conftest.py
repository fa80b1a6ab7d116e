"""The suite's pytest fixtures, each a thin wrapper of testkit/: a real Xvfb display with a window manager, real
apps, the server in memory, the stand-in model and the local web site. Helpers live in testkit/, never here."""

from __future__ import annotations

import shutil
import tempfile
from collections.abc import AsyncIterator, Iterator
from pathlib import Path

import pytest
from mcp import Client

from symphony_mcp.config import load_settings
from symphony_mcp.desktop.virtual_display import VirtualDisplay
from symphony_mcp.server import SymphonyServer, build_server
from testkit.code_home import SECRET, SECRET_VARIABLES, make_home
from testkit.display import desktop, isolate_environment, wait_for_window_manager
from testkit.mime import SESSION_VARIABLES, make_mime_home
from testkit.model_server import StandInModel
from testkit.server_process import stdio_client as spawned_stdio_client
from testkit.tk_probe import TkProbe, running_probe
from testkit.web_site import WebSite, running_site
from testkit.xterm import line_reader

isolate_environment()  # on import: before any fixture starts a program


@pytest.fixture(scope="session")
def anyio_backend() -> str:
    return "asyncio"


@pytest.fixture(scope="session")
def xdisplay() -> Iterator[VirtualDisplay]:
    """One Xvfb + openbox for the whole run."""
    with desktop() as display:
        yield display


@pytest.fixture(autouse=True)
def settled_window_manager(request: pytest.FixtureRequest) -> None:
    """A test on the display starts once the window manager has caught up with what earlier tests did."""
    if "xdisplay" in request.fixturenames:
        request.getfixturevalue("xdisplay")
        wait_for_window_manager()


@pytest.fixture
def tk_probe(xdisplay: VirtualDisplay, tmp_path: Path) -> Iterator[TkProbe]:
    with running_probe(tmp_path) as probe:
        yield probe


@pytest.fixture
def xterm_line(xdisplay: VirtualDisplay, tmp_path: Path) -> Iterator[Path]:
    """An xterm whose shell reads one line and writes it to a file (testkit/xterm.py); yields that file's path."""
    with line_reader(tmp_path / "xterm_line.txt") as out:
        yield out


@pytest.fixture
async def server(xdisplay: VirtualDisplay) -> AsyncIterator[SymphonyServer]:
    built = build_server(load_settings())
    yield built
    built.close()


@pytest.fixture
async def client(server: SymphonyServer) -> AsyncIterator[Client]:
    async with Client(server.mcp) as connected:
        yield connected


@pytest.fixture
async def stdio_client(xdisplay: VirtualDisplay) -> AsyncIterator[Client]:
    """A server process of its own on the test display, through the real MCP client over stdio."""
    async with spawned_stdio_client(xdisplay.name) as connected:
        yield connected


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
    """A user's XDG configuration and data in tmp_path (testkit/mime.py)."""
    for variable in SESSION_VARIABLES:
        monkeypatch.delenv(variable, raising=False)
    for variable, value in make_mime_home(tmp_path).items():
        monkeypatch.setenv(variable, value)
    return tmp_path


@pytest.fixture
def tree() -> Iterator[Path]:
    """A fresh folder in /var/tmp, removed afterwards."""
    root = Path(tempfile.mkdtemp(prefix="symphony-code-test-", dir="/var/tmp"))
    yield root
    shutil.rmtree(root, ignore_errors=True)


@pytest.fixture
def home(tree: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """A home with what code must not see or change (testkit/code_home.py), and secrets in the environment."""
    home = make_home(tree)
    monkeypatch.setenv("HOME", str(home))
    for variable in SECRET_VARIABLES:
        monkeypatch.setenv(variable, SECRET)
    return home
