"""The OSWorld backend against a real stand-in of OSWorld's controller (testkit/osworld_controller) on the tests' Xvfb.

First the stand-in is held to OSWorld's own client (`PythonController` from the desktop-env wheel): it answers what
that client expects, and it has upstream's faults. Then `symphony-mcp serve` on the OSWorld backend, spawned over
stdio without any display of its own, acts on that "VM" through the real MCP client: clicks land, Unicode arrives,
screenshots map back, code runs on the VM, files move, and the faults do no harm.
"""

from __future__ import annotations

import asyncio
import base64
import contextlib
import io
import threading
from collections.abc import AsyncIterator, Iterator
from pathlib import Path

import httpx
import pytest
from desktop_env.controllers.python import PythonController
from mcp import Client
from PIL import Image

from symphony_mcp.bench.osworld.metrics import load_metric
from symphony_mcp.desktop.remote.osworld import OsworldDesktop
from symphony_mcp.desktop.remote.osworld_controller import OsworldController
from symphony_mcp.desktop.virtual_display import VirtualDisplay
from symphony_mcp.doctor import LOCAL_ONLY
from symphony_mcp.errors import RemoteActionError
from testkit.desktop_apps import gtk_probe
from testkit.display import SCREEN
from testkit.doctor import run_doctor
from testkit.mcp_calls import call_error, call_ok, run_code
from testkit.osworld_controller.app import Faults
from testkit.osworld_controller.process import VM_MARKER, RunningController, running_controller
from testkit.remote_round import click_type_round, drag_scroll_round
from testkit.server_process import base_env, stdio_params
from testkit.tk_probe import TkProbe
from testkit.waiting import wait_for

pytestmark = pytest.mark.anyio

# OSWorld's own metric over an accessibility tree, loaded as the OSWorld adapter loads it.
check_accessibility_tree = load_metric("check_accessibility_tree")
COUNTER = "echo ran >> ~/runs.txt"  # a script whose every run leaves a line


@pytest.fixture
def vm(xdisplay: VirtualDisplay, tmp_path: Path) -> Iterator[RunningController]:
    with running_controller(tmp_path / "vm-home") as controller:
        yield controller


def faulty_vm(tmp_path: Path, **faults: bool) -> contextlib.AbstractContextManager[RunningController]:
    return running_controller(tmp_path / "vm-home", Faults(**faults))


@pytest.fixture
async def remote(vm: RunningController) -> AsyncIterator[Client]:
    async with connected(vm) as client:
        yield client


def connected(vm: RunningController) -> Client:
    """The real MCP client to `symphony-mcp serve` on the OSWorld backend; no DISPLAY reaches the server."""
    env = base_env(SYMPHONY_DESKTOP__BACKEND="osworld", SYMPHONY_DESKTOP__URL=vm.url)
    return Client(stdio_params(env=env))


def upstream_client(vm: RunningController) -> PythonController:
    client = PythonController("127.0.0.1", vm.port)
    client.retry_interval = 0  # its 5 s pause between attempts changes nothing here but the wait
    return client


# --- the stand-in speaks OSWorld's protocol -------------------------------------------------------------------


def test_python_controller_reads_and_acts_on_the_stand_in(vm: RunningController, tk_probe: TkProbe) -> None:
    client = upstream_client(vm)
    screenshot = Image.open(io.BytesIO(client.get_screenshot() or b""))
    assert screenshot.size == SCREEN
    assert client.get_vm_screen_size() == {"width": SCREEN[0], "height": SCREEN[1]}
    assert client.get_vm_platform() == "Linux"
    assert client.get_vm_desktop_path() == str(vm.home / "Desktop")
    x, y = tk_probe.centre("button")
    answer = client.execute_python_command(f"pyautogui.click({x}, {y})")
    assert answer is not None and answer["returncode"] == 0
    tk_probe.wait(lambda s: s["clicks"] == 1)
    (vm.home / "Desktop" / "note.txt").write_text("on the vm", encoding="utf-8")
    assert client.get_file("~/Desktop/note.txt") == b"on the vm"
    assert client.get_file("~/Desktop/missing.txt") is None
    tree = client.get_vm_directory_tree(str(vm.home / "Desktop"))
    assert tree is not None and [child["name"] for child in tree["children"]] == ["note.txt"]
    ran = client.run_python_script("import os; print(os.environ['HOME'])")
    assert ran is not None and ran["output"].strip() == str(vm.home) and ran["return_code"] == 0


