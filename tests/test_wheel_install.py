"""The built wheel works outside this repository: installed into clean venvs with pip (from the lock, as
scripts/install.sh does) and with uv (resolving the wheel's own dependencies, as `uvx --from <wheel>` does, held to
the lock's versions), its console script serves screenshot, find_text and click_text on a real window through the
MCP client over stdio, with none of this checkout on the path."""

from __future__ import annotations

import os
import re
import subprocess
import sys
import zipfile
from collections.abc import Iterator
from importlib.metadata import version
from pathlib import Path

import pytest
from mcp import Client, StdioServerParameters

from symphony_mcp.desktop.virtual_display import VirtualDisplay
from testkit.mcp_calls import call_ok
from testkit.tk_probe import TkProbe

pytestmark = [pytest.mark.anyio, pytest.mark.timeout(600)]

ROOT = Path(__file__).resolve().parent.parent
SERVER_LOCK = ROOT / "locks" / "server.txt"
INSTALL_SECONDS = 420  # a cold cache downloads the server's ~60 packages


def _uv() -> str:
    uv = Path(sys.executable).parent / "uv"
    if not uv.exists():
        message = "uv is not installed (the dev lock has it: scripts/install.sh --dev)"
        if os.environ.get("CI"):
            pytest.fail(message)
        pytest.skip(message)
    return str(uv)


def _run(*command: str | Path, cwd: Path) -> None:
    """A step of an install, in a folder outside the checkout and without this process's PYTHONPATH."""
    env = {k: v for k, v in os.environ.items() if k not in ("PYTHONPATH", "VIRTUAL_ENV")}
    done = subprocess.run(
        [str(part) for part in command], cwd=cwd, env=env, capture_output=True, text=True, timeout=INSTALL_SECONDS
    )
    assert done.returncode == 0, f"{' '.join(map(str, command))} failed:\n{done.stdout[-3000:]}\n{done.stderr[-3000:]}"


@pytest.fixture(scope="module")
def wheel(tmp_path_factory: pytest.TempPathFactory) -> Path:
    out = tmp_path_factory.mktemp("dist")
    _run(_uv(), "build", "--wheel", "--out-dir", out, ROOT, cwd=out)
    (built,) = out.glob("symphony_mcp-*.whl")
    return built


def install_with_pip(venv: Path, wheel: Path) -> None:
    _run(sys.executable, "-m", "venv", venv, cwd=venv.parent)
    pip = [venv / "bin" / "python", "-m", "pip", "install", "-q", "--no-deps"]
    _run(*pip, "--require-hashes", "-r", SERVER_LOCK, cwd=venv.parent)
    _run(*pip, wheel, cwd=venv.parent)


def install_with_uv(venv: Path, wheel: Path) -> None:
    uv = _uv()
    _run(uv, "venv", "-q", "--python", sys.executable, venv, cwd=venv.parent)
    # The wheel's own requirements decide what is installed (a dependency that dragged in python3-xlib would be
    # installed too); the lock only holds the versions of what it lists.
    _run(uv, "pip", "install", "-q", "--python", venv / "bin" / "python", wheel, "-c", SERVER_LOCK, cwd=venv.parent)


INSTALLERS = {"pip": install_with_pip, "uv": install_with_uv}


@pytest.fixture(scope="module", params=sorted(INSTALLERS))
def installed(request: pytest.FixtureRequest, wheel: Path, tmp_path_factory: pytest.TempPathFactory) -> Iterator[Path]:
    """A clean venv holding the wheel; its console script."""
    venv = tmp_path_factory.mktemp(request.param) / "venv"
    INSTALLERS[request.param](venv, wheel)
    yield venv / "bin" / "symphony-mcp"


def test_the_wheel_carries_no_second_xlib(installed: Path) -> None:
    python = installed.parent / "python"
    names = "import importlib.metadata as m; print(*(d.metadata['Name'].lower() for d in m.distributions()))"
    listing = subprocess.run(
        [python, "-c", names],
        capture_output=True,
        text=True,
        check=True,
    ).stdout.split()
    assert "python-xlib" in listing and "python3-xlib" not in listing and "pyautogui" not in listing
    assert "symphony-mcp" in listing


async def test_installed_server_reads_and_clicks_a_real_window(
    installed: Path, xdisplay: VirtualDisplay, tk_probe: TkProbe, tmp_path: Path
) -> None:
    # Only what a host passes, plus the display; the working folder holds no checkout.
    env = {"PATH": os.environ["PATH"], "HOME": os.environ["HOME"], "DISPLAY": xdisplay.name}
    params = StdioServerParameters(command=str(installed), args=["serve"], env=env, cwd=str(tmp_path))
    async with Client(params) as client:
        assert client.server_info is not None and client.server_info.version == version("symphony-mcp")
        shot = await client.call_tool("screenshot", {})
        assert not shot.is_error and shot.content[0].type == "image"
        found = await call_ok(client, "find_text", phrase="Press me", space="screen")
        centre, button = found["matches"][0]["center"], tk_probe.state()["widgets"]["button"]
        assert button["left"] <= centre["x"] < button["left"] + button["width"]
        assert button["top"] <= centre["y"] < button["top"] + button["height"]
        await call_ok(client, "click_text", phrase="Press me")
        tk_probe.wait(lambda state: state["clicks"] == 1)


def test_messages_point_only_to_what_the_wheel_carries(wheel: Path) -> None:
    """Error messages once sent users to scripts/install.sh and scripts/osworld-user.sh, which a wheel lacks."""
    with zipfile.ZipFile(wheel) as archive:
        sources = {name: archive.read(name).decode() for name in archive.namelist() if name.endswith(".py")}
    pointing = {name: re.findall(r"scripts/[\w.-]+", text) for name, text in sources.items()}
    assert {name: found for name, found in pointing.items() if found} == {}
    assert "symphony_mcp/bench/osworld/osworld-user.sh" in zipfile.ZipFile(wheel).namelist()
