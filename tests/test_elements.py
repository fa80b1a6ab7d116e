"""elements, find_element and acting by element id, over the real MCP client on stdio, on real applications under
Xvfb with the accessibility bus the package's virtual display starts: a GTK 3 window (its own geometry is the
reference), a Tk window (no tree: said so)."""

from __future__ import annotations

import contextlib
import io
import math
import os
import re
import shlex
import signal
import subprocess
import sys
from collections.abc import AsyncIterator, Iterator
from pathlib import Path
from typing import Any

import pytest
from mcp import Client
from mcp.types import ImageContent
from PIL import Image

from symphony_mcp.config import load_settings
from symphony_mcp.desktop.virtual_display import VirtualDisplay
from symphony_mcp.doctor import Check, diagnose
from symphony_mcp.doctor import _accessibility as doctor_accessibility
from symphony_mcp.elements.atspi_process import AtspiProcess, ElementsUnavailableError
from testkit import reflow_page
from testkit.chromium import KIOSK_ARGS, chromium_executable
from testkit.desktop_apps import ProbeApp, gtk_probe
from testkit.mcp_calls import call_error, call_ok
from testkit.reporting_page import ReportingPage, reporting_page

pytestmark = pytest.mark.anyio
TK_PROBE = Path(__file__).parent / "apps" / "tk_probe.py"
MARK_COLOUR = (230, 20, 60)  # vision/annotate.py's box colour


@pytest.fixture
def gtk(xdisplay: VirtualDisplay, tmp_path: Path) -> Iterator[ProbeApp]:
    with gtk_probe(tmp_path, "Gtk Probe") as app:
        yield app


def named(result: dict[str, Any], name: str) -> dict[str, Any]:
    found = [e for e in result["elements"] if e["name"] == name]
    assert len(found) == 1, f"{name!r}: {found}; all: {[(e['role'], e['name']) for e in result['elements']]}"
    return found[0]


async def test_gtk_elements_have_gtk_boxes(stdio_client: Client, gtk: ProbeApp) -> None:
    roles = {"Save file": "push button", "Cancel": "push button", "ONE": "push button", "Search box": "text",
             "Section #1": "label"}  # fmt: skip
    # A window shown is not yet an application on the bus: under load (18) a first read came before GTK registered.
    await _until(
        stdio_client, lambda r: roles.keys() <= {e["name"] for e in r["elements"] if e["window"] == "Gtk Probe"}
    )
    result = await call_ok(stdio_client, "elements", space="screen", window="Gtk Probe")
    boxes = gtk.state()["widgets"]
    for name, role in roles.items():
        element = named(result, name)
        assert element["role"] == role
        assert element["box"] == boxes[name], name
    assert "Gtk Probe" not in {w["title"] for w in result["windows_without_tree"]}
    assert result["cut"] is None


async def test_click_and_type_by_id(stdio_client: Client, gtk: ProbeApp) -> None:
    result = await call_ok(stdio_client, "elements", window="Gtk Probe")  # the latest screenshot's space
    one = named(result, "ONE")
    record = await call_ok(stdio_client, "click", element=one["id"], frame_id=result["frame_id"])
    state = gtk.wait(lambda s: s["clicks"]["ONE"] == 1)
    assert state["clicks"] == {"Save file": 0, "Cancel": 0, "ONE": 1}
    assert record["grounding"][0]["via"] == "accessibility action 'click'"
    assert record["points"] == [one["center"]]

    typed = "Grüße, 世界 ✓ — ok"
    field = named(result, "Search box")
    record = await call_ok(
        stdio_client, "type", text=typed, element=field["id"], overwrite=True, frame_id=result["frame_id"]
    )
    assert gtk.wait(lambda s: s["entry"] == typed)["entry"] == typed
    assert record["grounding"][0]["via"] == "accessibility action 'set_text'"


