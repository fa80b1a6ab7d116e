"""The searcher's browser: one isolated Chromium context with one current page, every request checked.

`ChromiumBrowser` implements the `Browser` contract (search/types.py). Isolation: a fresh context per session
(no profile or storage kept, downloads refused, no permissions, service workers blocked, web sockets closed).
Every request, navigation or subresource, goes through the URL policy (search/urls.py) in a context route; the
route fetches the request itself without following redirects, so each redirect hop is checked too. Underneath,
every connection the browser or the route's fetches make goes through the process's policy proxy
(search/proxy.py), which this session's policy governs while it is open: what no route sees (workers' sockets,
WebRTC, preconnects) is checked there, and the address checked is the address connected to. Each view lists what
was refused since the last one; an action whose navigation the policy refused raises UrlRefusedError. Links and
window.open stay in the current page (dom.INIT_SCRIPT); any other page that opens is closed with a notice.
Actions wait for the navigation they start (counted in the page, bounded by settings.step_timeout_seconds),
never for a fixed time. A crashed page is reopened once at the last good URL; a second crash ends the session.
"""

from __future__ import annotations

import asyncio
import contextlib
import io
from collections.abc import AsyncIterator, Awaitable, Callable
from urllib.parse import urljoin

from PIL import Image
from playwright.async_api import BrowserContext, Dialog, Download, Page, Request, Response, Route, WebSocketRoute
from playwright.async_api import Error as PlaywrightError

from symphony_mcp.config import SearchSettings
from symphony_mcp.errors import InvalidInputError, SymphonyError, clip
from symphony_mcp.imaging.geometry import Rect
from symphony_mcp.search.chromium import ChromiumProcess, launch_chromium
from symphony_mcp.search.dom import (
    CHOOSE_OPTION_SCRIPT,
    INIT_SCRIPT,
    MAX_ELEMENT_TEXT,
    MAX_VIEW_TEXT,
    NAVIGATIONS_SCRIPT,
    SCROLL_SETTLED_SCRIPT,
    SNAPSHOT_SCRIPT,
    read_snapshot,
)
from symphony_mcp.search.proxy import PROXY_ERROR_HEADER
from symphony_mcp.search.types import (
    SCROLL_STEP_PX,
    BrowserError,
    PageElement,
    PageView,
    Refusal,
    ScrollDirection,
    UrlRefusedError,
)
from symphony_mcp.search.urls import UrlPolicy
from symphony_mcp.vision.annotate import draw_marks

MAX_REDIRECTS = 10
MAX_REFUSALS_KEPT = 50  # per view: a page that tries thousands of hosts is reported by its first ones
MAX_SCROLL_AMOUNT = 100
_REDIRECTS = {301, 302, 303, 307, 308}
# Node's network errors (route.fetch) as the net errors Chromium shows for an aborted request.
_FETCH_ERRORS = (
    ("ECONNREFUSED", "connectionrefused", "net::ERR_CONNECTION_REFUSED", "the connection was refused"),
    ("ENOTFOUND", "namenotresolved", "net::ERR_NAME_NOT_RESOLVED", "the host name does not resolve"),
    ("EAI_AGAIN", "namenotresolved", "net::ERR_NAME_NOT_RESOLVED", "the host name does not resolve"),
    ("ECONNRESET", "connectionreset", "net::ERR_CONNECTION_RESET", "the connection was reset"),
    ("EHOSTUNREACH", "addressunreachable", "net::ERR_ADDRESS_UNREACHABLE", "the host is unreachable"),
    ("ENETUNREACH", "addressunreachable", "net::ERR_ADDRESS_UNREACHABLE", "the network is unreachable"),
    ("ETIMEDOUT", "timedout", "net::ERR_TIMED_OUT", "it timed out"),
    ("Timeout", "timedout", "net::ERR_TIMED_OUT", "it timed out"),
)


