"""Remote machines are not trusted: what an OSWorld controller or an SSH agent answers is bounded and checked.

Each attack comes over the real wire: the OSWorld stand-in (testkit/osworld_controller) answering a hostile tree or a
screenshot without end to `symphony-mcp serve` on the OSWorld backend, driven by the real MCP client; a "python" on a
real sshd's machine that answers the agent's protocol out of bounds to the SSH backend's own connection. Every one
ends in a clear error, bounded in time and memory, and the server goes on serving.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest
from mcp import Client

from symphony_mcp.desktop.remote.ssh_machine import SshMachine
from symphony_mcp.desktop.virtual_display import VirtualDisplay
from symphony_mcp.elements.osworld_tree import NAMESPACES
from symphony_mcp.errors import RemoteActionError
from symphony_mcp.limits import MAX_REMOTE_ANSWER, MAX_REMOTE_LINE
from testkit.mcp_calls import call_error, call_ok
from testkit.osworld_controller.app import Faults
from testkit.osworld_controller.process import RunningController, running_controller
from testkit.server_process import base_env, stdio_params
from testkit.sshd import RunningSshd, running_sshd, sshd_unavailable

pytestmark = pytest.mark.anyio

_XMLNS = " ".join(f'xmlns:{prefix}="{uri}"' for prefix, uri in NAMESPACES.items())


def showing(tag: str, name: str, box: tuple[int, int, int, int], inner: str = "") -> str:
    x, y, w, h = box
    return (
        f'<{tag} name="{name}" st:showing="true" st:visible="true" cp:screencoord="({x}, {y})" '
        f'cp:size="({w}, {h})">{inner}</{tag}>'
    )


def tree(window_inner: str, doctype: str = "") -> str:
    window = showing("frame", "Hostile", (0, 0, 800, 600), window_inner)
    return f'{doctype}<desktop-frame {_XMLNS}><application name="hostile-app">{window}</application></desktop-frame>'


@pytest.fixture
def hostile_vm(request: pytest.FixtureRequest, xdisplay: VirtualDisplay, tmp_path: Path) -> Iterator[RunningController]:
    with running_controller(tmp_path / "vm-home", request.param) as controller:
        yield controller


def connected(vm: RunningController) -> Client:
    return Client(stdio_params(env=base_env(SYMPHONY_DESKTOP__BACKEND="osworld", SYMPHONY_DESKTOP__URL=vm.url)))


def tree_file(tmp_path: Path, text: str) -> str:
    path = tmp_path / "tree.xml"
    path.write_text(text)
    return str(path)


async def test_a_tree_that_amplifies_entities_is_refused_and_the_server_lives(
    xdisplay: VirtualDisplay, tmp_path: Path
) -> None:
    lol = "".join(f'<!ENTITY l{i} "{f"&l{i - 1};" * 10 if i else "lol"}">' for i in range(10))
    hostile = tree(showing("push-button", "&l9;", (10, 10, 50, 20)), f"<!DOCTYPE desktop-frame [{lol}]>")
    with running_controller(tmp_path / "vm-home", Faults(accessibility_file=tree_file(tmp_path, hostile))) as vm:
        async with connected(vm) as client:
            error = await call_error(client, "elements")
            assert "accessibility tree is not XML" in error and "amplification" in error, error
            await call_ok(client, "screenshot")  # the server lives on


async def test_a_tree_with_an_external_entity_reads_no_file(xdisplay: VirtualDisplay, tmp_path: Path) -> None:
    secret = tmp_path / "secret.txt"
    secret.write_text("host-secret-42")
    doctype = f'<!DOCTYPE desktop-frame [<!ENTITY x SYSTEM "file://{secret}">]>'
    hostile = tree(showing("push-button", "&x;", (10, 10, 50, 20)), doctype)
    with running_controller(tmp_path / "vm-home", Faults(accessibility_file=tree_file(tmp_path, hostile))) as vm:
        async with connected(vm) as client:
            error = await call_error(client, "elements")
            assert "not XML" in error and "host-secret-42" not in error, error


async def test_a_tree_nested_past_pythons_recursion_limit_is_read_and_says_it_was_cut(
    xdisplay: VirtualDisplay, tmp_path: Path
) -> None:
    depth = 20_000  # far past sys.getrecursionlimit()
    nested = showing("panel", "p", (0, 0, 800, 600)).replace("</panel>", "") * depth + "</panel>" * depth
    hostile = tree(showing("push-button", "Reachable", (10, 10, 50, 20)) + nested)
    with running_controller(tmp_path / "vm-home", Faults(accessibility_file=tree_file(tmp_path, hostile))) as vm:
        async with connected(vm) as client:
            result = await call_ok(client, "elements", space="screen", max=1000)
            assert [e["name"] for e in result["elements"]][:1] == ["Reachable"]
            assert result["cut"] == "depth", result["cut"]


async def test_a_screenshot_without_end_is_refused_at_the_bound(xdisplay: VirtualDisplay, tmp_path: Path) -> None:
    with running_controller(tmp_path / "vm-home", Faults(screenshot_flood=True)) as vm:
        async with connected(vm) as client:
            error = await call_error(client, "screenshot")
            assert "GET /screenshot" in error and f"more than {MAX_REMOTE_ANSWER:,} bytes" in error, error
            assert (await call_ok(client, "list_windows"))["windows"] is not None  # the server lives on


# --- an SSH machine whose agent answers out of its protocol ---------------------------------------------------

# A "python" for the machine: it answers the agent's hello as the agent does, then every request as `MODE` says.
_HOSTILE_AGENT = """\
#!/usr/bin/python3
import json, os, sys
mode = {mode!r}
out = sys.stdout.buffer
for line in sys.stdin.buffer:
    request = json.loads(line)
    if request["op"] == "hello":
        out.write(json.dumps({{"ok": True, "platform": "linux", "screen": [640, 480], "pid": os.getpid()}}).encode())
        out.write(b"\\n")
    elif mode == "long-line":
        out.write(b'{{"ok": true, "pad": "' + b"x" * {line_bytes} + b'"}}\\n')
    elif mode == "huge-bytes":
        out.write(json.dumps({{"ok": True, "bytes": {huge}}}).encode() + b"\\n")
    else:
        out.write(b"this is not json\\n")
    out.flush()
