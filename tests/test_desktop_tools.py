"""The screen and input tools against real X programs (Tk, xterm) on Xvfb, through the MCP client."""

from __future__ import annotations

import asyncio
import base64
import io
import sys
from pathlib import Path

import pytest
from mcp import Client
from PIL import Image

from testkit.display import SCREEN
from testkit.mcp_calls import call_error, call_ok
from testkit.remote_round import to_image
from testkit.tk_probe import TkProbe
from testkit.waiting import wait_for

# AnyIO's plugin sets up and tears down async fixtures in one task (MCP clients need that).
pytestmark = pytest.mark.anyio


async def screenshot(client: Client, **arguments: object) -> tuple[Image.Image, dict]:
    result = await client.call_tool("screenshot", arguments)
    assert not result.is_error, result.content
    image_block = result.content[0]
    assert image_block.type == "image"
    image = Image.open(io.BytesIO(base64.b64decode(image_block.data)))
    assert result.structured_content is not None
    return image, result.structured_content


async def focus_entry(client: Client, probe: TkProbe) -> None:
    x, y = probe.centre("entry")
    await call_ok(client, "click", x=x, y=y, space="screen")
    probe.wait(lambda s: s["focus"].endswith("entry"))


async def test_screenshot_metadata_and_default_size(client: Client, tk_probe: TkProbe) -> None:
    image, info = await screenshot(client)
    assert (info["screen_width"], info["screen_height"]) == SCREEN
    assert image.size == (info["image_width"], info["image_height"]) == (1280, 720)
    assert info["scale"] == round(1280 / 1920, 6)
    assert info["bytes"] < 1_000_000
    assert info["format"] == "jpeg"
    assert info["screen_cursor"] is not None


async def test_click_lands_on_widget_in_downscaled_screenshot(client: Client, tk_probe: TkProbe) -> None:
    _, info = await screenshot(client, max_width=640, max_height=640)
    assert info["image_width"] == 640
    x, y = to_image(*tk_probe.centre("button"), info)
    record = await call_ok(client, "click", x=x, y=y)
    tk_probe.wait(lambda s: s["clicks"] == 1)
    # The record names the exact screen pixel, mapped back from the 1/3-scale image.
    bx, by = tk_probe.centre("button")
    point = record["screen_points"][0]
    assert abs(point["x"] - bx) <= 2 and abs(point["y"] - by) <= 2
    assert record["frame_id"] == info["frame_id"]


async def test_click_variants(client: Client, tk_probe: TkProbe) -> None:
    x, y = tk_probe.centre("button")
    await call_ok(client, "click", x=x, y=y, space="screen", button="right")
    tk_probe.wait(lambda s: s["right_clicks"] == 1)
    await call_ok(client, "click", x=x, y=y, space="screen", count=2)
    tk_probe.wait(lambda s: s["double_clicks"] == 1)
    await asyncio.sleep(0.5)  # past the double-click interval
    await call_ok(client, "click", x=x, y=y, space="screen", hold_keys=["shift"])
    tk_probe.wait(lambda s: s["shift_clicks"] == 1)


async def test_click_in_region_screenshot_space(client: Client, tk_probe: TkProbe) -> None:
    box = tk_probe.state()["widgets"]["swatch"]
    region = {"left": box["left"] - 50, "top": box["top"] - 50, "width": 400, "height": 300}
    image, info = await screenshot(client, region=region, space="screen", format="png")
    assert info["screen_area"] == region
    assert image.size == (400, 300) and info["scale"] == 1.0
    assert image.getpixel((100, 100))[:3] == (255, 0, 0)  # the red swatch, at full resolution
    await call_ok(client, "click", x=100, y=100)  # region-image pixels
    tk_probe.wait(lambda s: s["swatch"] == "#0000ff")
    after, _ = await screenshot(client, region=region, space="screen", format="png")
    assert after.getpixel((100, 100))[:3] == (0, 0, 255)  # the screenshot shows the change


