"""Other MCP clients drive the real server as hosts do, over stdio and streamable HTTP (issue 12's matrix).

Clients: the Python SDK 1.x (its own venv, .venv-clients: this project uses mcp 2.x), the TypeScript SDK
(npm, tests/clients/ts) and pydantic-ai with OpenAI strict tool schemas, whose model is the stand-in
model server scripted to call the tools. Each lists the tools, takes a screenshot, finds "Press me" with
OCR, clicks the point the find_text result gives, and types Unicode into the Tk probe's entry; the test
checks the effect on the probe. `scripts/install.sh --dev` installs the clients.
"""

from __future__ import annotations

import json
import os
import shutil
import socket
import subprocess
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from symphony_mcp.desktop.virtual_display import VirtualDisplay
from tests.conftest import TkProbe, running_probe, wait_for
from tests.test_transports import EXPECTED_TOOLS, base_env, free_port, serve_command

REPO = Path(__file__).resolve().parent.parent
CLIENTS = REPO / "tests" / "clients"
CLIENTS_PYTHON = REPO / ".venv-clients" / "bin" / "python"
TEXT = "héllo → 日本"
PHRASE = "Press me"


def require(path: Path, what: str) -> None:
    if not path.exists():
        message = f"{what} is not installed ({path}): run scripts/install.sh --dev"
        if os.environ.get("CI"):
            pytest.fail(message)
        pytest.skip(message)


@pytest.fixture(scope="module")
def probe(xdisplay: VirtualDisplay, tmp_path_factory: pytest.TempPathFactory) -> Iterator[TkProbe]:
    with running_probe(tmp_path_factory.mktemp("matrix")) as running:
        yield running


@pytest.fixture(scope="module")
def http_url(xdisplay: VirtualDisplay) -> Iterator[str]:
    port = free_port()
    process = subprocess.Popen(
        [*serve_command(), "serve", "--transport", "http", "--port", str(port)],
        env=base_env(DISPLAY=xdisplay.name),
        stdout=subprocess.DEVNULL,
    )
    url = f"http://127.0.0.1:{port}/mcp"
    try:
        wait_for(lambda: process.poll() is not None or _answers(port), timeout=30)
        assert process.poll() is None, "the HTTP server exited"
        yield url
    finally:
        process.terminate()
        process.wait(timeout=10)


def _answers(port: int) -> bool:
    with socket.socket() as sock:
        return sock.connect_ex(("127.0.0.1", port)) == 0


def server_target(transport: str, http_url: str) -> list[str]:
    return [transport, *serve_command(), "serve"] if transport == "stdio" else [transport, http_url]


def run_client(command: list[str], display: str) -> str:
    result = subprocess.run(
        command, env=base_env(DISPLAY=display), capture_output=True, text=True, timeout=120, encoding="utf-8"
    )
    assert result.returncode == 0, f"{command[:2]} failed:\n{result.stderr[-3000:]}"
    return result.stdout


def scenario(probe: TkProbe, **extra: Any) -> str:
    return json.dumps({"phrase": PHRASE, "text": TEXT, "entry": probe.centre("entry"), **extra})


def check_effect(probe: TkProbe, clicks_before: int) -> None:
    probe.wait(lambda s: s["clicks"] == clicks_before + 1 and s["entry"] == TEXT)


def check_report(report: dict[str, Any]) -> None:
    assert set(report["tools"]) >= EXPECTED_TOOLS
    assert report["image_types"][0] == "image" and report["frame_id"]
    # The click went where the find_text result said, in the same (screenshot) space.
    assert report["click"]["points"] == [report["center"]] and report["click"]["space"] == "screenshot"
    assert report["typed"]["action"] == "type"


@pytest.mark.parametrize("transport", ["stdio", "http"])
def test_python_sdk_1x_client(transport: str, probe: TkProbe, http_url: str, xdisplay: VirtualDisplay) -> None:
    require(CLIENTS_PYTHON, "the clients' venv")
    clicks = probe.state()["clicks"]
    host = [str(CLIENTS_PYTHON), str(CLIENTS / "python_sdk1_host.py"), scenario(probe)]
    out = run_client([*host, *server_target(transport, http_url)], xdisplay.name)
    check_report(json.loads(out))
    check_effect(probe, clicks)


@pytest.mark.parametrize("transport", ["stdio", "http"])
def test_typescript_sdk_client(transport: str, probe: TkProbe, http_url: str, xdisplay: VirtualDisplay) -> None:
    require(CLIENTS / "ts" / "node_modules" / "@modelcontextprotocol" / "sdk", "the TypeScript SDK")
    node = shutil.which("node")
    assert node is not None, "node is not installed (apt-get install nodejs)"
    clicks = probe.state()["clicks"]
    # The last call, a 2.5 s wait, outlives the client's 1.5 s timeout: progress restarts it (tools/progress.py).
    extra = {"long_wait": 2.5, "client_timeout_ms": 1500}
    out = run_client(
        [node, str(CLIENTS / "ts" / "host.mjs"), scenario(probe, **extra), *server_target(transport, http_url)],
        xdisplay.name,
    )
    report = json.loads(out)
    check_report(report)
    check_effect(probe, clicks)
    assert len(report["progress"]) >= 2
