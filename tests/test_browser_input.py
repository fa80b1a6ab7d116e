"""Input into a real Chromium window on Xvfb: clicks, exact Unicode typing, wheel scrolling both ways."""

from __future__ import annotations

import json
from collections.abc import AsyncIterator
from pathlib import Path

import pytest
from mcp import Client
from playwright.async_api import Page

from symphony_mcp.desktop.virtual_display import VirtualDisplay
from testkit.chromium import chromium_executable
from testkit.kiosk_page import open_kiosk_page
from testkit.mcp_calls import call_ok

pytestmark = pytest.mark.anyio

CHROMIUM = chromium_executable()
PAGE = """<!doctype html><html><head><meta charset="utf-8"><title>page.html</title></head><body style="margin:0">
<div style="width:6000px;height:4000px;background:linear-gradient(90deg,#fff,#888)">
<input id="field" style="position:fixed;left:300px;top:200px;width:600px;height:40px;font-size:20px">
</div></body></html>"""


@pytest.fixture
async def page(xdisplay: VirtualDisplay, tmp_path: Path) -> AsyncIterator[Page]:
    html = tmp_path / "page.html"
    html.write_text(PAGE, encoding="utf-8")
    async with open_kiosk_page(html.as_uri(), tmp_path) as opened:
        yield opened


async def test_click_and_type_unicode_into_page(client: Client, page: Page) -> None:
    info = await call_ok(client, "screenshot")
    box = await page.evaluate("JSON.stringify(document.getElementById('field').getBoundingClientRect())")
    rect = json.loads(box)
    scale = info["scale"]
    await call_ok(client, "click", x=(rect["x"] + 50) * scale, y=(rect["y"] + 20) * scale)
    await page.wait_for_function("document.activeElement.id === 'field'")
    await call_ok(client, "type", text="draft")
    text = 'Grüße → 東京 <tag> & "quotes" ✓'
    await call_ok(client, "type", text=text, overwrite=True)
    await page.wait_for_function("value => document.getElementById('field').value === value", arg=text)


async def test_wheel_scrolls_page_vertically_and_horizontally(client: Client, page: Page) -> None:
    await call_ok(client, "scroll", vertical=-5, x=960, y=700, space="screen")
    await page.wait_for_function("window.scrollY > 0")
    await call_ok(client, "scroll", horizontal=5, x=960, y=700, space="screen")
    await page.wait_for_function("window.scrollX > 0")
    assert await page.evaluate("window.scrollY") > 0