async def test_type_ascii_and_unicode_into_tk_entry(client: Client, tk_probe: TkProbe) -> None:
    await focus_entry(client, tk_probe)
    text = "Hello, World! ~`{}|<>?"
    await call_ok(client, "type", text=text)
    tk_probe.wait(lambda s: s["entry"] == text)
    unicode_text = "héllo → 日本 ñ ü € Ωmega ✓"
    record = await call_ok(client, "type", text=unicode_text, overwrite=True, enter=True)
    state = tk_probe.wait(lambda s: s["submitted"] == [unicode_text])
    assert state["entry"] == unicode_text
    assert record["action"] == "type" and record["arguments"]["overwrite"] is True


async def test_type_unicode_with_many_distinct_characters(client: Client, tk_probe: TkProbe) -> None:
    """More distinct characters than spare keycodes: typed in chunks, still exact."""
    await focus_entry(client, tk_probe)
    text = "".join(chr(c) for c in range(0x3041, 0x3041 + 60)) + " αβγδεζηθικλμνξοπρστυφχψω"
    await call_ok(client, "type", text=text)
    tk_probe.wait(lambda s: s["entry"] == text, timeout=20)


async def test_type_unicode_into_terminal(client: Client, xterm_line: Path) -> None:
    term = await wait_for_window(client, "Symphony Term")
    await call_ok(client, "focus_window", window_id=term["id"])
    text = "héllo → 日本 and ASCII"
    await call_ok(client, "type", text=text, enter=True)
    wait_for(lambda: xterm_line.exists() and xterm_line.read_text(encoding="utf-8") == text)


async def wait_for_window(client: Client, title: str, timeout: float = 10.0) -> dict:
    for _ in range(int(timeout / 0.1)):
        windows = (await call_ok(client, "list_windows"))["windows"]
        matches = [w for w in windows if w["title"] == title]
        if matches:
            return matches[0]
        await asyncio.sleep(0.1)
    raise AssertionError(f"no window titled {title!r}")


async def wait_for_no_window(client: Client, title: str, timeout: float = 10.0) -> None:
    for _ in range(int(timeout / 0.1)):
        if all(w["title"] != title for w in (await call_ok(client, "list_windows"))["windows"]):
            return
        await asyncio.sleep(0.1)
    raise AssertionError(f"the window titled {title!r} is still open")


async def test_hotkey_and_hold_and_press(client: Client, tk_probe: TkProbe) -> None:
    await focus_entry(client, tk_probe)
    await call_ok(client, "hotkey", keys=["ctrl", "shift", "k"])
    tk_probe.wait(lambda s: s["hotkeys"] == ["ctrl+shift+k"])
    await call_ok(client, "hotkey", keys=["Alt", "j"])  # case-insensitive names
    tk_probe.wait(lambda s: s["hotkeys"] == ["ctrl+shift+k", "alt+j"])
    await call_ok(client, "hold_and_press", hold_keys=["shift"], press_keys=["a", "b", "c"])
    tk_probe.wait(lambda s: s["entry"] == "ABC")
    await call_ok(client, "key_down", key="shift")
    await call_ok(client, "type", text="x")
    await call_ok(client, "key_up", key="shift")
    await call_ok(client, "type", text="y")
    tk_probe.wait(lambda s: s["entry"] == "ABCXy")


async def test_single_keys_by_name_and_shifted_characters(client: Client, tk_probe: TkProbe) -> None:
    """Keys go through XTest by keysym: a character on the shifted level ('!', ':') is sent with Shift held, named
    keys (Home, Delete, End, BackSpace) reach the app as those keys."""
    await focus_entry(client, tk_probe)
    for key in ["a", "!", "b", ":", "Home", "Delete", "End", "BackSpace"]:
        await call_ok(client, "hotkey", keys=[key])
    tk_probe.wait(lambda s: s["entry"] == "!b")


