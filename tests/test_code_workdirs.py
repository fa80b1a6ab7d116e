"""run_code's work directories under attack, through a real server over stdio and the real MCP client: code
that plants links, races the server, takes permissions away or names odd paths neither escapes its sandbox nor
makes the server fail.
"""

from __future__ import annotations

import contextlib
import functools
import os
import secrets
import signal
from pathlib import Path

import anyio
import pytest
from mcp import Client

from symphony_mcp.code.cgroups import PREFIX, hierarchies
from symphony_mcp.desktop.virtual_display import VirtualDisplay
from testkit.mcp_calls import call_error, run_code
from testkit.server_process import ServerProcess, base_env
from testkit.waiting import wait_for

pytestmark = pytest.mark.anyio

RACE_CALLS = 300
# Call A: swaps `sub` between a directory and a link to the host's `/` until told to stop.
SWAPPER = """import os, shutil, time
def clear():
    shutil.rmtree('sub', ignore_errors=True)  # a directory (B's files in it); it refuses links
    try:
        os.unlink('sub')
    except OSError:
        pass
open('swapper-started', 'w').close()
while not os.path.exists('stop-swapping'):
    clear()
    try:
        os.mkdir('sub')
    except OSError:
        pass
    time.sleep(0.001)
    clear()
    try:
        os.symlink('/', 'sub')
    except OSError:
        pass
    time.sleep(0.001)
"""


def server(xdisplay: VirtualDisplay, home: Path, tree: Path) -> ServerProcess:
    """A server whose temporary files go to `tree`/tmp (so this test's are told from other servers')."""
    (tree / "tmp").mkdir(exist_ok=True)
    env = base_env(
        DISPLAY=xdisplay.name,
        HOME=str(home),
        TMPDIR=str(tree / "tmp"),
        SYMPHONY_MEMORY__TRAJECTORY_DIR=str(tree / "trajectories"),
    )
    return ServerProcess(env=env)


async def test_a_link_swapped_in_during_the_check_never_becomes_the_workdir(
    xdisplay: VirtualDisplay, home: Path, tree: Path
) -> None:
    """Issue 25 item 1: call A swaps `sub` for a link to `/` while call B runs in `sub` again and again. Before,
    135 of 698 B calls ran with the host's `/` as their writable cwd; now none may."""
    marker = f"symphony-race-{secrets.token_hex(6)}"
    workdir = tree / "trajectories" / "_code"
    escaped: list[str] = []
    outcomes = {"ran": 0, "refused": 0}
    try:
        async with Client(server(xdisplay, home, tree)) as client:
            await run_code(client, "bash", "true")  # the default work directory exists

            async with anyio.create_task_group() as group:
                group.start_soon(functools.partial(run_code, client, "python", SWAPPER, timeout_s=100))
                await anyio.to_thread.run_sync(lambda: wait_for(lambda: (workdir / "swapper-started").exists(), 30))
                for i in range(RACE_CALLS):
                    block = f"import os\nopen('{marker}-{i}', 'w').close()\nprint(sorted(os.listdir('.'))[:5])"
                    result = await client.call_tool("run_code", {"language": "python", "code": block, "workdir": "sub"})
                    outcomes["refused" if result.is_error else "ran"] += 1
                    if Path(f"/{marker}-{i}").exists():
                        escaped.append(f"call {i}: {result.content}")
                (workdir / "stop-swapping").touch()
    finally:
        for leftover in Path("/").glob(f"{marker}-*"):
            leftover.unlink()
    assert escaped == [], f"{len(escaped)} of {RACE_CALLS} runs wrote into the host's /: {escaped[:3]}"
    assert outcomes["ran"] > 0 and outcomes["refused"] > 0, outcomes  # the race was really run both ways