"""


@pytest.fixture
def sshd(xdisplay: VirtualDisplay) -> Iterator[RunningSshd]:
    if sshd_unavailable() is not None:
        pytest.skip(str(sshd_unavailable()))
    with running_sshd() as server:
        yield server


@pytest.mark.parametrize(
    ("mode", "said"),
    [
        ("long-line", f"longer than {MAX_REMOTE_LINE:,} bytes"),
        ("huge-bytes", "out of its protocol"),
        ("not-json", "not JSON"),
    ],
)
def test_an_agent_answering_out_of_bounds_is_refused_and_dropped(
    sshd: RunningSshd, xdisplay: VirtualDisplay, mode: str, said: str
) -> None:
    script = sshd.home / f"hostile-{mode}"
    script.write_text(_HOSTILE_AGENT.format(mode=mode, line_bytes=2 * MAX_REMOTE_LINE, huge=2**40))
    script.chmod(0o755)
    machine = SshMachine(sshd.url, sshd.known_hosts, sshd.key_file, python=str(script), display=xdisplay.name)
    try:
        assert machine.hello().platform == "linux"
        with pytest.raises(RemoteActionError) as refused:
            machine.request({"op": "cursor"}, "reading the cursor", read=True)
        assert said in str(refused.value) and "connects again" in str(refused.value), refused.value
        assert machine.hello().platform == "linux"  # connected again, with a fresh agent
    finally:
        machine.close()
