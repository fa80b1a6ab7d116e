"""OSWorld's Chrome tab steps (`chrome_open_tabs`, `chrome_close_tabs`) on a machine, over Chrome's DevTools port
there, as OSWorld's SetupController does them: Playwright's `connect_over_cdp` at the machine's address and
`chromium_port` (9222 in OSWorld's tasks, which forward it to Chrome's own with socat), new tabs in the first
context (the default profile's) with the tab Chrome opened with closed after them, or the tabs whose URL matches
closed. The browser is left running (only the DevTools connection ends). Connecting is retried while Chrome starts,
for at most CONNECT_SECONDS (OSWorld: 15 tries 5 s apart).
"""

from __future__ import annotations

import logging
import time
from typing import TYPE_CHECKING

from symphony_mcp.errors import SymphonyError

if TYPE_CHECKING:
    from playwright.sync_api import Browser, Playwright

log = logging.getLogger(__name__)
CONNECT_SECONDS = 60.0
CONNECT_PAUSE_SECONDS = 1.0
PAGE_MS = 60_000  # OSWorld's page.goto timeout; a page that takes longer is logged, not fatal


class ChromeUnreachableError(SymphonyError):
    """The machine's Chrome did not answer on its DevTools port (the tab step cannot be done)."""


def open_tabs(endpoint: str, urls: list[str]) -> None:
    """Open each URL in a new tab of the machine's Chrome at `endpoint` (http://host:port), then close the tab it
    had first."""
    from playwright.sync_api import Error, sync_playwright

    with sync_playwright() as playwright:
        context = _connect(playwright, endpoint).contexts[0]
        first = context.pages[0] if context.pages else None
        for url in urls:
            page = context.new_page()
            try:
                page.goto(url, timeout=PAGE_MS)
            except Error as exc:
                log.warning("setup: opening %s in Chrome: %s", url, exc)
        if first is not None and urls:
            first.close()


def close_tabs(endpoint: str, urls: list[str]) -> None:
    """Close the first tab showing each URL (compared without a trailing slash) in the machine's Chrome."""
    from playwright.sync_api import sync_playwright

    with sync_playwright() as playwright:
        context = _connect(playwright, endpoint).contexts[0]
        for url in urls:
            page = next((p for p in context.pages if _same(p.url, url)), None)
            if page is None:
                log.warning("setup: no Chrome tab shows %s; nothing closed", url)
            else:
                page.close()


def _connect(playwright: Playwright, endpoint: str) -> Browser:
    from playwright.sync_api import Error

    deadline = time.monotonic() + CONNECT_SECONDS
    while True:
        try:
            return playwright.chromium.connect_over_cdp(endpoint)
        except Error as exc:
            if time.monotonic() > deadline:
                why = f"Chrome's DevTools at {endpoint} did not answer within {CONNECT_SECONDS:g} s: {exc}"
                raise ChromeUnreachableError(why) from exc
            time.sleep(CONNECT_PAUSE_SECONDS)


def _same(left: str, right: str) -> bool:
    return left.rstrip("/") == right.rstrip("/")
