"""The SSH backend against a real OpenSSH server (testkit/sshd.py): sshd on a loopback port with throwaway keys logs in
a test user, whose python3 runs the uploaded agent on the tests' Xvfb, so "the machine" is another account.

`symphony-mcp serve` on the SSH backend, spawned over stdio with no display of its own, acts on that machine
through the real MCP client: clicks land on the probe window, Unicode text arrives exactly, screenshots map back,
code runs as the SSH user, files move over SFTP, a dropped connection is made again, a wrong host key is refused.
"""

from __future__ import annotations

import concurrent.futures
import contextlib
import os
import pwd
import shutil
import signal
from collections.abc import AsyncIterator, Iterator
from pathlib import Path

import pytest
from mcp import Client

from symphony_mcp.desktop.remote.ssh_machine import AGENT_PATH, AGENT_SOURCE, HostKeyRefusedError, SshMachine
from symphony_mcp.desktop.virtual_display import VirtualDisplay
from symphony_mcp.desktop.x11_windows import X11WindowManager
from symphony_mcp.doctor import LOCAL_ONLY
from symphony_mcp.errors import DisplayUnavailableError
from testkit.display import SCREEN
from testkit.doctor import run_doctor
from testkit.mcp_calls import call_error, call_ok, run_code
from testkit.remote_round import click_type_round
from testkit.server_process import base_env, stdio_params
from testkit.sshd import RunningSshd, keygen, running_sshd, sshd_unavailable, stop_sessions
from testkit.tk_probe import TkProbe
from testkit.waiting import wait_for

pytestmark = [
    pytest.mark.anyio,
    pytest.mark.skipif(sshd_unavailable() is not None, reason=str(sshd_unavailable())),
]

ROUNDS_OF_CONNECTIONS_AT_ONCE = 6
UNICODE = 'héllo → 日本 a<b>c ñ € ✓ "quoted" ~`{}|? Ωmega ß'


@pytest.fixture
def sshd(xdisplay: VirtualDisplay) -> Iterator[RunningSshd]:
    with running_sshd() as server:
        yield server


def serve_env(sshd: RunningSshd, display: str, **extra: str) -> dict[str, str]:
    settings = {
        "SYMPHONY_DESKTOP__BACKEND": "ssh",
        "SYMPHONY_DESKTOP__URL": sshd.url,
        "SYMPHONY_DESKTOP__SSH_KEY_FILE": str(sshd.key_file),
        "SYMPHONY_DESKTOP__SSH_KNOWN_HOSTS": str(sshd.known_hosts),
        "SYMPHONY_DESKTOP__SSH_PYTHON": "/usr/bin/python3",  # the machine's: python3-xlib, nothing of this repository
        "SYMPHONY_DESKTOP__SSH_DISPLAY": display,
    }
    return base_env(**{**settings, **extra})


@pytest.fixture
async def remote(sshd: RunningSshd, xdisplay: VirtualDisplay) -> AsyncIterator[Client]:
    async with Client(stdio_params(env=serve_env(sshd, xdisplay.name))) as client:
        yield client


async def test_clicks_land_text_arrives_exactly_and_screenshots_map_back(remote: Client, tk_probe: TkProbe) -> None:
    await click_type_round(remote, tk_probe, UNICODE)


async def test_code_runs_on_the_machine_as_the_ssh_user(remote: Client, sshd: RunningSshd) -> None:
    ran = await run_code(remote, "python", "import getpass, os; print(getpass.getuser(), os.getcwd())")
    assert ran["stdout"].split() == [sshd.user, str(sshd.home / "symphony-code")] and ran["confinement"] == "remote"
    assert sshd.user != pwd.getpwuid(os.geteuid()).pw_name  # not the server's user
    wrote = await run_code(remote, "bash", "printf 'from the machine' > ~/made-by-code.txt; echo oops >&2; exit 3")
    assert (wrote["exit_code"], wrote["stderr"]) == (3, "oops\n")  # a failed block is reported failed
    made = sshd.home / "made-by-code.txt"
    assert made.read_text() == "from the machine" and made.stat().st_uid == pwd.getpwnam(sshd.user).pw_uid
    slow = await run_code(remote, "bash", "sleep 30; echo never", timeout_s=1)
    assert slow["killed"] is True and slow["kill_reason"] == "timeout" and "never" not in slow["stdout"]


async def test_windows_and_elements_tools_say_why_they_do_not_work_over_ssh(remote: Client) -> None:
    error = await call_error(remote, "list_windows")
    assert "not listed or switched over SSH" in error
    error = await call_error(remote, "elements")
    assert "cannot act on the ssh machine" in error and "not read over SSH" in error and "find_text" in error