def test_python_controller_reads_the_stand_ins_accessibility_tree(vm: RunningController, tmp_path: Path) -> None:
    with gtk_probe(tmp_path, "Tree Probe"):
        xml = upstream_client(vm).get_accessibility_tree()
    rules = [{"xpath": '//frame[@name="Tree Probe"]//push-button[@name="Save file"][@st:showing="true"]'}]
    assert xml is not None and check_accessibility_tree(xml, rules) == 1.0, (xml or "")[:2000]


def test_setup_routes_take_setup_controllers_payloads(vm: RunningController) -> None:
    """The JSON SetupController (desktop-env) sends for launch, execute, activate_window and close_window (its module
    imports requests_toolbelt, which is not installed here, so the payloads are sent as it builds them)."""
    backend = OsworldDesktop(OsworldController(vm.url, 10), 0, 0.08)

    def titles() -> list[str]:
        return [window.title for window in backend.windows()]

    def setup(route: str, **payload: object) -> httpx.Response:
        answer = httpx.post(f"{vm.url}/setup/{route}", json=payload, timeout=30)
        assert answer.status_code == 200, answer.text
        return answer

    setup("launch", command=["xterm", "-title", "Setup Term"], shell=False)
    wait_for(lambda: "Setup Term" in titles())
    setup("launch", command="xterm -title 'Other Term'", shell=True)
    wait_for(lambda: "Other Term" in titles())
    setup("activate_window", window_name="Setup Term", strict=True, by_class=False)
    wait_for(lambda: (active := backend.active_window()) is not None and active.title == "Setup Term")
    ran = setup("execute", command=["bash", "-c", "echo $HOME"], shell=False).json()
    assert ran["output"].strip() == str(vm.home) and ran["returncode"] == 0
    size = httpx.post(f"{vm.url}/window_size", data={"app_class_name": "xterm"}, timeout=10).json()
    assert size["width"] > 100 and size["height"] > 100
    setup("close_window", window_name="Setup Term", strict=True, by_class=False)
    setup("close_window", window_name="Other Term", strict=True, by_class=False)
    wait_for(lambda: not {"Setup Term", "Other Term"} & set(titles()))
    setup("close_window", window_name="No Such Window", strict=True, by_class=False)  # 200 all the same, as upstream


def test_a_failed_action_answers_200_with_its_returncode(vm: RunningController) -> None:
    answer = upstream_client(vm).execute_python_command("pyautogui.press(undefined_name)")
    assert answer is not None and answer["status"] == "success" and answer["returncode"] == 1
    assert "NameError" in answer["error"]


def test_run_bash_script_fault_makes_upstream_run_it_three_times_and_the_backend_once(
    tmp_path: Path, xdisplay: VirtualDisplay
) -> None:
    with faulty_vm(tmp_path, bash_script_500=True) as vm:
        answer = upstream_client(vm).run_bash_script(COUNTER)
        assert answer is not None and answer["returncode"] == -1  # it gave up after its retries ...
        runs = vm.home / "runs.txt"
        assert runs.read_text().splitlines() == ["ran"] * 3  # ... having run the script every time
        runs.unlink()
        result = OsworldController(vm.url, 10).execute(["bash", "-lc", COUNTER])
        assert result.ok and runs.read_text().splitlines() == ["ran"]


