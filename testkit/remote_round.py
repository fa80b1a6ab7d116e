"""The round every desktop backend must pass as a host drives it: a screenshot's pixels mapped back to the machine,
clicks and a double click landing, exact text, a hotkey, and the pointer where it was left."""

from __future__ import annotations

import asyncio
import base64
import io

from mcp import Client
from PIL import Image

from testkit.display import SCREEN
from testkit.mcp_calls import call_ok
from testkit.tk_probe import TkProbe


def to_image(screen_x: float, screen_y: float, info: dict) -> tuple[float, float]:
    """Where a screen pixel appears in the screenshot described by `info`."""
    area, scale = info["screen_area"], info["scale"]
    return (screen_x - area["left"] + 0.5) * scale - 0.5, (screen_y - area["top"] + 0.5) * scale - 0.5


async def click_type_round(client: Client, probe: TkProbe, text: str) -> None:
    """On the machine's Tk probe: click its button at the point read from a 640-pixel screenshot, double-click it,
    click its entry in screen pixels, type `text` and Enter, press ctrl+shift+k; the machine's pointer stays there."""
    result = await client.call_tool("screenshot", {"max_width": 640, "max_height": 640})
    info = result.structured_content
    assert info is not None and (info["screen_width"], info["screen_height"]) == SCREEN  # the machine's size
    image = Image.open(io.BytesIO(base64.b64decode(result.content[0].data)))  # type: ignore[union-attr]
    assert image.size == (info["image_width"], info["image_height"]) == (640, 360)
    x, y = to_image(*probe.centre("button"), info)
    record = await call_ok(client, "click", x=x, y=y)  # in the screenshot's pixels, mapped back to the machine's
    probe.wait(lambda s: s["clicks"] == 1)
    assert record["frame_id"] == info["frame_id"]
    await asyncio.sleep(0.5)  # past the double-click interval
    await call_ok(client, "click", x=x, y=y, count=2)
    probe.wait(lambda s: s["double_clicks"] == 1)
    ex, ey = probe.centre("entry")
    await call_ok(client, "click", x=ex, y=ey, space="screen")
    probe.wait(lambda s: s["focus"].endswith("entry"))
    await call_ok(client, "type", text=text, enter=True)
    probe.wait(lambda s: s["submitted"] == [text])  # every character, in order
    await call_ok(client, "hotkey", keys=["ctrl", "shift", "k"])
    probe.wait(lambda s: s["hotkeys"] == ["ctrl+shift+k"])
    info = await call_ok(client, "screen_info", space="screen")
    assert (info["screen_rect"]["width"], info["screen_rect"]["height"]) == SCREEN
    assert (info["screen_cursor"]["x"], info["screen_cursor"]["y"]) == (ex, ey)  # the machine's pointer, left there


async def drag_scroll_round(client: Client, probe: TkProbe) -> None:
    """On the machine's Tk probe: a drag on its canvas arrives as a glide from start to end, a scroll at a point
    and then at the pointer move its text."""
    box = probe.state()["widgets"]["canvas"]
    start, end = (box["left"] + 50, box["top"] + 50), (box["left"] + 300, box["top"] + 200)
    await call_ok(
        client, "drag_and_drop", start_x=start[0], start_y=start[1], end_x=end[0], end_y=end[1], space="screen"
    )
    state = probe.wait(lambda s: s["drag"] and s["drag"]["end"])
    assert state["drag"]["start"] == list(start) and state["drag"]["end"] == list(end)
    assert state["motions"] >= 3  # a glide, not a jump
    x, y = probe.centre("text")
    await call_ok(client, "scroll", vertical=-5, x=x, y=y, space="screen")
    top = probe.wait(lambda s: s["text_top"] > 0)["text_top"]
    await call_ok(client, "scroll", vertical=3)  # at the pointer, still over the text
    probe.wait(lambda s: s["text_top"] < top)
