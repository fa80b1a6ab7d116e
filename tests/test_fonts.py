"""The programs the tests start render with the tests' fonts (tests/fonts/fonts.conf), not the machine's.

Other installed fonts (fonts-liberation, fonts-urw-base35, fonts-noto-core, fonts-dejavu-extra) stand in
for Arial, Helvetica or Tk's default font and change layouts; these checks fail if a program escapes the pin.
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest
from playwright.async_api import Page

from symphony_mcp.desktop.virtual_display import VirtualDisplay
from testkit.kiosk_page import open_kiosk_page

pytestmark = pytest.mark.anyio

FAMILIES = {  # CSS font-family -> the one font it must render with
    "Arial": "DejaVu Sans",
    "Helvetica": "DejaVu Sans",
    "'Liberation Sans'": "DejaVu Sans",
    "'Noto Sans'": "DejaVu Sans",
    "'DejaVu Sans Condensed'": "DejaVu Sans",  # fonts-dejavu-extra
    "sans-serif": "DejaVu Sans",
    "serif": "DejaVu Serif",
    "monospace": "DejaVu Sans Mono",
}
TK_FONTS = """import json, tkinter, tkinter.font as f
root = tkinter.Tk()
fonts = {n: f.nametofont(n).actual()["family"] for n in ("TkDefaultFont", "TkFixedFont")}
fonts |= {n: f.Font(root, family=n, size=12).actual()["family"] for n in ("Helvetica", "Arial", "Noto Sans")}
print(json.dumps(fonts))
"""


async def platform_font(page: Page, selector: str) -> list[str]:
    """The fonts Chromium actually drew the element's text with (not the CSS it asked for)."""
    cdp = await page.context.new_cdp_session(page)
    root = (await cdp.send("DOM.getDocument"))["root"]["nodeId"]
    await cdp.send("CSS.enable")
    node = (await cdp.send("DOM.querySelector", {"nodeId": root, "selector": selector}))["nodeId"]
    return [font["familyName"] for font in (await cdp.send("CSS.getPlatformFontsForNode", {"nodeId": node}))["fonts"]]


async def test_chromium_renders_every_family_with_the_pinned_fonts(xdisplay: VirtualDisplay, tmp_path: Path) -> None:
    rows = "".join(
        f'<p id="f{i}" style="font-family: {family}">Perhaps the most well-known</p>'
        for i, family in enumerate(FAMILIES)
    )
    html = tmp_path / "fonts.html"
    html.write_text(f"<!doctype html><title>fonts.html</title><body>{rows}</body>", encoding="utf-8")
    async with open_kiosk_page(html.as_uri(), tmp_path) as page:
        drawn = {family: await platform_font(page, f"#f{i}") for i, family in enumerate(FAMILIES)}
    assert drawn == {family: [font] for family, font in FAMILIES.items()}


def test_tk_resolves_fonts_through_the_pinned_fontconfig(xdisplay: VirtualDisplay) -> None:
    result = subprocess.run([sys.executable, "-c", TK_FONTS], capture_output=True, text=True, timeout=30, check=True)
    assert json.loads(result.stdout) == {
        "TkDefaultFont": "DejaVu Sans",
        "TkFixedFont": "DejaVu Sans Mono",
        "Helvetica": "DejaVu Sans",
        "Arial": "DejaVu Sans",
        "Noto Sans": "DejaVu Sans",
    }