async def test_drag_draws_on_canvas(client: Client, tk_probe: TkProbe) -> None:
    box = tk_probe.state()["widgets"]["canvas"]
    start = (box["left"] + 50, box["top"] + 50)
    end = (box["left"] + 300, box["top"] + 200)
    _, info = await screenshot(client)
    sx, sy = to_image(*start, info)
    ex, ey = to_image(*end, info)
    await call_ok(client, "drag_and_drop", start_x=sx, start_y=sy, end_x=ex, end_y=ey)
    state = tk_probe.wait(lambda s: s["drag"] and s["drag"]["end"])
    assert abs(state["drag"]["start"][0] - start[0]) <= 2 and abs(state["drag"]["start"][1] - start[1]) <= 2
    assert abs(state["drag"]["end"][0] - end[0]) <= 2 and abs(state["drag"]["end"][1] - end[1]) <= 2
    assert state["motions"] >= 3


async def test_scroll_moves_text_view(client: Client, tk_probe: TkProbe) -> None:
    x, y = tk_probe.centre("text")
    await call_ok(client, "scroll", vertical=-5, x=x, y=y, space="screen")
    state = tk_probe.wait(lambda s: s["text_top"] > 0)
    top = state["text_top"]
    await call_ok(client, "scroll", vertical=3)  # at the pointer, which is still over the text
    tk_probe.wait(lambda s: s["text_top"] < top)
    # Tk 8.6 scrolls sideways on Shift+wheel (it has no horizontal wheel buttons).
    await call_ok(client, "scroll", vertical=-5, hold_keys=["shift"], x=x, y=y, space="screen")
    tk_probe.wait(lambda s: s["text_left"] > 0)


async def test_move_pointer_and_cursor_in_screenshot(client: Client, tk_probe: TkProbe) -> None:
    _, info = await screenshot(client)
    record = await call_ok(client, "move_pointer", x=300, y=200)
    # The record speaks the caller's space: the pointer is where the caller put it, in the screenshot's pixels.
    assert record["cursor_after"] == record["points"][0] == {"x": 300, "y": 200}
    assert record["screen_points"][0] == {"x": 450, "y": 300} and record["frame_id"] == info["frame_id"]
    image, info = await screenshot(client, draw_cursor=True, format="png")
    assert info["cursor"] == {"x": 300, "y": 200}
    rgb = image.convert("RGB")
    red = [
        (dx, dy)
        for dx in range(-30, 31)
        for dy in range(-30, 31)
        if (pixel := rgb.getpixel((300 + dx, 200 + dy)))[0] > 200 and pixel[1] < 60 and pixel[2] < 60
    ]
    # The red marker (ring and cross) is centred on the pointer's image pixel.
    assert red and abs(sum(x for x, _ in red) / len(red)) <= 1 and abs(sum(y for _, y in red) / len(red)) <= 1


async def test_pointer_in_corner_does_not_wedge_server(client: Client, tk_probe: TkProbe) -> None:
    await call_ok(client, "move_pointer", x=0, y=0, space="screen")
    x, y = tk_probe.centre("button")
    await call_ok(client, "click", x=x, y=y, space="screen")
    tk_probe.wait(lambda s: s["clicks"] == 1)


async def test_windows_list_focus_and_open(client: Client, tk_probe: TkProbe, tmp_path: Path) -> None:
    probe = await wait_for_window(client, "Symphony Probe")
    assert probe["app"] == "Tk" and probe["rect"]["width"] == 600  # 900 screen pixels in a 2/3-scale screenshot
    # `cat` reads its terminal in line mode from the start, so ctrl+d ends it whenever it arrives
    # (an interactive shell dropped a ctrl+d typed before its prompt was up, and the xterm stayed open).
    opened = await call_ok(
        client, "open_app", target="xterm -T OpenedByTool -geometry 40x5+50+50 -e cat", wait_seconds=30
    )
    assert [w["title"] for w in opened["new_windows"]] == ["OpenedByTool"]
    assert opened["record"]["action"] == "open"
    xterm_id = opened["new_windows"][0]["id"]
    try:
        record = await call_ok(client, "focus_window", window_id=probe["id"])
        assert record["active_window_after"]["title"] == "Symphony Probe"
        record = await call_ok(client, "focus_window", window_id=xterm_id)
        assert record["active_window_after"]["title"] == "OpenedByTool"
        await call_ok(client, "hotkey", keys=["ctrl", "d"])  # ends cat, closing the xterm
        await wait_for_no_window(client, "OpenedByTool")
    finally:  # a window left behind would cover the windows of later tests
        if any(w["id"] == xterm_id for w in (await call_ok(client, "list_windows"))["windows"]):
            await call_ok(client, "close_window", window_id=xterm_id)