async def test_code_cannot_lock_the_next_run_out_of_its_work_directory(
    xdisplay: VirtualDisplay, home: Path, tree: Path
) -> None:
    """Issue 25 item 7: after `chmod 000 .` every later default-workdir run failed ("bwrap: Can't chdir ...
    Permission denied"), also after a restart. The server gives the owner's rwx back before each run."""
    async with Client(server(xdisplay, home, tree)) as client:
        locked = await run_code(client, "bash", "mkdir -p sub/deeper && chmod 000 sub/deeper sub . && echo locked")
        assert locked["stdout"] == "locked\n", locked
        again = await run_code(client, "bash", "echo again > note; cat note")
        assert again["stdout"] == "again\n" and again["exit_code"] == 0, again
        deeper = await run_code(client, "bash", "pwd", workdir="sub/deeper")
        assert deeper["stdout"].strip().endswith("_code/sub/deeper") and deeper["exit_code"] == 0, deeper
        await run_code(client, "bash", "chmod 000 .")
    async with Client(server(xdisplay, home, tree)) as client:  # a restarted server
        after = await run_code(client, "bash", "echo after a restart")
        assert after["stdout"] == "after a restart\n", after


async def test_odd_workdirs_are_clear_errors_that_change_nothing(
    xdisplay: VirtualDisplay, home: Path, tree: Path
) -> None:
    """Issue 25 item 8: each of these answered "internal error" (FileExistsError, ENAMETOOLONG, RecursionError)."""
    workdir = tree / "trajectories" / "_code"
    async with Client(server(xdisplay, home, tree)) as client:
        made = await run_code(client, "bash", "touch afile && mkfifo afifo && ln -s afile alink && echo made")
        assert made["stdout"] == "made\n", made
        before = sorted(p.name for p in workdir.iterdir())
        expected = {
            "afile": "exists and is not a directory",
            "afile/below": "exists and is not a directory",
            "afifo": "exists and is not a directory",
            "alink": "alink' is a symbolic link",
            "n" * 300: "is 300 bytes long; names are at most 255 bytes",
            "/".join(["d"] * 1500): "is more than 64 directories deep",
        }
        for name, message in expected.items():
            error = await call_error(client, "run_code", language="bash", code="touch x", workdir=name)
            assert message in error and "internal error" not in error, (name[:20], error)
        assert sorted(p.name for p in workdir.iterdir()) == before  # nothing was made
        assert (await run_code(client, "bash", "printf ok"))["stdout"] == "ok"  # and the server serves


async def test_a_server_killed_mid_run_leaves_nothing_a_restart_does_not_remove(
    xdisplay: VirtualDisplay, home: Path, tree: Path
) -> None:
    """Issue 25 item 13: kill -9 of the server during run_code left its cgroups and $TMPDIR/symphony-code-*/block.sh.
    The block is now a memfd (never on disk) and the next server removes the groups of a server that is gone."""
    killed = server(xdisplay, home, tree)
    async with Client(killed) as client, anyio.create_task_group() as group:

        async def long_run() -> None:
            with contextlib.suppress(Exception):  # the server dies under it
                await client.call_tool("run_code", {"language": "bash", "code": "sleep 60", "timeout_s": 90})

        group.start_soon(long_run)
        groups = await anyio.to_thread.run_sync(lambda: wait_for(lambda: server_groups(killed.pid), 30))
        assert list((tree / "tmp").iterdir()) == []  # the block is not on disk
        os.kill(killed.pid, signal.SIGKILL)
        await killed.wait(10)
    assert all(path.exists() for path in groups)  # left by the killed server
    async with Client(server(xdisplay, home, tree)) as client:
        assert (await run_code(client, "bash", "echo next"))["stdout"] == "next\n"
        assert [path for path in groups if path.exists()] == []


def server_groups(pid: int | None) -> list[Path]:
    """The cgroups of the server with this pid (one per controller hierarchy for each of its runs)."""
    return [path for hierarchy in hierarchies() for path in hierarchy.root.glob(f"{PREFIX}{pid}-*")]
