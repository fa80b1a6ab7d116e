"""The WAA backend against a real stand-in of WindowsAgentArena's server (testkit/waa_server) on the tests' Xvfb.

First the stand-in is held to WAA's contract with the requests WAA's own client sends (its `PythonController`
cannot run here: no copy of its source is on this machine, and it hard-codes port 5000; the payloads are built as it
builds them). Then `symphony-mcp serve` on the WAA backend, spawned over stdio without any display of its own, acts
on that "VM" through the real MCP client: clicks land, Unicode arrives, screenshots map back, code runs on the VM,
failures are reported failed, and `/cursor_position`'s 500 does no harm.
The Windows-only paths (SendInput typing, user32 windows, the UIA tree, WAA's Windows check routes) are not run here.
"""

from __future__ import annotations

import asyncio
import io
import time
from collections.abc import AsyncIterator, Iterator
from pathlib import Path

import httpx
import pytest
from mcp import Client
from PIL import Image

from symphony_mcp.desktop.remote import waa_code
from symphony_mcp.desktop.remote.waa import WaaDesktop
from symphony_mcp.desktop.remote.waa_controller import WaaController
from symphony_mcp.desktop.virtual_display import VirtualDisplay
from symphony_mcp.elements.osworld_source import OsworldTreeSource
from symphony_mcp.elements.waa_tree import WAA_NO_ACTIONS, osworld_shaped
from symphony_mcp.errors import InvalidInputError, RemoteActionError
from symphony_mcp.imaging.geometry import Point
from testkit.desktop_apps import gtk_probe
from testkit.display import SCREEN
from testkit.doctor import run_doctor
from testkit.mcp_calls import call_error, call_ok, run_code
from testkit.osworld_controller.process import VM_MARKER
from testkit.remote_round import click_type_round, drag_scroll_round
from testkit.server_process import base_env, stdio_params
from testkit.tk_probe import TkProbe
from testkit.waa_server.process import RunningWaaServer, running_waa_server
from testkit.waiting import wait_for

pytestmark = pytest.mark.anyio

# WAA's PythonController.execute_python_command: `python -c` with this prefix, through /execute.
WAA_CLIENT_PREFIX = "import pyautogui; import time; pyautogui.FAILSAFE = False; {command}"


@pytest.fixture
def vm(xdisplay: VirtualDisplay, tmp_path: Path) -> Iterator[RunningWaaServer]:
    with running_waa_server(tmp_path / "vm-home") as server:
        yield server


@pytest.fixture
async def remote(vm: RunningWaaServer) -> AsyncIterator[Client]:
    env = base_env(SYMPHONY_DESKTOP__BACKEND="waa", SYMPHONY_DESKTOP__URL=vm.url)
    async with Client(stdio_params(env=env)) as client:
        yield client


def waa_client_command(vm: RunningWaaServer, command: str) -> dict:
    payload = {"command": ["python", "-c", WAA_CLIENT_PREFIX.format(command=command)], "shell": False}
    answer = httpx.post(f"{vm.url}/execute", json=payload, timeout=90)
    assert answer.status_code == 200, answer.text
    return answer.json()  # type: ignore[no-any-return]


# --- the stand-in speaks WAA's protocol --------------------------------------------------------------------------


def test_waa_clients_requests_read_and_act_on_the_stand_in(vm: RunningWaaServer, tk_probe: TkProbe) -> None:
    assert httpx.get(f"{vm.url}/probe", timeout=10).status_code == 200
    assert httpx.get(f"{vm.url}/platform", timeout=10).text == "Linux"
    assert httpx.post(f"{vm.url}/screen_size", timeout=10).json() == {"width": SCREEN[0], "height": SCREEN[1]}
    shot = Image.open(io.BytesIO(httpx.get(f"{vm.url}/screenshot", timeout=30).content))
    assert shot.size == SCREEN
    x, y = tk_probe.centre("button")
    assert waa_client_command(vm, f"pyautogui.click(button='left', x={x}, y={y})")["returncode"] == 0
    tk_probe.wait(lambda s: s["clicks"] == 1)
    failed = waa_client_command(vm, "pyautogui.press(undefined_name)")  # 200, the failure in the returncode
    assert failed["status"] == "success" and failed["returncode"] == 1 and "NameError" in failed["error"]
    code = httpx.post(f"{vm.url}/execute_windows", json={"command": f"pyautogui.moveTo({x}, {y + 40})"}, timeout=90)
    assert code.status_code == 500 and "pyautogui" in code.json()["message"]  # not imported in exec's globals
    time.sleep(0.6)  # past the double-click interval: the next click is a click of its own, not the first one's double
    code = httpx.post(
        f"{vm.url}/execute_windows", json={"command": f"import pyautogui; pyautogui.click({x}, {y})"}, timeout=90
    )
    assert code.json() == {"status": "success"}
    tk_probe.wait(lambda s: s["clicks"] == 2)
    said_error = httpx.post(f"{vm.url}/execute_windows", json={"command": "print('an Error here')"}, timeout=30)
    assert said_error.status_code == 500  # what the code printed held "error"
    navi = httpx.post(f"{vm.url}/execute_windows", json={"command": "computer.mouse.single_click()"}, timeout=30)
    assert navi.status_code == 500 and "Navi objects are not part of this stand-in" in navi.json()["message"]