async def test_open_file_and_unknown_app(client: Client, xdisplay: object) -> None:
    message = await call_error(client, "open_app", target="no-such-program-xyz")
    assert "not an existing file, not a command on PATH" in message


async def test_screen_info(client: Client) -> None:
    info = await call_ok(client, "screen_info")
    assert info["screen_rect"] == {"left": 0, "top": 0, "width": SCREEN[0], "height": SCREEN[1]}
    assert info["space"] == "screenshot" and info["frame_id"]  # the pointer is given in a named frame's pixels
    assert len(info["monitors"]) >= 2 and info["default_monitor"] == 1
    assert info["screenshot_size"] == [1280, 720]
    assert (info["backend"], info["url"], info["platform"]) == ("local", None, sys.platform)  # this host's display


async def test_action_history_records_every_action(client: Client, tk_probe: TkProbe) -> None:
    await call_ok(client, "move_pointer", x=10, y=10)
    await call_ok(client, "wait", seconds=0.01)
    await call_error(client, "hotkey", keys=["nokey"])
    history = (await call_ok(client, "action_history"))["records"]
    # Rejected input changed nothing, so it is not an action record.
    assert [r["action"] for r in history][-2:] == ["move_pointer", "wait"]
    assert all(r["ok"] for r in history)
    assert [r["id"] for r in history] == sorted(r["id"] for r in history)


async def test_bad_input_is_refused_clearly_and_changes_nothing(client: Client, tk_probe: TkProbe) -> None:
    await focus_entry(client, tk_probe)
    before = len((await call_ok(client, "action_history", limit=1000))["records"])
    cases = {
        ("type", "text is empty"): {"text": ""},
        ("type", "at most 10000"): {"text": "x" * 10_001},
        ("type", "control characters U+001B"): {"text": "a\x1bb"},
        ("screenshot", "monitor 7 does not exist: use 0 (all monitors) or 1..1"): {"monitor": 7},
        ("screenshot", "region.width\n  Input should be greater than 0"): {
            "region": {"left": 0, "top": 0, "width": 0, "height": 10},
            "space": "screen",
        },
        ("click", "unknown frame_id 'f999999'"): {"x": 1, "y": 1, "frame_id": "f999999"},
        ("click", "count\n  Input should be greater than or equal to 1"): {"x": 1, "y": 1, "count": 0},
        ("click", "off screen; the screen spans x 0..1919, y 0..1079"): {"x": 1920, "y": 5, "space": "screen"},
        ("click", "unknown key 'hyperkey'"): {"x": 1, "y": 1, "hold_keys": ["hyperkey"]},
        ("scroll", "give a non-zero vertical"): {},
        ("scroll", "or both x and y; got only x"): {"vertical": 1, "x": 5},
        ("wait", "seconds must be 0..60"): {"seconds": 61},
        ("focus_window", "no window with id '0xdead'"): {"window_id": "0xdead"},
        ("drag_and_drop", "duration\n  Input should be less than or equal to 10"): {
            "start_x": 1,
            "start_y": 1,
            "end_x": 2,
            "end_y": 2,
            "duration": 11,
        },
    }
    for (tool, expected), arguments in cases.items():
        message = await call_error(client, tool, **arguments)
        assert expected in message, (tool, message)
    assert tk_probe.state()["entry"] == ""  # nothing was typed
    assert len((await call_ok(client, "action_history", limit=1000))["records"]) == before
    await call_ok(client, "type", text="still serving")
    tk_probe.wait(lambda s: s["entry"] == "still serving")
