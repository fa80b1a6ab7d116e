"""The coordinate contract, tested the way a host uses it.

A host model reads a coordinate out of one tool's result and passes it, unchanged and with default
arguments, to `click`. For every tool whose result carries coordinates, and for every kind of
latest screenshot (none yet, default size, another max_width, a region, a second monitor), the
click must land on the real widget the value came from.
"""

from __future__ import annotations

from collections.abc import AsyncIterator, Awaitable, Callable
from contextlib import AsyncExitStack, asynccontextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
from mcp import Client

from symphony_mcp.config import load_settings
from symphony_mcp.server import build_server
from testkit.mcp_calls import call_error, call_ok
from testkit.model_server import ModelRequest, StandInModel
from testkit.swatch import red_centroid
from testkit.tk_probe import TkProbe, running_probe

pytestmark = pytest.mark.anyio

Point = tuple[float, float]
SECOND_MONITOR = ["960x1080+0+0", "960x1080+960+0"]  # one 1920x1080 screen shown as two monitors


@dataclass
class Host:
    client: Client
    probe: TkProbe

    async def click_at(self, point: Point) -> None:
        """Click as a host does: the value as it is, every other argument default; the button must get it."""
        before = presses(self.probe.state())
        await call_ok(self.client, "click", x=point[0], y=point[1])
        self.probe.wait(lambda s: presses(s) == before + 1)


def presses(state: dict[str, Any]) -> int:
    # Tk reports a second press soon after a first as a double click instead of a click.
    return int(state["clicks"]) + int(state["double_clicks"])


def centre(box: dict[str, int]) -> Point:
    return box["left"] + box["width"] / 2, box["top"] + box["height"] / 2


def xy(point: dict[str, int]) -> Point:
    return point["x"], point["y"]


async def look(setup: str, client: Client) -> None:
    """Make the latest screenshot the kind the setup names, as a host would take it."""
    if setup == "default screenshot":
        await call_ok(client, "screenshot")
    elif setup == "max_width 800":
        await call_ok(client, "screenshot", max_width=800)
    elif setup == "region":
        await call_ok(client, "screenshot")
        (window,) = [w for w in (await call_ok(client, "list_windows"))["windows"] if w["title"] == "Symphony Probe"]
        rect = window["rect"]  # read off the default screenshot, used as a region in its pixels
        around = {"left": rect["left"] - 20, "top": rect["top"] - 20, "width": rect["width"] + 40}
        info = await call_ok(client, "screenshot", region={**around, "height": rect["height"] + 40})
        assert info["scale"] == 1.0 and info["screen_area"]["left"] > 0
    elif setup == "second monitor":
        info = await call_ok(client, "screenshot", monitor=2)
        assert info["screen_area"]["left"] == 960 and info["image_height"] == 800
    else:
        assert setup == "no screenshot"


@asynccontextmanager
async def host(setup: str, tmp_path: Path, stand_in: StandInModel) -> AsyncIterator[Host]:
    """A server with the stand-in as its grounder (family `pixels`) and the probe, on one or two monitors."""
    monitors = SECOND_MONITOR if setup == "second monitor" else []
    geometry = "900x700+1010+200" if monitors else "900x700+200+150"
    grounder = {"base_url": stand_in.url, "model": "stand-in-grounder", "timeout": 5}
    settings = load_settings(
        display={"monitors": monitors}, models={"grounder": grounder}, grounding={"family": "pixels"}
    )
    async with AsyncExitStack() as stack:
        probe = stack.enter_context(running_probe(tmp_path, geometry))
        server = build_server(settings)
        stack.callback(server.close)
        client = await stack.enter_async_context(Client(server.mcp))
        await look(setup, client)
        yield Host(client, probe)


async def from_find_text(h: Host) -> Point:
    found = await call_ok(h.client, "find_text", phrase="Press me")
    return xy(found["matches"][0]["center"])


async def from_ocr_line(h: Host) -> Point:
    result = await call_ok(h.client, "ocr")
    (line,) = [line for line in result["lines"] if "Press me" in line["text"]]
    return centre(line["box"])


async def from_ocr_annotated(h: Host) -> Point:
    result = await call_ok(h.client, "ocr", annotate=True)  # the numbered image becomes the latest frame
    (word,) = [word for word in result["words"] if word["text"] == "Press"]
    return centre(word["box"])


async def from_window_rect(h: Host) -> Point:
    async def probe_window(**space: str) -> dict[str, int]:
        windows = (await call_ok(h.client, "list_windows", **space))["windows"]
        (window,) = [w for w in windows if w["title"] == "Symphony Probe"]
        return dict(window["rect"])

    # Where the button sits in the window, as fractions of the window: the same in every space.
    screen_rect, (bx, by) = await probe_window(space="screen"), centre(h.probe.state()["widgets"]["button"])
    fx, fy = (bx - screen_rect["left"]) / screen_rect["width"], (by - screen_rect["top"]) / screen_rect["height"]
    rect = await probe_window()
    return rect["left"] + fx * rect["width"], rect["top"] + fy * rect["height"]


async def pointer_on_button(h: Host) -> None:
    x, y = centre(h.probe.state()["widgets"]["button"])
    await call_ok(h.client, "move_pointer", x=x, y=y, space="screen")


async def from_screen_info_cursor(h: Host) -> Point:
    await pointer_on_button(h)
    return xy((await call_ok(h.client, "screen_info"))["cursor"])


async def from_action_record(h: Host) -> Point:
    await pointer_on_button(h)
    return xy((await call_ok(h.client, "wait", seconds=0))["cursor_after"])


