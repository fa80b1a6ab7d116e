"""`symphony-mcp doctor` and the degradations it makes visible: each dependency hidden (from PATH, or by a setting)
gives its one line with the exact fix and the right exit status; the server warns at start when `run_code` would
run under weaker confinement than bubblewrap."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

import pytest
from mcp import Client

from testkit.model_server import StandInModel
from testkit.server_process import ServerProcess, base_env, serve_command


def path_without(folder: Path, *hidden: str) -> str:
    """A PATH with every program of this one but `hidden`: one folder of links."""
    folder.mkdir(exist_ok=True)
    for directory in os.environ["PATH"].split(os.pathsep):
        if not os.path.isdir(directory):
            continue
        for entry in os.scandir(directory):
            target = folder / entry.name
            if entry.name in hidden or target.exists() or not os.access(entry.path, os.X_OK):
                continue
            target.symlink_to(entry.path)
    assert all(shutil.which(name, path=str(folder)) is None for name in hidden)
    return str(folder)


def doctor(env: dict[str, str], *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [*serve_command(), "doctor", *args], env=env, capture_output=True, text=True, timeout=120, check=False
    )


@pytest.fixture
def clean_env(tmp_path: Path, stand_in: StandInModel) -> dict[str, str]:
    """No DISPLAY (the server would start Xvfb), one model endpoint that answers, no OSWorld account record."""
    return base_env(
        SYMPHONY_MODELS__DEFAULT__BASE_URL=stand_in.url,
        SYMPHONY_MODELS__DEFAULT__MODEL="stand-in",
        OSWORLD_USER_RECORD=str(tmp_path / "no-record"),
    )


def findings(result: subprocess.CompletedProcess[str]) -> dict[str, dict[str, Any]]:
    report = json.loads(result.stdout)
    assert report["ok"] == (result.returncode == 0), result.stdout
    return {finding["capability"]: finding for finding in report["findings"]}


def test_a_complete_machine_passes(clean_env: dict[str, str]) -> None:
    result = doctor(clean_env, "--json")
    assert result.returncode == 0, result.stdout + result.stderr
    found = findings(result)
    expected_ok = ["display", "window manager", "OCR", "code confinement", "Chromium", "live view"]
    expected_ok += [f"models ({role})" for role in ("orchestrator", "grounder", "memoryer", "searcher", "coder")]
    assert {name: found[name]["status"] for name in expected_ok} == dict.fromkeys(expected_ok, "ok")
    account = found["OSWorld account"]
    assert account["status"] == "warn" and account["fix"] == "symphony-mcp osworld-user create (as root)"


# (programs hidden from PATH, settings, the capability, its status, its fix, the exit status)
HIDDEN = {
    "xvfb": (("Xvfb",), {}, "display", "fail", "apt-get install -y xvfb, or set DISPLAY", 3),
    "openbox": (("openbox",), {}, "window manager", "fail", "apt-get install -y openbox", 3),
    "bwrap": (("bwrap",), {}, "code confinement", "warn", "apt-get install -y bubblewrap", 0),
    "bwrap and unshare": (("bwrap", "unshare"), {}, "code confinement", "fail", "apt-get install -y bubblewrap", 3),
    "x11vnc": (("x11vnc",), {}, "live view", "warn", "apt-get install -y x11vnc novnc websockify", 0),
    "x11vnc, view on": (
        ("websockify",), {"SYMPHONY_VIEW__ENABLED": "true"}, "live view", "fail", "apt-get install -y x11vnc", 3
    ),
    "tesseract data": ((), {"SYMPHONY_OCR__LANGUAGE": "xyz"}, "OCR", "fail", "apt-get install -y tesseract-ocr-xyz", 3),
    "chromium": (
        (), {"SYMPHONY_SEARCH__BROWSER": "/nowhere/chromium"}, "Chromium", "warn", "SYMPHONY_SEARCH__BROWSER", 0
    ),
    "display": ((), {"DISPLAY": ":987"}, "display", "fail", "start the X server of :987", 3),
    "model server": (
        (), {"SYMPHONY_MODELS__GROUNDER__BASE_URL": "http://127.0.0.1:9/v1"}, "models (grounder)", "fail",
        "start the model server, or set SYMPHONY_MODELS__GROUNDER__BASE_URL", 3,
    ),
    "model name": (
        (), {"SYMPHONY_MODELS__CODER__MODEL": "not-served"}, "models (coder)", "warn",
        "set SYMPHONY_MODELS__CODER__MODEL to one it serves", 0,
    ),
    "models": (
        (), {"SYMPHONY_MODELS__DEFAULT__BASE_URL": "", "SYMPHONY_MODELS__DEFAULT__MODEL": ""}, "models (unconfigured)",
        "warn", "SYMPHONY_MODELS__DEFAULT__BASE_URL=", 0,
    ),
}  # fmt: skip


@pytest.mark.parametrize("case", HIDDEN, ids=list(HIDDEN))
def test_each_missing_dependency_gives_its_fix(case: str, clean_env: dict[str, str], tmp_path: Path) -> None:
    hidden, settings, capability, status, fix, exit_status = HIDDEN[case]
    env = {**clean_env, **settings}
    if hidden:
        env["PATH"] = path_without(tmp_path / "bin", *hidden)
    result = doctor(env, "--json")
    found = findings(result)
    assert (found[capability]["status"], result.returncode) == (status, exit_status), result.stdout
    assert fix in found[capability]["fix"]
    others = [f for name, f in found.items() if name not in (capability, "OSWorld account")]
    assert all(f["status"] == "ok" for f in others if case not in ("models", "display")), result.stdout


class _RefusingModels(BaseHTTPRequestHandler):
    """A model server that refuses every key, as OpenAI does a wrong one."""

    def do_GET(self) -> None:
        self.send_response(401)
        self.send_header("Content-Type", "application/json")
        self.end_headers()
        self.wfile.write(b'{"error": {"message": "Incorrect API key provided"}}')

    def log_message(self, *args: Any) -> None:
        pass


def test_a_refused_api_key_names_the_key_setting(clean_env: dict[str, str]) -> None:
    server = ThreadingHTTPServer(("127.0.0.1", 0), _RefusingModels)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        url = f"http://127.0.0.1:{server.server_address[1]}/v1"
        result = doctor({**clean_env, "SYMPHONY_MODELS__SEARCHER__BASE_URL": url}, "--json")
    finally:
        server.shutdown()
        thread.join()
    searcher = findings(result)["models (searcher)"]
    assert (searcher["status"], result.returncode) == ("fail", 3)
    assert "refused the API key (HTTP 401)" in searcher["detail"]
    assert searcher["fix"] == "set SYMPHONY_MODELS__SEARCHER__API_KEY (or SYMPHONY_MODELS__SEARCHER__API_KEY_ENV)"


def test_text_output_is_one_line_per_finding_with_its_fix(clean_env: dict[str, str], tmp_path: Path) -> None:
    env = {**clean_env, "PATH": path_without(tmp_path / "bin", "bwrap", "unshare")}
    result = doctor(env)
    assert result.returncode == 3
    lines = result.stdout.splitlines()
    assert len(lines) == len(findings(doctor(env, "--json")))
    assert (
        "FAIL  code confinement: run_code refuses to run: code cannot run: bubblewrap (`bwrap`) or `unshare` is not "
        "available or does not work here"
    ) in result.stdout
    assert next(line for line in lines if line.startswith("FAIL")).endswith("-> fix: apt-get install -y bubblewrap")
    assert all(line.startswith("OK    ") for line in lines if "-> fix:" not in line)


@pytest.mark.anyio
async def test_the_server_warns_at_start_when_code_runs_weaker_than_bubblewrap(tmp_path: Path) -> None:
    """Before, `run_code` fell back to `unshare` without a word."""
    log = tmp_path / "stderr.log"
    env = base_env(PATH=path_without(tmp_path / "bin", "bwrap"))
    with log.open("wb") as stderr:
        async with Client(ServerProcess("--trajectory-dir", str(tmp_path / "runs"), env=env, stderr=stderr)) as client:
            await client.list_tools()
    text = log.read_text()
    assert "WARNING symphony_mcp.server: run_code and code_agent: code runs in `unshare` namespaces" in text, text
    assert "for bubblewrap: apt-get install -y bubblewrap" in text
    env["PATH"] = os.environ["PATH"]
    with log.open("wb") as stderr:
        async with Client(ServerProcess("--trajectory-dir", str(tmp_path / "runs"), env=env, stderr=stderr)) as client:
            await client.list_tools()
    assert "run_code and code_agent" not in log.read_text()  # with bubblewrap: nothing to say
    env["SYMPHONY_CODE__BACKEND"] = "none"  # chosen (an OSWorld environment's server): installing is not the fix
    with log.open("wb") as stderr:
        async with Client(ServerProcess("--trajectory-dir", str(tmp_path / "runs"), env=env, stderr=stderr)) as client:
            await client.list_tools()
    assert "for bubblewrap: apt-get install -y bubblewrap (and SYMPHONY_CODE__BACKEND=auto)" in log.read_text()
