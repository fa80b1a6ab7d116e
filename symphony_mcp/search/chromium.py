"""Starting the system Chromium under Playwright, quietly, confined to its proxy, and stopping it without leftovers.

Never `playwright install` (it downloads a browser and fails offline): the Chromium of the OS is driven through
`executable_path`. Debian's /usr/bin/chromium is a shell wrapper; the real binary is /usr/lib/chromium/chromium.

The network: Chromium runs in a network namespace of its own (`unshare --user --map-root-user --net`) where only
loopback exists; a wrapper script, given to Playwright as the executable, enters it and starts netns_relay.py,
which forwards the namespace's 127.0.0.1:PORT to the policy proxy (search/proxy.py) over a Unix socket and then
becomes Chromium. Chromium's proxy is that port, loopback included, so every connection it makes, of any kind, is
the proxy's to allow; Playwright's own fetches use the same proxy over TCP. Where namespaces do not work, the
launch is refused unless settings.allow_unconfined_network accepts a browser kept in by its flags only.
"""

from __future__ import annotations

import functools
import os
import shlex
import shutil
import subprocess
import sys
import tempfile
from dataclasses import dataclass
from pathlib import Path

from playwright.async_api import Browser as PlaywrightBrowser
from playwright.async_api import Error as PlaywrightError
from playwright.async_api import Playwright, async_playwright

from symphony_mcp.config import SearchSettings
from symphony_mcp.search import netns_relay
from symphony_mcp.search.proxy import PolicyProxy
from symphony_mcp.search.types import BrowserError

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
    # One switch (a second would replace it): no speculative loads (prerendering, preloading heuristics), no
    # autofill server queries.
    "--disable-features=Translate,MediaRouter,OptimizationHints,Prerender2,PreloadingHeuristics,"
    "AutofillServerCommunication",
    "--metrics-recording-only",
    "--password-store=basic",
)
# Every connection goes through the proxy, loopback too; no name is resolved inside (the proxy resolves); WebRTC
# sends no UDP of its own; no DNS prefetching.
NETWORK_ARGS = (
    "--proxy-bypass-list=<-loopback>",
    "--host-resolver-rules=MAP * ~NOTFOUND , EXCLUDE 127.0.0.1",
    "--webrtc-ip-handling-policy=disable_non_proxied_udp",
    "--dns-prefetch-disable",
)
_UNSHARE = ("--user", "--map-root-user", "--net")
_INSTALL_HINT = "install Debian's chromium (apt-get install chromium) or set SYMPHONY_SEARCH__BROWSER to a Chromium"


def chromium_executable(settings: SearchSettings) -> str:
    """The Chromium to run: settings.browser, else the real binary of the OS package, else one on PATH."""
    if settings.browser is not None:
        if not os.access(settings.browser, os.X_OK):
            raise BrowserError(f"the browser {settings.browser} (settings search.browser) is not an executable file")
        return str(settings.browser)
    for candidate in _REAL_BINARIES:
        if Path(candidate).exists():
            return candidate
    for name in _ON_PATH:
        found = shutil.which(name)
        if found:
            return found
    raise BrowserError(f"no Chromium found ({', '.join(_REAL_BINARIES + _ON_PATH)}); {_INSTALL_HINT}")


@functools.cache
def _namespaces_work(unshare: str) -> bool:
    try:
        return subprocess.run([unshare, *_UNSHARE, "true"], capture_output=True, timeout=10).returncode == 0
    except (OSError, subprocess.SubprocessError):
        return False


def network_namespace(settings: SearchSettings) -> str | None:
    """The unshare(1) that gives the browser a network namespace; None only when settings allow going without."""
    unshare = shutil.which("unshare")
    if unshare and _namespaces_work(unshare):
        return unshare
    if settings.allow_unconfined_network:
        return None
    raise BrowserError(
        "the searcher's browser cannot get a network namespace of its own here (`unshare --user --map-root-user "
        "--net` is missing or refused: user namespaces may be off), and without one the URL policy cannot be "
        "enforced on all of its connections. Enable unprivileged user namespaces (sysctl "
        "kernel.unprivileged_userns_clone=1), or accept a browser kept on the policy's proxy by its flags only "
        "with SYMPHONY_SEARCH__ALLOW_UNCONFINED_NETWORK=true"
    )


def _confining_wrapper(folder: Path, unshare: str, browser: str, port: int, proxy_socket: Path) -> Path:
    """The executable Playwright starts: enter a new network namespace, start the relay, become `browser`."""
    command = [unshare, *_UNSHARE, "--", sys.executable, "-I", netns_relay.__file__, str(port), str(proxy_socket)]
    script = folder / "chromium"
    script.write_text(f'#!/bin/sh\nexec {shlex.join(command)} -- {shlex.quote(browser)} "$@"\n')
    script.chmod(0o700)
    return script


@dataclass
class ChromiumProcess:
    """One running Chromium (and its Playwright driver) and its proxy; sessions are fresh contexts inside it, one
    at a time (the proxy applies the open session's policy)."""

    playwright: Playwright
    browser: PlaywrightBrowser
    executable: str
    proxy: PolicyProxy
    folder: tempfile.TemporaryDirectory[str]

    async def close(self) -> None:
        try:
            await self.browser.close()
        finally:
            try:
                await self.playwright.stop()
            finally:
                await self.proxy.close()
                self.folder.cleanup()


async def launch_chromium(settings: SearchSettings) -> ChromiumProcess:
    """Start Chromium behind its policy proxy: headless, or on the server's DISPLAY when settings.headful.
    BrowserError says why not."""
    executable = chromium_executable(settings)
    if settings.headful and not os.environ.get("DISPLAY"):
        raise BrowserError("search.headful is set but the server has no DISPLAY; unset it or start a display")
    unshare = network_namespace(settings)
    folder = tempfile.TemporaryDirectory(prefix="symphony-browser-")
    proxy = PolicyProxy(connect_timeout=settings.step_timeout_seconds)
    playwright: Playwright | None = None
    try:
        proxy_socket = Path(folder.name) / "proxy.sock"
        await proxy.start(proxy_socket if unshare else None)
        launched = executable
        if unshare is not None:
            launched = str(_confining_wrapper(Path(folder.name), unshare, executable, proxy.port, proxy_socket))
        playwright = await async_playwright().start()
        browser = await playwright.chromium.launch(
            executable_path=launched,
            headless=not settings.headful,
            args=[*LAUNCH_ARGS, *NETWORK_ARGS],
            proxy={"server": f"http://127.0.0.1:{proxy.port}"},
            timeout=max(30_000, settings.step_timeout_seconds * 1000),
        )
    except PlaywrightError as exc:
        await _undo(playwright, proxy, folder)
        first_lines = " ".join(str(exc.message).splitlines()[:3])
        raise BrowserError(f"Chromium ({executable}) did not start: {first_lines}; {_INSTALL_HINT}") from None
    except BaseException:
        await _undo(playwright, proxy, folder)
        raise
    return ChromiumProcess(playwright=playwright, browser=browser, executable=executable, proxy=proxy, folder=folder)


async def _undo(playwright: Playwright | None, proxy: PolicyProxy, folder: tempfile.TemporaryDirectory[str]) -> None:
    try:
        if playwright is not None:
            await playwright.stop()
    finally:
        await proxy.close()
        folder.cleanup()