async def test_open_app_starts_programs_on_the_machine_as_its_user(remote: Client, sshd: RunningSshd) -> None:
    launched = await call_ok(
        remote, "open_app", target="xterm -title 'SSH Term' -e sleep 600"
    )  # no shell: keeps its title
    pid = launched["pid"]
    try:
        assert launched["command"] == ["xterm", "-title", "SSH Term", "-e", "sleep", "600"]
        assert Path(f"/proc/{pid}").stat().st_uid == pwd.getpwnam(sshd.user).pw_uid  # the SSH user's process
        with contextlib.closing(X11WindowManager()) as windows:  # on the display the machine's DISPLAY names
            wait_for(lambda: any(w.title == "SSH Term" and w.pid == pid for w in windows.list_windows()), timeout=20)
    finally:
        os.kill(pid, signal.SIGTERM)
    error = await call_error(remote, "open_app", target="no-such-program-on-the-machine --flag")
    assert "no program no-such-program-on-the-machine on this machine" in error and "exit status 127" in error


async def test_a_dropped_connection_is_made_again(remote: Client, sshd: RunningSshd, tk_probe: TkProbe) -> None:
    await call_ok(remote, "screenshot")
    stop_sessions(sshd.process.pid)  # the connection drops, the agent with it
    await call_ok(remote, "screenshot")  # a read: made again on a new connection
    stop_sessions(sshd.process.pid)
    x, y = tk_probe.centre("button")
    first = await remote.call_tool("click", {"x": x, "y": y, "space": "screen"})
    if first.is_error:  # the drop reached the server after it sent the click: said so, never sent again
        assert "whether it ran is not known; the next call connects again" in str(first.content), first.content
        await call_ok(remote, "click", x=x, y=y, space="screen")
    tk_probe.wait(lambda s: s["clicks"] == 1)  # one click in all: on the new connection, sent once
    assert "Accepted publickey" in sshd.log()


async def test_an_unreachable_machine_is_reported_clearly(sshd: RunningSshd, xdisplay: VirtualDisplay) -> None:
    async with Client(stdio_params(env=serve_env(sshd, xdisplay.name))) as client:
        await call_ok(client, "screen_info")
        stop_sessions(sshd.process.pid)
        sshd.process.terminate()
        sshd.process.wait(timeout=10)
        error = await call_error(client, "screenshot")
        assert f"cannot reach {sshd.url}" in error and "refused" in error.lower()
        error = await call_error(client, "click", x=5, y=5, space="screen")  # the server lives on and says why
        assert f"cannot reach {sshd.url}" in error


def test_files_move_both_ways_over_sftp(sshd: RunningSshd, xdisplay: VirtualDisplay) -> None:
    machine = SshMachine(sshd.url, sshd.known_hosts, sshd.key_file, "/usr/bin/python3", xdisplay.name)
    try:
        data = bytes(range(256)) * 4096  # 1 MiB, every byte value
        machine.upload("~/moved-up.bin", data)
        landed = sshd.home / "moved-up.bin"
        assert landed.read_bytes() == data and landed.stat().st_uid == pwd.getpwnam(sshd.user).pw_uid
        assert machine.download("~/moved-up.bin") == data
        with pytest.raises(FileNotFoundError):
            machine.download("~/no-such-file.bin")
    finally:
        machine.close()


def test_machines_connecting_at_once_to_an_account_without_the_agent_all_start_it(
    sshd: RunningSshd, xdisplay: VirtualDisplay
) -> None:
    """The first upload of the agent is raced by every connection that starts together (the runner's machines share
    one account here): each writes a part of its own and renames it into place, so none starts a half-written agent."""
    for _ in range(ROUNDS_OF_CONNECTIONS_AT_ONCE):
        shutil.rmtree(sshd.home / Path(AGENT_PATH).parent, ignore_errors=True)
        machines = [
            SshMachine(sshd.url, sshd.known_hosts, sshd.key_file, "/usr/bin/python3", xdisplay.name) for _ in range(8)
        ]
        try:
            with concurrent.futures.ThreadPoolExecutor(len(machines)) as pool:
                hellos = list(pool.map(lambda machine: machine.hello(), machines))
            assert len({hello.pid for hello in hellos}) == len(machines)
            assert (sshd.home / AGENT_PATH).read_bytes() == AGENT_SOURCE
            assert not list((sshd.home / Path(AGENT_PATH).parent).glob("*.part"))
        finally:
            for machine in machines:
                machine.close()