async def test_an_unchanged_tree_is_not_walked_again_and_a_change_is_seen(stdio_client: Client, gtk: ProbeApp) -> None:
    """GTK creates its accessible objects when first asked, and says so in events: the tree is walked again until
    those have come, then kept while nothing changes; a change (the field's text) is seen on the next read."""
    first = await call_ok(stdio_client, "elements", window="Gtk Probe")
    for _ in range(50):
        again = await call_ok(stdio_client, "elements", window="Gtk Probe")
        if again["unchanged_applications"]:
            break
    assert again["unchanged_applications"] >= 1 and again["elements"] == first["elements"]
    field = named(again, "Search box")
    await call_ok(stdio_client, "type", text="changed", element=field["id"], overwrite=True, frame_id=again["frame_id"])
    gtk.wait(lambda s: s["entry"] == "changed")
    after = await call_ok(stdio_client, "elements", window="Gtk Probe")
    assert named(after, "Search box")["text"] == "changed"


async def test_right_click_by_id_uses_the_pointer_and_says_why(stdio_client: Client, gtk: ProbeApp) -> None:
    result = await call_ok(stdio_client, "elements", window="Gtk Probe")
    cancel = named(result, "Cancel")
    record = await call_ok(stdio_client, "click", element=cancel["id"], count=2, frame_id=result["frame_id"])
    gtk.wait(lambda s: s["clicks"]["Cancel"] == 2)
    assert record["grounding"][0]["via"].startswith("pointer at its centre: a right, middle, repeated")


async def test_find_element_exact_and_approximate(stdio_client: Client, gtk: ProbeApp) -> None:
    found = await call_ok(stdio_client, "find_element", name="save file")
    assert found["matches"][0]["exact"] is True
    assert found["matches"][0]["element"]["name"] == "Save file"
    close = await call_ok(stdio_client, "find_element", name="Save fle")
    assert close["matches"][0]["exact"] is False and close["matches"][0]["element"]["name"] == "Save file"
    record = await call_ok(
        stdio_client, "click", element=found["matches"][0]["element"]["id"], frame_id=found["frame_id"]
    )
    assert record["ok"]
    gtk.wait(lambda s: s["clicks"]["Save file"] == 1)
    message = await call_error(stdio_client, "find_element", name="Launch rockets")
    assert "Closest elements seen" in message


async def test_stale_ids_fail_with_the_documented_message(stdio_client: Client, gtk: ProbeApp) -> None:
    result = await call_ok(stdio_client, "elements", window="Gtk Probe")
    await call_ok(stdio_client, "screenshot")  # a newer frame is the latest: ids of the old one need its frame_id
    message = await call_error(stdio_client, "click", element=named(result, "ONE")["id"])
    assert "valid only for the frame they were read on" in message and "elements again" in message
    gtk.process.terminate()
    gtk.process.wait(timeout=5)
    message = await call_error(stdio_client, "click", element=named(result, "ONE")["id"], frame_id=result["frame_id"])
    assert "no longer there" in message and "call elements again" in message
    assert gtk.state()["clicks"]["ONE"] == 0


async def test_marks_are_drawn_where_the_boxes_are(stdio_client: Client, gtk: ProbeApp) -> None:
    result = await stdio_client.call_tool("elements", {"window": "Gtk Probe", "annotate": True})
    assert not result.is_error, result.content
    structured = result.structured_content
    assert structured is not None
    image = Image.open(io.BytesIO(__import__("base64").b64decode(next(
        c for c in result.content if isinstance(c, ImageContent)).data))).convert("RGB")  # fmt: skip
    listing = result.content[-1].text  # type: ignore[union-attr]
    for name in ("Save file", "Cancel", "ONE"):
        element = named(structured, name)
        box = element["box"]  # in the marked image's pixels: its number sits on a filled label above its top-left
        label = [
            image.getpixel((x, y))
            for x in range(box["left"], box["left"] + 4)
            for y in range(box["top"] - 5, box["top"] - 1)
        ]
        assert sum(_near(p, MARK_COLOUR) for p in label) >= len(label) // 2, (name, box, label)
        assert f'[{element["id"]}] push button "{name}"' in listing
    # the ids hold for the marked image, which is now the latest frame
    await call_ok(stdio_client, "click", element=named(structured, "ONE")["id"])
    gtk.wait(lambda s: s["clicks"]["ONE"] == 1)