def test_parallel_calls_wedge_the_stand_in_and_the_backend_serialises_them(
    tmp_path: Path, xdisplay: VirtualDisplay
) -> None:
    with faulty_vm(tmp_path, wedge_when_parallel=True) as vm:
        backend = OsworldController(vm.url, 10)
        answers: list[tuple[int, int]] = []
        threads = [threading.Thread(target=lambda: answers.append(backend.cursor())) for _ in range(6)]
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join(timeout=30)
        assert len(answers) == 6 and backend.screen_size() == SCREEN  # one at a time: the server is still fine
        backend.close()

        started = vm.home / "started"
        command = {"command": ["bash", "-c", f"touch {started}; sleep 2"]}

        def hold() -> None:
            with contextlib.suppress(httpx.HTTPError):  # it never gets its answer: the server is stopped wedged
                httpx.post(vm.url + "/execute", json=command, timeout=30)

        slow = threading.Thread(target=hold)
        slow.start()
        wait_for(started.exists)  # in flight ...
        with pytest.raises(httpx.TimeoutException):  # ... when a second request arrives: both hang
            httpx.get(vm.url + "/cursor_position", timeout=3)
        slow.join(timeout=0)
        with pytest.raises(httpx.TimeoutException):  # wedged for good, as upstream's was
            httpx.post(vm.url + "/screen_size", timeout=3)


def test_the_backend_reports_a_failed_command_whatever_the_http_status(vm: RunningController) -> None:
    backend = OsworldController(vm.url, 10)
    assert backend.execute(["false"]).returncode == 1
    with pytest.raises(RemoteActionError, match="exit status 2"):
        backend.check(["ls", "/no/such/dir"], "listing")
    with pytest.raises(RemoteActionError, match="HTTP 500"):  # a missing program: upstream answers 500
        backend.execute(["no-such-program-on-the-vm"])
    backend.upload("~/Documents/in.bin", b"\x00\x01 bytes")  # files move both ways
    assert (vm.home / "Documents" / "in.bin").read_bytes() == b"\x00\x01 bytes"
    assert backend.download("~/Documents/in.bin") == b"\x00\x01 bytes"
    backend.close()


# --- symphony-mcp on the OSWorld backend, through the MCP client -----------------------------------------------


async def test_screenshot_click_and_keys_act_on_the_vm(remote: Client, tk_probe: TkProbe) -> None:
    await click_type_round(remote, tk_probe, 'héllo → 日本 a<b>c ñ € ✓ "quoted" ~`{}|?')


async def test_drag_and_scroll_act_on_the_vm(remote: Client, tk_probe: TkProbe) -> None:
    await drag_scroll_round(remote, tk_probe)


async def test_windows_are_the_vms(remote: Client, tk_probe: TkProbe) -> None:
    windows = (await call_ok(remote, "list_windows"))["windows"]
    probe = next(w for w in windows if w["title"] == "Symphony Probe")
    assert probe["app"] == "Tk" and probe["active"] is True
    await call_ok(remote, "open_app", target="xterm -title 'VM Term'")
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
    assert "no program no-such-program-on-the-vm on this machine" in error and "exit status 127" in error


async def test_code_runs_on_the_vm_never_on_the_host(remote: Client, vm: RunningController) -> None:
    assert VM_MARKER not in base_env()  # the server's environment has no marker: only the VM's does
    ran = await run_code(remote, "python", f"import os; print(os.environ['{VM_MARKER}'], os.getcwd())")
    assert ran["stdout"].split() == [vm.marker, "/tmp/symphony-code"] and ran["confinement"] == "remote"
    wrote = await run_code(remote, "bash", "printf 'from the vm' > ~/made.txt; exit 3")
    assert wrote["exit_code"] == 3  # a failed block is reported failed
    assert (vm.home / "made.txt").read_text() == "from the vm"
    slow = await run_code(remote, "bash", "sleep 5", timeout_s=1)
    assert slow["killed"] is True and slow["kill_reason"] == "timeout"


def named(result: dict, name: str) -> dict:
    found = [e for e in result["elements"] if e["name"] == name]
    assert len(found) == 1, f"{name!r}: {[(e['role'], e['name']) for e in result['elements']]}"
    return found[0]