async def from_action_history(h: Host) -> Point:
    await pointer_on_button(h)
    return xy((await call_ok(h.client, "action_history", limit=1))["records"][-1]["points"][0])


async def from_click_text_record(h: Host) -> Point:
    before = presses(h.probe.state())
    record = await call_ok(h.client, "click_text", phrase="Press me")
    h.probe.wait(lambda s: presses(s) == before + 1)
    return centre(record["grounding"][0]["box"])


async def from_locate_cursor_record(h: Host) -> Point:
    before = presses(h.probe.state())
    record = await call_ok(h.client, "locate_cursor", phrase="Press me", position="start")
    h.probe.wait(lambda s: presses(s) == before + 1)  # the phrase's start edge lies on the button
    return xy(record["points"][0])


async def from_memory_audit(h: Host) -> Point:
    await call_ok(h.client, "start_task", instruction="press the button")
    await pointer_on_button(h)
    audit = await call_ok(h.client, "memory_audit")
    (step,) = audit["actions"]
    assert step["action"] == "move_pointer" and step["ok"]
    await call_ok(h.client, "end_task", status="abandoned")
    return xy(step["points"][0])


SOURCES: dict[str, Callable[[Host], Awaitable[Point]]] = {
    "find_text centre": from_find_text,
    "ocr line box": from_ocr_line,
    "ocr annotated word box": from_ocr_annotated,
    "list_windows rect": from_window_rect,
    "screen_info cursor": from_screen_info_cursor,
    "action record cursor_after": from_action_record,
    "action_history points": from_action_history,
    "click_text grounding box": from_click_text_record,
    "locate_cursor record point": from_locate_cursor_record,
    "memory_audit step point": from_memory_audit,
}
SETUPS = ["no screenshot", "default screenshot", "max_width 800", "region", "second monitor"]


@pytest.mark.parametrize("setup", SETUPS)
async def test_every_coordinate_in_a_result_clicks_where_it_came_from(
    setup: str, tmp_path: Path, stand_in: StandInModel, xdisplay: object
) -> None:
    missed = []
    async with host(setup, tmp_path, stand_in) as h:
        for name, source in SOURCES.items():
            point = await source(h)
            try:
                await h.click_at(point)
            except AssertionError as exc:
                missed.append(f"{name}: clicked {point}: {exc}")
    assert not missed, "\n".join(missed)


@pytest.mark.parametrize("setup", SETUPS)
async def test_a_box_from_a_result_passes_as_a_region_as_it_is(
    setup: str, tmp_path: Path, stand_in: StandInModel, xdisplay: object
) -> None:
    """A rectangle read off any result (here the probe window's rect, then a match's box) is a `region` unchanged."""
    async with host(setup, tmp_path, stand_in) as h:
        windows = (await call_ok(h.client, "list_windows"))["windows"]
        (window,) = [w for w in windows if w["title"] == "Symphony Probe"]
        found = await call_ok(h.client, "find_text", phrase="Press me", region=window["rect"])
        await h.click_at(xy(found["matches"][0]["center"]))
        shot = await call_ok(h.client, "screenshot", region=found["matches"][0]["box"])
        x, y = centre(shot["screen_area"])  # in screen pixels, like the probe's widget boxes
        button = h.probe.state()["widgets"]["button"]
        assert button["left"] <= x < button["left"] + button["width"], (shot["screen_area"], button)
        assert button["top"] <= y < button["top"] + button["height"], (shot["screen_area"], button)


@pytest.mark.parametrize("setup", SETUPS)
async def test_a_located_element_is_clicked_where_the_model_saw_it(
    setup: str, tmp_path: Path, stand_in: StandInModel, xdisplay: object
) -> None:
    """locate's x, y (the stand-in answers where the red swatch is in the image it was sent) work in click."""

    def swatch_in(request: ModelRequest) -> str:
        return "({:.0f},{:.0f})".format(*red_centroid(request.images()[0]))

    stand_in.script(default=swatch_in)
    async with host(setup, tmp_path, stand_in) as h:
        found = await call_ok(h.client, "locate", description="the red swatch")
        assert found["space"] == "screenshot" and found["frame_id"]
        await call_ok(h.client, "click", x=found["x"], y=found["y"])
        h.probe.wait(lambda s: s["swatch"] == "#0000ff")


async def test_results_in_screen_space_and_in_a_named_frame(
    tmp_path: Path, stand_in: StandInModel, xdisplay: object
) -> None:
    """space='screen' switches a whole result to screen pixels; frame_id gives it in an older frame's pixels."""
    async with host("max_width 800", tmp_path, stand_in) as h:
        small = (await call_ok(h.client, "screenshot", max_width=800))["frame_id"]
        await call_ok(h.client, "screenshot")  # a newer, larger latest frame
        button = h.probe.state()["widgets"]["button"]
        on_screen = await call_ok(h.client, "find_text", phrase="Press me", space="screen")
        assert on_screen["space"] == "screen" and on_screen["frame_id"] is None
        x, y = xy(on_screen["matches"][0]["center"])
        assert button["left"] <= x < button["left"] + button["width"] and button["top"] <= y < button["top"] + 50
        in_small = await call_ok(h.client, "find_text", phrase="Press me", frame_id=small)
        assert in_small["frame_id"] == small
        before = presses(h.probe.state())
        x, y = xy(in_small["matches"][0]["center"])
        await call_ok(h.client, "click", x=x, y=y, frame_id=small)
        h.probe.wait(lambda s: presses(s) == before + 1)
        message = await call_error(h.client, "find_text", phrase="Press me", space="screen", frame_id=small)
        assert "frame_id only applies to space='screenshot'" in message