async def test_tk_window_is_said_to_have_no_tree(
    stdio_client: Client, xdisplay: VirtualDisplay, tmp_path: Path
) -> None:
    process = subprocess.Popen([sys.executable, str(TK_PROBE), str(tmp_path / "tk.json"), "Tk Probe", "400x300+50+50"])
    try:
        result = await _until(stdio_client, lambda r: any(w["title"] == "Tk Probe" for w in r["windows_without_tree"]))
        assert not [e for e in result["elements"] if e["window"] == "Tk Probe"]
        assert "Tk Probe" in result["content_heading"]
    finally:
        process.terminate()
        process.wait(timeout=5)


async def _until(client: Client, predicate: Any, tries: int = 100) -> dict[str, Any]:
    """elements, read until `predicate` holds for it (the window takes a moment to appear)."""
    for _ in range(tries):
        result = await client.call_tool("elements", {"space": "screen", "max": 1000})
        structured = dict(result.structured_content or {})
        structured["content_heading"] = result.content[-1].text  # type: ignore[union-attr]
        if predicate(structured):
            return structured
        await client.call_tool("wait", {"seconds": 0.1})
    raise AssertionError(f"condition not met; last: {structured}")


def _pixels_covering(rect: dict[str, float]) -> tuple[int, int, int, int]:
    """The whole screen pixels a DOM rectangle (fractional CSS pixels) touches: what the accessibility tree gives."""
    left, top = math.floor(rect["left"]), math.floor(rect["top"])
    right, bottom = math.ceil(rect["left"] + rect["width"]), math.ceil(rect["top"] + rect["height"])
    return left, top, right - left, bottom - top


def _boxes_differing(
    result: dict[str, Any], dom: dict[str, Any], roles: dict[str, str], tolerance: int = 0, listed_only: bool = False
) -> dict[str, Any]:
    """The DOM's marked elements the reading does not list with the DOM's box (each edge within `tolerance` pixels;
    with `listed_only`, only those it lists): name -> (boxes seen, DOM box)."""
    differing = {}
    for name, role in roles.items():
        if name not in dom:
            continue
        seen = [
            (e["box"]["left"], e["box"]["top"], e["box"]["width"], e["box"]["height"])
            for e in result["elements"]
            if e["name"] == name and e["role"] == role
        ]
        want = _pixels_covering(dom[name])
        if listed_only and not seen:
            continue
        if not any(all(abs(a - b) <= tolerance for a, b in zip(box, want, strict=True)) for box in seen):
            differing[name] = (seen, _pixels_covering(dom[name]))
    return differing


def _near(pixel: Any, colour: tuple[int, int, int], tolerance: int = 60) -> bool:
    return all(abs(int(a) - b) <= tolerance for a, b in zip(pixel, colour, strict=True))