def test_the_stand_ins_quirks_are_upstreams(vm: RunningWaaServer) -> None:
    assert httpx.get(f"{vm.url}/cursor_position", timeout=10).status_code == 500  # always, as upstream
    (vm.home / "Documents" / "draft.txt").write_text("x", encoding="utf-8")
    check = {"file_name": "draft.txt", "path": str(vm.home / "Documents")}
    assert httpx.post(f"{vm.url}/file_exists", json=check, timeout=10).status_code == 200
    check["file_name"] = "missing.txt"
    assert httpx.post(f"{vm.url}/file_exists", json=check, timeout=10).status_code == 400  # "no" is HTTP 400
    launched = httpx.post(f"{vm.url}/setup/launch", json={"command": ["touch", "made-by-launch"]}, timeout=10)
    assert launched.status_code == 200
    wait_for(lambda: not (vm.home / "made-by-launch").exists(), timeout=2)  # the shell dropped the list's argument
    upload = httpx.post(
        f"{vm.url}/setup/upload", data={"file_path": "~/no/such/folder/a.txt"}, files={"file_data": b"x"}, timeout=10
    )
    assert upload.status_code == 500  # upstream's file.save makes no folder
    assert httpx.post(f"{vm.url}/revert_to_snapshot", timeout=10).status_code == 501
    uia = httpx.post(f"{vm.url}/check_if_timer_started", json={}, timeout=10)
    assert uia.status_code == 500 and "needs Windows" in uia.json()["message"]


def test_the_client_says_yes_no_and_failed(vm: RunningWaaServer) -> None:
    controller = WaaController(vm.url, 10)
    assert controller.probe()
    assert controller.exists("/folder_exists", {"folder_name": "Documents", "path": str(vm.home)})
    assert not controller.exists("/folder_exists", {"folder_name": "Nowhere", "path": str(vm.home)})
    assert controller.ask("answer = {'sum': 6 * 7}", "adding") == {"sum": 42}
    with pytest.raises(RemoteActionError, match=r"dividing failed on .*division by zero"):
        controller.run("1 / 0", "dividing")
    assert controller.cursor() == tuple(controller.ask("import pyautogui\nanswer = list(pyautogui.position())", "x"))
    controller.close()


def test_a_failed_pointer_action_is_reported_failed(vm: RunningWaaServer) -> None:
    desktop = WaaDesktop(WaaController(vm.url, 10), 0, 0.08)
    with pytest.raises(RemoteActionError, match=r"side click failed on .*button argument"):
        desktop.click(Point(x=10, y=10), "side", 1, ["shift"])  # type: ignore[arg-type]  # pyautogui refuses it
    with pytest.raises(InvalidInputError, match="unknown key"):  # pyautogui would drop it silently: refused first
        desktop.normalize_keys(["no-such-key"])
    desktop.click(Point(x=10, y=10), "left", 1, [])  # the server is fine afterwards
    assert desktop.cursor() == Point(x=10, y=10)


# --- symphony-mcp on the WAA backend, through the MCP client ---------------------------------------------------


async def test_screenshot_click_and_keys_act_on_the_vm(remote: Client, tk_probe: TkProbe) -> None:
    await click_type_round(remote, tk_probe, 'héllo → 日本 a<b>c ñ € ✓ "quoted" ~`{}|?')  # cursor: no /cursor_position
    info = await call_ok(remote, "screen_info", space="screen")
    assert (info["backend"], info["platform"], info["display"]) == ("waa", "linux", None)