async def test_elements_are_the_vms_own_read_from_its_controllers_tree(
    remote: Client, tmp_path: Path, tk_probe: TkProbe
) -> None:
    """The server has no display of its own: the elements come from the VM's /accessibility XML, with the boxes GTK
    gives its widgets on the VM; a box from the result, passed unchanged to click, lands on its button; the VM's
    Tk window, which has no tree, is named as such."""
    with gtk_probe(tmp_path, "Tree Probe") as gtk:
        tree = await remote.read_resource("screen://accessibility_tree")  # the VM's own XML, as OSWorld reads it
        xml = tree.contents[0].text  # type: ignore[union-attr]
        assert check_accessibility_tree(xml, [{"xpath": '//frame[@name="Tree Probe"]//push-button[@name="ONE"]'}])
        result = await call_ok(remote, "elements", space="screen", window="Tree Probe")
        boxes = gtk.state()["widgets"]
        for name, role in (("Save file", "push button"), ("Cancel", "push button"), ("ONE", "push button"),
                           ("Search box", "text"), ("Section #1", "label")):  # fmt: skip
            element = named(result, name)
            assert (element["role"], element["box"]) == (role, boxes[name]), name
            assert element["window"] == "Tree Probe"
        assert result["cut"] is None and result["total"] == len(result["elements"])
        unread = {w["title"] for w in result["windows_without_tree"]}
        assert "Symphony Probe" in unread and "Tree Probe" not in unread
        box = named(result, "Cancel")["box"]
        await call_ok(remote, "click", x=box["left"] + box["width"] // 2, y=box["top"] + box["height"] // 2,
                      space="screen")  # fmt: skip
        gtk.wait(lambda s: s["clicks"]["Cancel"] == 1)

        shown = await remote.call_tool("elements", {"window": "Tree Probe", "max": 3, "annotate": True})
        marked = Image.open(io.BytesIO(base64.b64decode(shown.content[0].data)))  # type: ignore[union-attr]
        assert marked.width * SCREEN[1] == marked.height * SCREEN[0]  # the VM's whole screen, its elements marked
        text = shown.content[-1].text  # type: ignore[union-attr]
        assert len(text.splitlines()) == 4 and "3 of" in text.splitlines()[0], text  # a heading and 3 lines


async def test_acting_by_element_id_on_the_vm_goes_through_the_pointer(remote: Client, tmp_path: Path) -> None:
    with gtk_probe(tmp_path, "Tree Probe") as gtk:
        found = await call_ok(remote, "find_element", name="ONE", role="push button")
        one = found["matches"][0]
        assert one["exact"] and one["element"]["name"] == "ONE"
        record = await call_ok(remote, "click", element=one["element"]["id"], frame_id=found["frame_id"])
        assert gtk.wait(lambda s: s["clicks"]["ONE"] == 1)["clicks"] == {"Save file": 0, "Cancel": 0, "ONE": 1}
        assert record["grounding"][0]["via"].startswith("pointer at its centre: the OSWorld controller offers no")
        assert record["points"] == [one["element"]["center"]]

        result = await call_ok(remote, "elements", window="Tree Probe")
        field = named(result, "Search box")
        await call_ok(remote, "type", text="from the vm", element=field["id"], frame_id=result["frame_id"])
        gtk.wait(lambda s: s["entry"] == "from the vm")
    error = await call_error(remote, "click", element=field["id"], frame_id=result["frame_id"])  # the probe quit
    assert f"element {field['id']}" in error and "call elements again" in error


async def test_a_vm_whose_tree_cannot_be_read_gets_the_controllers_reason(
    tmp_path: Path, xdisplay: VirtualDisplay
) -> None:
    with faulty_vm(tmp_path, accessibility_500=True) as vm:
        async with connected(vm) as client:
            error = await call_error(client, "elements")
            assert "GET /accessibility" in error and "HTTP 500" in error and "accessibility bus" in error, error
            await call_ok(client, "screenshot")  # the server lives on


async def test_the_coder_says_why_it_does_not_act_on_the_vm(remote: Client) -> None:
    error = await call_error(remote, "code_agent", task="count the files in ~")
    assert "run_code runs blocks on the remote machine" in error