class _FetchError(Exception):
    """A request the route could not fetch: the abort code for Chromium and what to tell the agent."""

    def __init__(self, code: str, error: str, reason: str) -> None:
        super().__init__(f"{error} ({reason})")
        self.code = code


def marked_image(view: PageView) -> Image.Image:
    """The view's screenshot with each element's id drawn on its box (set-of-marks)."""
    origin = Rect(left=0, top=0, width=view.image.width, height=view.image.height)
    return draw_marks(view.image, origin, [(element.id, element.box) for element in view.elements])


class ChromiumBrowser:
    """One browsing session (the `Browser` contract). Start it with `ChromiumBrowser.start`; always `close` it."""

    def __init__(
        self,
        settings: SearchSettings,
        policy: UrlPolicy,
        process: ChromiumProcess,
        context: BrowserContext,
        owns_process: bool,
    ) -> None:
        self._settings = settings
        self._policy = policy
        self._process = process
        self._context = context
        self._owns_process = owns_process
        self._timeout_ms = settings.step_timeout_seconds * 1000
        self._page: Page | None = None
        self._crashed = False
        self._crashes = 0
        self._last_good_url: str | None = None
        self._load_error: str | None = None
        self._failed_url: str | None = None
        self._notices: list[str] = []
        self._refusals: dict[str, str] = {}  # URL -> why, for the navigation's requestfailed
        self._fetch_failures: dict[str, str] = {}
        self._refused_subresources: list[str] = []  # reasons, for the view's notice
        self._refused_since_view: list[Refusal] = []  # since the last view
        self._blocked: str | None = None  # why the current action's navigation was refused
        self._no_document: set[str] = set()  # navigations answered with a download or no content
        self._navigation_serial = 0  # main-frame navigation requests seen
        self._navigation_done = asyncio.Event()
        self._creating_page = False

    @classmethod
    async def start(
        cls, settings: SearchSettings, policy: UrlPolicy, process: ChromiumProcess | None = None
    ) -> ChromiumBrowser:
        """A fresh session in `process` (shared, left running on close; one session at a time) or in a Chromium of
        its own."""
        owns_process = process is None
        running = process if process is not None else await launch_chromium(settings)
        if running.proxy.policy is not None:
            raise BrowserError("this Chromium already has an open browsing session; close it first")
        running.proxy.policy = policy
        try:
            width, height = settings.viewport_size
            version = running.browser.version.split(".")[0]
            context = await running.browser.new_context(
                viewport={"width": width, "height": height},
                device_scale_factor=1,
                accept_downloads=False,
                service_workers="block",
                permissions=[],
                java_script_enabled=True,
                locale="en-US",
                # Headless Chromium says "HeadlessChrome": some engines answer it with a bot check.
                user_agent=f"Mozilla/5.0 (X11; Linux x86_64) AppleWebKit/537.36 (KHTML, like Gecko) "
                f"Chrome/{version}.0.0.0 Safari/537.36",
            )
            context.set_default_timeout(settings.step_timeout_seconds * 1000)
            browser = cls(settings, policy, running, context, owns_process)
            running.proxy.on_refused = browser._on_connection_refused
            await context.add_init_script(INIT_SCRIPT)
            await context.route("**/*", browser._route)
            await context.route_web_socket("**/*", _close_web_socket)
            context.on("page", browser._on_new_page)
            await browser._new_page()
        except PlaywrightError as exc:
            running.proxy.policy = running.proxy.on_refused = None
            if owns_process:
                await running.close()
            raise BrowserError(f"could not open a browser session in {running.executable}: {exc.message}") from None
        return browser

    @property
    def page(self) -> Page | None:
        """The current Playwright page (for tests and benchmarks that measure what the agent cannot see)."""
        return self._page

    # -- the Browser contract -------------------------------------------------------------------------------

    async def open(self, url: str) -> None:
        try:
            checked = await self._policy.check(url)
        except UrlRefusedError as exc:
            self._add_refusal(Refusal(url=url, reason=str(exc)))
            raise
        page = await self._current_page()
        await self._navigate(lambda: page.goto(checked.url, wait_until="load", timeout=self._timeout_ms))

    async def view(self) -> PageView:
        page = await self._current_page()
        try:
            screenshot, raw = await self._read(page)
        except PlaywrightError as exc:
            if not self._crashed and "crash" not in exc.message.lower():
                # Usually the page navigated while it was being read (a script redirect): read the new one.
                with contextlib.suppress(PlaywrightError):
                    await page.wait_for_load_state("load", timeout=self._timeout_ms)
            else:
                self._crashed = True
            page = await self._current_page()
            try:
                screenshot, raw = await self._read(page)
            except PlaywrightError as again:
                raise BrowserError(f"the page could not be read: {clip(again.message, 300)}") from None
        snapshot = read_snapshot(raw)
        image = Image.open(io.BytesIO(screenshot))
        image.load()
        url = page.url
        if url.startswith("chrome-error:") and self._failed_url:
            url = self._failed_url
        notices, self._notices = self._notices, []
        if self._refused_subresources:
            count, first = len(self._refused_subresources), self._refused_subresources[0]
            notices.append(f"{count} request(s) of this page were refused by the URL policy, e.g. {first}")
            self._refused_subresources = []
        refused, self._refused_since_view = self._refused_since_view, []
        return PageView(
            url=url,
            title=snapshot.title,
            image=image.convert("RGB"),
            elements=snapshot.elements,
            text=snapshot.text,
            scroll_top=snapshot.scroll_top,
            scroll_height=snapshot.scroll_height,
            load_error=self._load_error,
            notices=notices,
            refused=refused,
        )

    async def click(self, element: PageElement) -> None:
        x, y = self._centre(element)
        async with self._input("click") as page:
            await self._act(page, lambda: page.mouse.click(x, y))

    async def type(self, element: PageElement, text: str, enter: bool) -> None:
        """Type into a field (focused by a click, emptied first); into a list (select), choose the option."""
        x, y = self._centre(element)
        async with self._input("choice" if element.role == "select" else "click") as page:
            if element.role == "select":
                await self._act(page, lambda: self._choose(page, element, x, y, text))
                return
            await self._act(page, lambda: page.mouse.click(x, y))
        async with self._input("type") as page:
            await page.keyboard.press("Control+A")
            await page.keyboard.press("Delete")
            if text:
                await page.keyboard.insert_text(text)
            if enter:
                await self._act(page, lambda: page.keyboard.press("Enter"))

    async def scroll(self, direction: ScrollDirection, amount: int) -> None:
        if not 1 <= amount <= MAX_SCROLL_AMOUNT:
            raise InvalidInputError(f"scroll amount must be 1 to {MAX_SCROLL_AMOUNT} steps, got {clip(amount)}")
        width, height = self._settings.viewport_size
        async with self._input("scroll") as page:
            await page.mouse.move(width / 2, height / 2)
            await page.mouse.wheel(0, amount * SCROLL_STEP_PX * (1 if direction == "down" else -1))
            await page.evaluate(SCROLL_SETTLED_SCRIPT)

    @contextlib.asynccontextmanager
    async def _input(self, what: str) -> AsyncIterator[Page]:
        """The current page for an input action. A renderer that dies under it (its crash event may come only
        after the action failed) marks the page crashed, for the next view to reopen it; other Playwright
        failures become errors that say which action failed."""
        page = await self._current_page()
        try:
            yield page
        except PlaywrightError as exc:
            message = exc.message.splitlines()[0] if exc.message else type(exc).__name__
            if "crash" in message.lower() or page.is_closed():
                self._crashed = True
                self._notice(f"the page crashed during the {what}, which may not have happened")
                return
            raise SymphonyError(f"the {what} failed in the browser: {clip(message, 300)}") from None

    async def go_back(self) -> None:
        page = await self._current_page()
        url, serial = page.url, self._navigation_serial
        await self._navigate(lambda: page.go_back(wait_until="load", timeout=self._timeout_ms))
        if page.url == url and serial == self._navigation_serial:
            self._notice("there is no previous page to go back to")

    async def close(self) -> None:
        try:
            with contextlib.suppress(PlaywrightError):
                await self._context.close()
        finally:
            self._process.proxy.policy = self._process.proxy.on_refused = None
            if self._owns_process:
                await self._process.close()

    # -- navigation -----------------------------------------------------------------------------------------

    async def _navigate(self, go: Callable[[], Awaitable[Response | None]]) -> None:
        """Run a navigation Playwright waits for itself (goto, go_back); a failure becomes the load error."""
        self._navigation_done.clear()
        try:
            await go()
        except PlaywrightError as exc:
            if "crash" in exc.message.lower():
                self._crashed = True
            elif self._load_error is None:
                self._load_error = clip(exc.message.splitlines()[0], 300)

    async def _act(self, page: Page, action: Callable[[], Awaitable[None]]) -> None:
        """Do an input action, then wait (bounded) for the load of a navigation it started, if any; UrlRefusedError
        when the policy refused that navigation (the page stays as it was)."""
        serial = self._navigation_serial
        self._navigation_done.clear()
        self._blocked = None
        before = await self._navigations_in(page)
        await action()
        after = await self._navigations_in(page)
        if after is not None and before is not None and after <= before and self._navigation_serial == serial:
            await self._note_refused_links(page)
        else:
            try:
                await asyncio.wait_for(self._navigation_done.wait(), timeout=self._settings.step_timeout_seconds)
            except TimeoutError:
                self._load_error = f"the page did not finish loading within {self._settings.step_timeout_seconds:g} s"
        blocked, self._blocked = self._blocked, None
        if blocked is not None:
            raise UrlRefusedError(blocked)

    async def _choose(self, page: Page, element: PageElement, x: float, y: float, text: str) -> None:
        answer = await page.evaluate(CHOOSE_OPTION_SCRIPT, [x, y, text])
        if answer is None:
            raise InvalidInputError(f"element {element.id} is no longer a list; take a new view")
        if answer is not True:
            raise InvalidInputError(
                f"element {element.id} has no option {clip(text)}; its options are: {clip(answer, 1000)}"
            )

    async def _navigations_in(self, page: Page) -> int | None:
        """Navigations the document started; None when it is gone (a navigation replaced it)."""
        try:
            return int(await page.evaluate(NAVIGATIONS_SCRIPT))
        except PlaywrightError as exc:
            if "crash" in exc.message.lower():
                self._crashed = True
            return None

    async def _note_refused_links(self, page: Page) -> None:
        """Links to other schemes (file:, javascript:, ...) never reach the network: the page kept them."""
        with contextlib.suppress(PlaywrightError):
            urls = await page.evaluate("() => (window.__symphonyRefused || []).splice(0)")
            for url in urls:
                try:
                    self._policy.check_syntax(str(url))
                except UrlRefusedError as exc:
                    self._load_error = self._blocked = str(exc)
                    self._add_refusal(Refusal(url=str(url), reason=str(exc)))

    # -- events ---------------------------------------------------------------------------------------------

    def _watch(self, page: Page) -> None:
        page.on("crash", self._on_crash)
        page.on("dialog", self._on_dialog)
        page.on("download", self._on_download)
        page.on("request", self._on_request)
        page.on("response", self._on_response)
        page.on("requestfailed", self._on_request_failed)
        page.on("load", self._on_load)

    def _is_main_navigation(self, request: Request) -> bool:
        page = self._page
        return page is not None and request.is_navigation_request() and request.frame == page.main_frame

    def _on_request(self, request: Request) -> None:
        if self._is_main_navigation(request):
            self._navigation_serial += 1
            self._load_error = None
            self._failed_url = None

    def _on_response(self, response: Response) -> None:
        request = response.request
        if not self._is_main_navigation(request):
            return
        if response.status >= 400:
            self._load_error = f"HTTP {response.status} {response.status_text}: {request.url}".replace("  ", " ")
        download = response.headers.get("content-disposition", "").lower().startswith("attachment")
        if download or response.status in (204, 205):
            # No document follows: a download (refused) or an empty answer; the page stays as it was.
            self._no_document.add(request.url)
            if download:
                self._on_download(request)
            self._navigation_done.set()

    def _on_request_failed(self, request: Request) -> None:
        if not self._is_main_navigation(request):
            return
        if request.url in self._no_document:
            self._no_document.discard(request.url)
            return
        refused = self._refusals.pop(request.url, None)
        self._blocked = refused
        why = refused or self._fetch_failures.pop(request.url, None)
        self._load_error = why or f"{request.failure or 'the request failed'}: {request.url}"
        self._failed_url = request.url
        self._navigation_done.set()

    def _on_load(self, page: Page) -> None:
        if page is not self._page:
            return
        url = page.url
        if not url.startswith("chrome-error:") and self._load_error is None:
            self._last_good_url = url
        self._navigation_done.set()

    def _on_crash(self, page: Page) -> None:
        if page is self._page:
            self._crashed = True
            self._navigation_done.set()

    def _on_dialog(self, dialog: Dialog) -> None:
        self._notice(f"the page opened a dialog ({clip(dialog.message, 100)}); it was dismissed")
        asyncio.get_running_loop().create_task(_dismiss(dialog))

    def _on_download(self, download: Download | Request) -> None:
        self._notice(f"{download.url} is a download; downloads are refused, nothing was saved")

    def _notice(self, text: str) -> None:
        if text not in self._notices:
            self._notices.append(text)

    def _on_new_page(self, page: Page) -> None:
        if self._creating_page or page is self._page:
            return
        self._notice("the page tried to open another window; it was closed (the current page stays)")
        asyncio.get_running_loop().create_task(_close_quietly(page))

    # -- the request route: every request checked, every redirect hop too ----------------------------------

    async def _route(self, route: Route, request: Request) -> None:
        try:
            page = request.frame.page
        except PlaywrightError:
            page = None  # a worker's request
        if (page is not None and page is not self._page) or request.resource_type == "media":
            # Another window's request (it is being closed), or audio and video: no use in screenshots, and a
            # stream would be fetched whole before the page got it.
            await _abort_quietly(route, "blockedbyclient")
            return
        try:
            await self._policy.check(request.url)
            await self._fetch_checked(route, request)
        except UrlRefusedError as exc:
            self._refused(request, str(exc))
            await _abort_quietly(route, "blockedbyclient")
        except _FetchError as exc:
            self._fetch_failures[request.url] = f"{request.url} could not be loaded: {exc}"
            await _abort_quietly(route, exc.code)
        except PlaywrightError:  # the page or the session closed meanwhile
            await _abort_quietly(route, "aborted")

    def _refused(self, request: Request, reason: str) -> None:
        self._add_refusal(Refusal(url=request.url, reason=reason))
        if self._is_main_navigation(request):
            self._refusals[request.url] = reason
        else:
            self._refused_subresources.append(reason)

    def _on_connection_refused(self, refusal: Refusal) -> None:
        """The proxy refused a connection no route saw (a worker's socket, WebRTC's TURN, a preconnect)."""
        self._add_refusal(refusal)
        self._refused_subresources.append(refusal.reason)

    def _add_refusal(self, refusal: Refusal) -> None:
        kept = self._refused_since_view
        if len(kept) < MAX_REFUSALS_KEPT and all(known.url != refusal.url for known in kept):
            kept.append(refusal)

    async def _fetch_checked(self, route: Route, request: Request) -> None:
        """Fetch without following redirects; check each Location; answer with the response or a redirect to
        the last hop (checked), which Chromium then loads directly."""
        url, method, body = request.url, request.method, request.post_data_buffer
        headers: dict[str, str] | None = None  # the request's own, cookies included
        for hop in range(MAX_REDIRECTS + 1):
            try:
                response = await route.fetch(
                    url=url, method=method, post_data=body, headers=headers, max_redirects=0, timeout=self._timeout_ms
                )
            except PlaywrightError as exc:
                raise _fetch_failure(exc.message) from None
            failure = response.headers.get(PROXY_ERROR_HEADER)
            if failure is not None:  # the proxy's own answer: no connection was made
                text = await response.text()
                await response.dispose()
                raise UrlRefusedError(text) if failure == "refused" else _fetch_failure(f"{failure}: {text}")
            location = response.headers.get("location")
            if response.status not in _REDIRECTS or not location:
                if hop == 0:
                    await route.fulfill(response=response)
                else:
                    await response.dispose()
                    await route.fulfill(status=302, headers={"location": url})
                return
            await response.dispose()
            url = urljoin(url, location)
            await self._policy.check(url)
            if response.status in (301, 302, 303) and method not in ("GET", "HEAD"):
                method, body = "GET", None
            # Another host gets none of the first one's credentials (the context's own cookies for it still go).
            kept = headers if headers is not None else request.headers
            headers = {k: v for k, v in kept.items() if k.lower() not in ("cookie", "authorization", "host")}
        raise _FetchError("failed", "net::ERR_TOO_MANY_REDIRECTS", f"more than {MAX_REDIRECTS} redirects")

    # -- pages and crashes ----------------------------------------------------------------------------------

    async def _current_page(self) -> Page:
        """The current page; after a crash, a new page at the last good URL (once), else BrowserError."""
        page = self._page
        if page is not None and not self._crashed and not page.is_closed():
            return page
        self._crashes += 1
        where = self._last_good_url
        if self._crashes > 1:
            raise BrowserError(
                f"the page crashed again after being reopened once (last good page: {where or 'none'}); "
                "the browsing session cannot go on"
            )
        self._crashed = False
        fresh = await self._new_page()
        if page is not None:
            await _close_quietly(page)
        if where is not None:
            await self.open(where)
        self._notice(f"the page crashed and was reopened at {where or 'about:blank'}")
        return fresh

    async def _new_page(self) -> Page:
        self._creating_page = True  # the context's "page" event comes before new_page() returns
        try:
            page = self._page = await self._context.new_page()
        finally:
            self._creating_page = False
        self._watch(page)
        return page

    async def _read(self, page: Page) -> tuple[bytes, dict[str, object]]:
        screenshot = await page.screenshot(type="png", timeout=self._timeout_ms)
        raw = await page.evaluate(SNAPSHOT_SCRIPT, [self._settings.max_elements, MAX_ELEMENT_TEXT, MAX_VIEW_TEXT])
        return screenshot, raw

    def _centre(self, element: PageElement) -> tuple[float, float]:
        width, height = self._settings.viewport_size
        x = element.box.left + element.box.width / 2
        y = element.box.top + element.box.height / 2
        if not (0 <= x < width and 0 <= y < height):
            raise InvalidInputError(
                f"element {element.id}'s centre ({x:g}, {y:g}) is outside the {width}x{height} viewport; "
                "take a new view and use its elements"
            )
        return x, y


def _fetch_failure(message: str) -> _FetchError:
    for marker, code, error, reason in _FETCH_ERRORS:
        if marker in message:
            return _FetchError(code, error, reason)
    return _FetchError("failed", "net::ERR_FAILED", clip(message.splitlines()[0] if message else "failed", 200))


async def _abort_quietly(route: Route, code: str) -> None:
    with contextlib.suppress(PlaywrightError):
        await route.abort(code)


async def _close_quietly(page: Page) -> None:
    with contextlib.suppress(PlaywrightError):
        await page.close()


async def _dismiss(dialog: Dialog) -> None:
    with contextlib.suppress(PlaywrightError):
        await dialog.dismiss()


async def _close_web_socket(socket: WebSocketRoute) -> None:
    await socket.close(code=1008, reason="web sockets are not allowed in the searcher's browser")