def test_a_wrong_host_key_is_refused(sshd: RunningSshd, xdisplay: VirtualDisplay, tmp_path: Path) -> None:
    other = keygen(tmp_path / "other_host_key").split()
    wrong = tmp_path / "known_hosts"
    wrong.write_text(f"[127.0.0.1]:{sshd.port} {other[0]} {other[1]}\n")
    machine = SshMachine(sshd.url, wrong, sshd.key_file, "/usr/bin/python3", xdisplay.name)
    with pytest.raises(HostKeyRefusedError, match=r"does not match the one .* holds for it"):
        machine.hello()
    empty = tmp_path / "empty_known_hosts"
    empty.write_text("")
    with pytest.raises(HostKeyRefusedError, match=r"host key is not in .*ssh-keyscan"):
        SshMachine(sshd.url, empty, sshd.key_file).hello()
    assert "Accepted publickey" not in sshd.log()  # refused before logging in: nothing ran on the machine


async def test_the_server_refuses_a_machine_with_a_wrong_host_key(
    sshd: RunningSshd, xdisplay: VirtualDisplay, tmp_path: Path
) -> None:
    other = keygen(tmp_path / "other_host_key").split()
    wrong = tmp_path / "known_hosts"
    wrong.write_text(f"[127.0.0.1]:{sshd.port} {other[0]} {other[1]}\n")
    env = serve_env(sshd, xdisplay.name, SYMPHONY_DESKTOP__SSH_KNOWN_HOSTS=str(wrong))
    async with Client(stdio_params(env=env)) as client:
        error = await call_error(client, "screenshot")
        assert "does not match" in error and "refused" in error
        error = await call_error(client, "run_code", language="bash", code="echo hi")
        assert "does not match" in error


async def test_screen_info_names_the_machine_not_this_hosts_display(
    sshd: RunningSshd, xdisplay: VirtualDisplay
) -> None:
    env = serve_env(sshd, xdisplay.name, DISPLAY=":219")  # this host's DISPLAY, no X server: never the machine's
    async with Client(stdio_params(env=env)) as client:
        info = await call_ok(client, "screen_info", space="screen")
    machine = {key: info[key] for key in ("backend", "url", "platform", "display")}
    assert machine == {"backend": "ssh", "url": sshd.url, "platform": "linux", "display": xdisplay.name}
    assert (info["screen_rect"]["width"], info["screen_rect"]["height"]) == SCREEN


def test_doctor_logs_in_starts_the_agent_and_refuses_a_wrong_host_key_with_the_fix(
    sshd: RunningSshd, xdisplay: VirtualDisplay, tmp_path: Path
) -> None:
    env = serve_env(sshd, xdisplay.name, OSWORLD_USER_RECORD=str(tmp_path / "none"))
    status, found = run_doctor(env)
    assert status == 0, found
    assert found["remote machine (connection)"]["status"] == "ok"
    agent = found["remote machine (agent)"]
    assert agent["status"] == "ok" and f"linux, screen {SCREEN[0]}x{SCREEN[1]}" in agent["detail"]
    assert {name: found[name]["status"] for name in LOCAL_ONLY} == dict.fromkeys(LOCAL_ONLY, "skip")
    other = keygen(tmp_path / "other_host_key").split()
    wrong = tmp_path / "known_hosts"
    wrong.write_text(f"[127.0.0.1]:{sshd.port} {other[0]} {other[1]}\n")
    status, found = run_doctor({**env, "SYMPHONY_DESKTOP__SSH_KNOWN_HOSTS": str(wrong)})
    connection = found["remote machine (connection)"]
    assert status == 3 and connection["status"] == "fail" and "does not match" in connection["detail"]
    assert connection["fix"] == (
        f"compare `ssh-keyscan -p {sshd.port} 127.0.0.1` with the machine's own key, then put its line in {wrong}"
    )
    assert found["remote machine (agent)"]["status"] == "skip"


def test_an_agent_that_cannot_start_says_why(sshd: RunningSshd) -> None:
    machine = SshMachine(sshd.url, sshd.known_hosts, sshd.key_file, "/usr/bin/python3", ":199")  # no such display
    with pytest.raises(DisplayUnavailableError, match=r"the agent did not start on .*DISPLAY :199.*:199"):
        machine.hello()
    machine.close()


def test_a_bad_url_is_refused_before_anything_starts() -> None:
    from symphony_mcp.config import DesktopSettings

    with pytest.raises(ValueError, match=r"ssh://user@host\[:port\]"):
        DesktopSettings(backend="ssh", url="mac-mini.local")
    with pytest.raises(DisplayUnavailableError, match="no known_hosts file"):
        SshMachine("ssh://me@127.0.0.1:1", Path("/nonexistent/known_hosts")).hello()