async def test_chromium_page_elements_have_the_dom_boxes(stdio_client: Client, tmp_path: Path) -> None:
    """A real page in Chromium started by open_app (which turns its accessibility on): the buttons, field, link
    and heading on a coloured band appear with the DOM's own boxes (kiosk, unscaled: CSS pixels are screen pixels),
    labels OCR confuses are named exactly, a click by id presses the right button and typing by id sets the field
    exactly."""
    chromium = chromium_executable()
    assert chromium is not None, "Chromium is not installed (scripts/install.sh --dev)"
    with reporting_page() as page:
        command = shlex.join([chromium, *KIOSK_ARGS, f"--user-data-dir={tmp_path / 'profile'}", page.url])
        opened = await call_ok(stdio_client, "open_app", target=command, wait_seconds=10)
        try:
            page.wait(lambda s: s.get("ready"))
            roles = {"Save file": "push button", "ONE": "push button", "0l1I": "push button", "Search box": "entry",
                     "Docs link": "link", "Section #1": "heading"}  # fmt: skip
            # The page reports again when the kiosk window reaches its full size: compare with its latest layout.
            result = await _until(stdio_client, lambda r: _boxes_differing(r, page.state["boxes"], roles) == {})
            ids = {e["name"]: e["id"] for e in result["elements"] if e["name"] in roles}
            await call_ok(stdio_client, "click", element=ids["0l1I"], space="screen")
            assert page.wait(lambda s: s["clicks"]["0l1I"] == 1)["clicks"] == {"Save file": 0, "ONE": 0, "0l1I": 1}
            typed = "Grüße, 世界 ✓ — ok"
            await call_ok(stdio_client, "type", text=typed, element=ids["Search box"], overwrite=True, space="screen")
            assert page.wait(lambda s: s["field"] == typed)["field"] == typed
        finally:
            os.kill(opened["pid"], signal.SIGTERM)


@contextlib.asynccontextmanager
async def _reflow_page_open(client: Client, tmp_path: Path) -> AsyncIterator[tuple[ReportingPage, Any]]:
    """The reflow page in kiosk Chromium (started by open_app), and a check that waits until elements lists each
    link the page reports with the DOM's box (compared with the page's latest report: a smooth scroll reports each of
    its frames), failing with the boxes that differ."""
    chromium = chromium_executable()
    assert chromium is not None, "Chromium is not installed (scripts/install.sh --dev)"
    names = {f"Link {i}": f"Link {i}" + (" goes on over two lines" if i % 3 == 0 else "")
             for i in range(reflow_page.LINKS)}  # fmt: skip
    links = dict.fromkeys(names.values(), "link")
    with reporting_page(reflow_page.PAGE) as page:
        command = shlex.join([chromium, *KIOSK_ARGS, f"--user-data-dir={tmp_path / 'profile'}", page.url])
        opened = await call_ok(client, "open_app", target=command, wait_seconds=10)

        def differing(result: dict[str, Any], tolerance: int, listed_only: bool) -> dict[str, Any]:
            expected = {names[key]: box for key, box in page.state["boxes"].items()}
            return _boxes_differing(result, expected, links, tolerance, listed_only)

        async def matching(tolerance: int = 0, listed_only: bool = False) -> dict[str, Any]:
            try:
                return await _until(client, lambda r: differing(r, tolerance, listed_only) == {})
            except AssertionError as timeout:
                last = await call_ok(client, "elements", space="screen", max=1000)
                raise AssertionError(
                    f"boxes differ from the DOM's: {differing(last, tolerance, listed_only)}"
                ) from timeout

        try:
            page.wait(lambda s: s.get("ready"))
            yield page, matching
        finally:
            os.kill(opened["pid"], signal.SIGTERM)


async def test_chromium_boxes_follow_a_reflow(stdio_client: Client, tmp_path: Path) -> None:
    """Chromium sends no change event when a page reflows by style alone, yet the elements read afterwards have the
    DOM's boxes: links wrapping onto two lines (their box spans both lines), then the same links after a banner,
    shown above them 3 s after a button was pressed by element id (and a read), pushed them down."""
    async with _reflow_page_open(stdio_client, tmp_path) as (page, matching):
        result = await matching()
        (wrapped,) = [
            e for e in result["elements"] if e["name"] == "Link 3 goes on over two lines" and e["role"] == "link"
        ]
        assert wrapped["box"]["height"] >= 40, wrapped  # two lines of 22 px
        (insert,) = [e for e in result["elements"] if e["name"] == "Insert banner"]
        await call_ok(stdio_client, "click", element=insert["id"], space="screen")
        # the press's own events seen, the tree walked
        await call_ok(stdio_client, "elements", space="screen", max=1000)
        assert page.state["banners"] == 0, "the banner came before the read after the press: nothing was checked"
        pushed = page.wait(lambda s: s["banners"] == 1)["boxes"]
        assert pushed["Link 1"]["top"] > result_box_top(result, "Link 1")
        await matching()