async def test_files_move_to_and_from_the_vm(remote: Client, vm: RunningWaaServer) -> None:
    up = await call_ok(remote, "upload_file", dest="~/Documents/new folder/note.txt", content="héllo → 日本")
    assert (vm.home / "Documents" / "new folder" / "note.txt").read_text(encoding="utf-8") == "héllo → 日本"
    down = await call_ok(remote, "download_file", src=up["path"])
    assert (down["path"], down["text"], down["sha256"]) == (up["path"], "héllo → 日本", up["sha256"])


async def test_drag_and_scroll_act_on_the_vm(remote: Client, tk_probe: TkProbe) -> None:
    await drag_scroll_round(remote, tk_probe)


async def test_windows_and_apps_are_the_vms(remote: Client, tk_probe: TkProbe) -> None:
    windows = (await call_ok(remote, "list_windows"))["windows"]
    probe = next(w for w in windows if w["title"] == "Symphony Probe")
    assert probe["app"] == "Tk" and probe["active"] is True
    launched = await call_ok(remote, "open_app", target="xterm -title 'VM Term'")
    assert launched["pid"] > 0
    term = None
    for _ in range(100):
        term = next((w for w in (await call_ok(remote, "list_windows"))["windows"] if w["title"] == "VM Term"), None)
        if term is not None:
            break
        await asyncio.sleep(0.1)
    assert term is not None
    focused = await call_ok(remote, "focus_window", window_id=probe["id"])
    assert focused["active_window_after"]["title"] == "Symphony Probe"
    await call_ok(remote, "close_window", window_id=term["id"])
    for _ in range(100):
        if all(w["title"] != "VM Term" for w in (await call_ok(remote, "list_windows"))["windows"]):
            break
        await asyncio.sleep(0.1)
    else:
        raise AssertionError("close_window left the VM's xterm open")
    error = await call_error(remote, "open_app", target="no-such-program-on-the-vm --flag")
    assert "exit status 127: no such program on this machine" in error


async def test_code_runs_on_the_vm_never_on_the_host(remote: Client, vm: RunningWaaServer) -> None:
    assert VM_MARKER not in base_env()  # the server's environment has no marker: only the VM's does
    ran = await run_code(remote, "python", f"import os; print(os.environ['{VM_MARKER}'], os.getcwd())")
    assert ran["stdout"].split() == [vm.marker, str(vm.home / "symphony-code")] and ran["confinement"] == "remote"
    wrote = await run_code(remote, "bash", "printf 'from the vm' > ~/made.txt; exit 3")
    assert wrote["exit_code"] == 3  # a failed block is reported failed
    assert (vm.home / "made.txt").read_text() == "from the vm"
    slow = await run_code(remote, "python", "import time; time.sleep(5)", timeout_s=1)
    assert slow["killed"] is True and slow["kill_reason"] == "timeout"
    assert not list(vm.home.glob(".symphony-block-*"))  # every block's file is removed


def test_doctor_checks_the_waa_machine_and_fails_with_the_fix_once_it_stops(vm: RunningWaaServer) -> None:
    env = base_env(SYMPHONY_DESKTOP__BACKEND="waa", SYMPHONY_DESKTOP__URL=vm.url)
    status, found = run_doctor(env)
    controller, programs = found["remote machine (controller)"], found["remote machine (programs)"]
    assert controller["status"] == "ok" and f"linux, screen {SCREEN[0]}x{SCREEN[1]}" in controller["detail"], found
    assert programs["status"] == "ok" and "/execute_windows" in programs["detail"]
    vm.process.terminate()
    vm.process.wait(timeout=10)
    status, found = run_doctor(env)
    controller = found["remote machine (controller)"]
    assert status == 3 and controller["status"] == "fail" and "cannot be reached" in controller["detail"]
    assert controller["fix"].startswith("start the VM and WAA's server")


def test_the_waa_backend_without_a_url_is_refused_saying_which_setting(monkeypatch: pytest.MonkeyPatch) -> None:
    from pydantic import ValidationError

    from symphony_mcp.config import Settings

    monkeypatch.setenv("SYMPHONY_DESKTOP__BACKEND", "waa")
    with pytest.raises(ValidationError, match=r"desktop\.backend 'waa' needs desktop\.url"):
        Settings()
    monkeypatch.setenv("SYMPHONY_DESKTOP__URL", "http://20.20.20.21:5000")
    assert Settings().desktop.backend == "waa"


