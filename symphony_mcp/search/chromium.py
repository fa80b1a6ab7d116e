"""Starting the system Chromium under Playwright, quietly, and stopping it without leftovers.

Never `playwright install` (it downloads a browser and fails offline): the Chromium of the OS is driven through
`executable_path`. Debian's /usr/bin/chromium is a shell wrapper; the real binary is /usr/lib/chromium/chromium.
"""

from __future__ import annotations

import os
import shutil
from dataclasses import dataclass
from pathlib import Path

from playwright.async_api import Browser as PlaywrightBrowser
from playwright.async_api import Error as PlaywrightError
from playwright.async_api import Playwright, async_playwright

from symphony_mcp.config import SearchSettings
from symphony_mcp.search.types import BrowserFailure

_REAL_BINARIES = ("/usr/lib/chromium/chromium", "/usr/lib/chromium-browser/chromium-browser")
_ON_PATH = ("chromium", "chromium-browser", "google-chrome")
# No background traffic (a closed network would be flooded with refused connections), no first-run UI, no
# smooth scrolling (a wheel step lands at once, so a view after scrolling shows where it ends).
LAUNCH_ARGS = (
    "--no-sandbox",
    "--disable-gpu",
    "--no-first-run",
    "--no-default-browser-check",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
    "--disable-quic",
    "--disable-default-apps",
    "--disable-extensions",
    "--disable-smooth-scrolling",
    "--disable-features=Translate,MediaRouter,OptimizationHints",
    "--metrics-recording-only",
    "--password-store=basic",
)
_INSTALL_HINT = "install Debian's chromium (apt-get install chromium) or set SYMPHONY_SEARCH__BROWSER to a Chromium"


def chromium_executable(settings: SearchSettings) -> str:
    """The Chromium to run: settings.browser, else the real binary of the OS package, else one on PATH."""
    if settings.browser is not None:
        if not os.access(settings.browser, os.X_OK):
            raise BrowserFailure(f"the browser {settings.browser} (settings search.browser) is not an executable file")
        return str(settings.browser)
    for candidate in _REAL_BINARIES:
        if Path(candidate).exists():
            return candidate
    for name in _ON_PATH:
        found = shutil.which(name)
        if found:
            return found
    raise BrowserFailure(f"no Chromium found ({', '.join(_REAL_BINARIES + _ON_PATH)}); {_INSTALL_HINT}")


@dataclass
class ChromiumProcess:
    """One running Chromium (and its Playwright driver); sessions are fresh contexts inside it."""

    playwright: Playwright
    browser: PlaywrightBrowser
    executable: str

    async def close(self) -> None:
        try:
            await self.browser.close()
        finally:
            await self.playwright.stop()


async def launch_chromium(settings: SearchSettings) -> ChromiumProcess:
    """Start Chromium: headless, or on the server's DISPLAY when settings.headful. BrowserFailure says why not."""
    executable = chromium_executable(settings)
    if settings.headful and not os.environ.get("DISPLAY"):
        raise BrowserFailure("search.headful is set but the server has no DISPLAY; unset it or start a display")
    playwright = await async_playwright().start()
    try:
        browser = await playwright.chromium.launch(
            executable_path=executable,
            headless=not settings.headful,
            args=list(LAUNCH_ARGS),
            timeout=max(30_000, settings.step_timeout_seconds * 1000),
        )
    except PlaywrightError as exc:
        await playwright.stop()
        first_lines = " ".join(str(exc.message).splitlines()[:3])
        raise BrowserFailure(f"Chromium ({executable}) did not start: {first_lines}; {_INSTALL_HINT}") from None
    return ChromiumProcess(playwright=playwright, browser=browser, executable=executable)