async def test_chromium_boxes_follow_a_scroll(stdio_client: Client, tmp_path: Path) -> None:
    """Chromium sends no change event when a page scrolls: a tree kept since before the scroll listed every link at
    its old place. After the scroll tool, each link listed has its new DOM box (1 px either way: a fractional scroll
    offset rounds apart)."""
    async with _reflow_page_open(stdio_client, tmp_path) as (page, matching):
        await matching()
        await call_ok(stdio_client, "scroll", vertical=-5, x=100, y=500, space="screen")
        page.wait(lambda s: s["scrollY"] > 0)
        result = await matching(tolerance=1, listed_only=True)
        assert sum(e["role"] == "link" for e in result["elements"]) >= 10, result["content_heading"]


async def test_chromium_lists_the_links_a_scroll_brings_into_view(stdio_client: Client, tmp_path: Path) -> None:
    """After the page scrolled (the scroll tool), the links scrolled into view are listed, with their DOM boxes.
    They were missing while the walk after the scroll read libatspi's cached children of the page, which Chromium's
    events had not brought up to date; a tree walked again is now read with that cache cleared."""
    async with _reflow_page_open(stdio_client, tmp_path) as (page, matching):
        await matching()
        await call_ok(stdio_client, "scroll", vertical=-5, x=100, y=500, space="screen")
        page.wait(lambda s: s["scrollY"] > 0)
        await matching(tolerance=1)


async def test_chromium_links_seen_before_a_scroll_come_back_named_at_their_boxes(
    stdio_client: Client, tmp_path: Path
) -> None:
    """A page scrolled down and back up: every link the page reports is listed again, named as it is and at its DOM
    box. The walk back asks only states and boxes of the nodes seen before (their names, roles and children are kept
    since the first walk, as no change event came), the nodes its last walk kept all at once before the walk."""
    async with _reflow_page_open(stdio_client, tmp_path) as (page, matching):
        await matching()
        await call_ok(stdio_client, "scroll", vertical=-5, x=100, y=500, space="screen")
        page.wait(lambda s: s["scrollY"] > 0)
        await matching(tolerance=1)
        await call_ok(stdio_client, "scroll", vertical=5, x=100, y=500, space="screen")
        page.wait(lambda s: s["scrollY"] == 0)
        await matching(tolerance=1)


def result_box_top(result: dict[str, Any], name: str) -> int:
    (element,) = [e for e in result["elements"] if e["name"] == name and e["role"] == "link"]
    return int(element["box"]["top"])


def test_missing_bindings_are_reported_with_the_fix() -> None:
    """The venv's own Python has no gi: the reader says what to install (doctor reports the same)."""
    with pytest.raises(ElementsUnavailableError, match=re.escape("apt-get install -y python3-gi gir1.2-atspi-2.0")):
        AtspiProcess(Path(sys.executable)).start()
    (finding,) = diagnose(load_settings(), (Check("accessibility", doctor_accessibility),))
    assert finding.status == "ok", finding


def test_a_display_without_the_accessibility_bus_is_said_to_lack_it(monkeypatch: pytest.MonkeyPatch) -> None:
    """libatspi aborts the reader when there is no bus to connect to: the error says what is missing."""
    monkeypatch.delenv("DISPLAY", raising=False)
    monkeypatch.delenv("DBUS_SESSION_BUS_ADDRESS", raising=False)
    reader = AtspiProcess()
    try:
        reader.start()  # loading the bindings needs no bus
        read = {"op": "read", "max_nodes": 10, "max_depth": 5, "seconds": 1, "screen": [0, 0, 100, 100]}
        with pytest.raises(ElementsUnavailableError, match="accessibility bus is probably not running"):
            reader.request(read, 10)
    finally:
        reader.close()