# A tree in the shape WAA's server writes with pywinauto's UIA backend (`_create_pywinauto_node`): its namespace
# URIs, window classes as tags, wrapper types in win:class, st:visible, boxes always. Made here: no Windows to read.
UIA_TREE = """<desktop xmlns:st="uri:deskat:state.at-spi.gnome.org" xmlns:cp="uri:deskat:component.at-spi.gnome.org"
 xmlns:win="uri:deskat:uia.windows.microsoft.org">
 <notepad name="draft.txt - Notepad" st:enabled="true" st:visible="true" st:active="true"
  cp:screencoord="(100, 80)" cp:size="(800, 600)"
  win:class="{ui}WindowWrapper{end}">
  <richeditd2dpt name="Text editor" st:enabled="true" st:visible="true" st:editable="true"
   cp:screencoord="(108, 140)" cp:size="(784, 500)"
   win:class="{ui}EditWrapper{end}">hello</richeditd2dpt>
  <button name="Save" st:enabled="true" st:visible="true"
   cp:screencoord="(120, 100)" cp:size="(60, 24)"
   win:class="{ui}ButtonWrapper{end}"/>
  <button name="Hidden" st:enabled="true" st:visible="false"
   cp:screencoord="(0, 0)" cp:size="(60, 24)"
   win:class="{ui}ButtonWrapper{end}"/>
 </notepad>
</desktop>""".format(ui="&lt;class 'pywinauto.controls.uia_controls.", end="'&gt;")


def test_a_waa_uia_tree_reads_as_elements_of_its_windows() -> None:
    source = OsworldTreeSource(lambda: osworld_shaped(UIA_TREE), WAA_NO_ACTIONS)
    nodes = source.request({"op": "read", "max_nodes": 100}, 5)["nodes"]
    found = {(n["role"], n["name"]): n for n in nodes}
    assert set(found) == {("frame", "draft.txt - Notepad"), ("text", "Text editor"), ("push button", "Save")}
    assert found[("push button", "Save")]["box"] == [120, 100, 60, 24]
    assert found[("text", "Text editor")]["editable_text"] and found[("text", "Text editor")]["text"] == "hello"
    assert {n["app"] for n in nodes} == {n["window"] for n in nodes} == {"draft.txt - Notepad"}
    assert source.request({"op": "act", "ref": 0}, 5)["why"] == WAA_NO_ACTIONS


async def test_elements_are_the_machines_own_and_act_through_its_pointer(remote: Client, tmp_path: Path) -> None:
    """On a Linux WAA server `/accessibility` is the AT-SPI walk (the stand-in's: OSWorld's XML)."""
    with gtk_probe(tmp_path, "Tree Probe") as gtk:
        in_screen = await call_ok(remote, "find_element", name="ONE", role="push button", space="screen")
        assert in_screen["matches"][0]["element"]["box"] == gtk.state()["widgets"]["ONE"]
        found = await call_ok(remote, "find_element", name="ONE", role="push button")
        one = found["matches"][0]
        record = await call_ok(remote, "click", element=one["element"]["id"], frame_id=found["frame_id"])
        gtk.wait(lambda s: s["clicks"]["ONE"] == 1)
        assert record["grounding"][0]["via"].startswith("pointer at its centre: WAA's server offers no")


def test_the_windows_only_code_is_python_that_compiles() -> None:
    """What runs only in a Windows server (no Windows here to run it on) is at least valid Python, values inlined."""
    text = 'héllo → 日本 "q" {x} \U0001f600\n'
    sources = {
        "type": waa_code.type_unicode(text, 0.002),
        "windows": waa_code.WINDOWS,
        "activate": waa_code.activate_window(0x1E0042),
        "close": waa_code.close_window(0x1E0042),
        "start": waa_code.start('start "" "C:\\Users\\Docker\\a b.txt"'),
        "scroll": waa_code.held(["ctrl"], waa_code.scroll((5, 6), 0.05, -3, 2, "win32")),
    }
    for name, source in sources.items():
        compile(source, f"<waa {name}>", "exec")
    assert f"_text = {text!r}\n" in sources["type"]  # the text as a literal, never as code
