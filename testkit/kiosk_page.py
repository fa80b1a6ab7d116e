"""A web page in a kiosk Chromium on the test display, filling the screen (CSS pixels are screen pixels), driven
through Playwright and made active like a window a person opened."""

from __future__ import annotations

import os
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from pathlib import Path

import pytest
from playwright.async_api import Page, async_playwright

from testkit.chromium import KIOSK_ARGS, chromium_executable
from testkit.display import wait_for_active_window

CHROMIUM = chromium_executable()


@asynccontextmanager
async def open_kiosk_page(url: str, tmp_path: Path) -> AsyncIterator[Page]:
    """A kiosk Chromium window filling the screen (so CSS pixels are screen pixels), made active."""
    if CHROMIUM is None:
        pytest.fail("Chromium is not installed (apt-get install chromium)")
    async with async_playwright() as playwright:
        context = await playwright.chromium.launch_persistent_context(
            str(tmp_path / "profile"),
            executable_path=CHROMIUM,
            headless=False,
            no_viewport=True,
            args=list(KIOSK_ARGS),
            env={"DISPLAY": os.environ["DISPLAY"], "FONTCONFIG_FILE": os.environ["FONTCONFIG_FILE"]},  # tests' fonts
        )
        page = context.pages[0] if context.pages else await context.new_page()
        await page.goto(url)
        await page.wait_for_function("window.innerWidth > 1000")
        wait_for_active_window(f"{await page.title()} - Chromium")
        yield page
        await context.close()