async def test_parallel_tool_calls_do_not_wedge_the_vm(tmp_path: Path, xdisplay: VirtualDisplay) -> None:
    with faulty_vm(tmp_path, wedge_when_parallel=True, bash_script_500=True) as vm:
        async with connected(vm) as client:
            calls = [
                call_ok(client, "screenshot"),
                run_code(client, "bash", COUNTER),
                call_ok(client, "list_windows"),
                call_ok(client, "move_pointer", x=50, y=60, space="screen"),
                run_code(client, "python", "print(6 * 7)"),
                call_ok(client, "screen_info"),
            ]
            answers = await asyncio.gather(*calls)
            assert answers[4]["stdout"] == "42\n"
        assert (vm.home / "runs.txt").read_text().splitlines() == ["ran"]  # run once
        wait_for(lambda: httpx.get(vm.url + "/cursor_position", timeout=3).json() == [50, 60])


async def test_screen_info_names_the_vm_not_this_hosts_display(vm: RunningController, xdisplay: VirtualDisplay) -> None:
    env = base_env(SYMPHONY_DESKTOP__BACKEND="osworld", SYMPHONY_DESKTOP__URL=vm.url, DISPLAY=xdisplay.name)
    async with Client(stdio_params(env=env)) as client:
        info = await call_ok(client, "screen_info", space="screen")
    machine = {key: info[key] for key in ("backend", "url", "platform", "display")}
    assert machine == {"backend": "osworld", "url": vm.url, "platform": "linux", "display": None}  # /platform: Linux
    assert (info["screen_rect"]["width"], info["screen_rect"]["height"]) == SCREEN


def test_doctor_checks_the_vm_and_fails_with_the_fix_once_its_controller_stops(
    vm: RunningController, tmp_path: Path
) -> None:
    env = base_env(
        SYMPHONY_DESKTOP__BACKEND="osworld", SYMPHONY_DESKTOP__URL=vm.url, OSWORLD_USER_RECORD=str(tmp_path / "none")
    )
    status, found = run_doctor(env)
    assert status == 0, found
    controller, programs = found["remote machine (controller)"], found["remote machine (programs)"]
    assert (
        controller["status"] == "ok"
        and f"{vm.url} answers: linux, screen {SCREEN[0]}x{SCREEN[1]}" in controller["detail"]
    )
    assert programs["status"] == "ok" and "xdotool, wmctrl, xprop" in programs["detail"]
    assert {name: found[name]["status"] for name in LOCAL_ONLY} == dict.fromkeys(LOCAL_ONLY, "skip")
    assert "skipped on the osworld backend" in found["display"]["detail"]
    vm.process.terminate()
    vm.process.wait(timeout=10)
    status, found = run_doctor(env)
    controller = found["remote machine (controller)"]
    assert (
        status == 3
        and controller["status"] == "fail"
        and f"the controller at {vm.url} cannot be reached" in controller["detail"]
    )
    assert controller["fix"].startswith("start the VM and its controller")
    assert found["remote machine (programs)"]["status"] == "skip"


def test_the_osworld_backend_without_a_url_is_refused_saying_which_setting(monkeypatch: pytest.MonkeyPatch) -> None:
    from pydantic import ValidationError

    from symphony_mcp.config import Settings

    monkeypatch.setenv("SYMPHONY_DESKTOP__BACKEND", "osworld")
    with pytest.raises(ValidationError, match="SYMPHONY_DESKTOP__URL or --desktop-url"):
        Settings()
    monkeypatch.setenv("SYMPHONY_DESKTOP__URL", "192.168.122.10:5000")  # no scheme
    with pytest.raises(ValidationError, match=r"needs desktop\.url, the controller's http:// URL"):
        Settings()
    monkeypatch.setenv("SYMPHONY_DESKTOP__URL", "http://192.168.122.10:5000")
    assert Settings().desktop.url == "http://192.168.122.10:5000"
    monkeypatch.setenv("SYMPHONY_VIEW__ENABLED", "true")  # the live view shows this host's display only
    with pytest.raises(ValidationError, match="watch that machine with its own viewer"):
        Settings()
