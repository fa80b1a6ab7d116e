"""Search backends: where a search starts (a results page for the browser) and model-free queries (search_docs).

DuckDuckGo's HTML endpoint and SearXNG (JSON API or HTML page) are read over HTTP, through a policy proxy of their
own (search/proxy.py, the browser's rule: the engine's host is trusted, any other host a redirect leads to must be
public, and the address checked is the address connected to); a URL template only gives a start page; `local` is
the offline docs index behind the docs server. Everything read from an engine is data: titles,
URLs and snippets, never instructions. `open_backend` picks one from the settings.
"""

from __future__ import annotations

import json
from html.parser import HTMLParser
from pathlib import Path
from urllib.parse import parse_qs, quote_plus, urljoin, urlsplit

import anyio
import httpx

from symphony_mcp.config import SearchSettings
from symphony_mcp.errors import clip
from symphony_mcp.search.docs_index import DocsIndex
from symphony_mcp.search.docs_server import DocsServer
from symphony_mcp.search.proxy import PROXY_ERROR_HEADER, PolicyProxy
from symphony_mcp.search.types import DocHit, Refusal, SearchBackend, SearchUnavailableError
from symphony_mcp.search.urls import UrlPolicy

MAX_RESPONSE_BYTES = 5_000_000  # of one results page or JSON answer read
MAX_HTTP_SECONDS = 30.0  # bound of one engine request, also when the step timeout is longer
MAX_TITLE, MAX_SNIPPET = 300, 1_000  # characters kept of each
USER_AGENT = "Mozilla/5.0 (X11; Linux x86_64) symphony-mcp"


def _with_query(base: str, query: str) -> str:
    return f"{base}{'&' if '?' in base else '?'}q={quote_plus(query)}"


def _host_port(url: str) -> str:
    parts = urlsplit(url)
    port = parts.port or {"http": 80, "https": 443}.get(parts.scheme, 0)
    return f"{parts.hostname}:{port}"


def _hit(title: str, url: str, snippet: str, engine: str) -> DocHit:
    return DocHit(
        title=" ".join(title.split())[:MAX_TITLE],
        url=url,
        snippet=" ".join(snippet.split())[:MAX_SNIPPET],
        engine=engine,
    )


class _ResultsParser(HTMLParser):
    """The hits of a results page: each element with class `result` is one; its title and link are those of the link
    inside its heading (h2 or h3), its snippet the text of the element with class `snippet_class`."""

    def __init__(self, snippet_class: str) -> None:
        super().__init__(convert_charrefs=True)
        self.hits: list[tuple[str, str, str]] = []  # title, href as written, snippet
        self._snippet_class = snippet_class
        self._container: tuple[str, int] | None = None  # tag, nesting depth of that tag
        self._skip = False  # an ad
        self._heading = 0
        self._title: list[str] | None = None
        self._href = ""
        self._titles: list[str] = []
        self._snippet: tuple[str, int] | None = None
        self._snippets: list[str] = []

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        classes = (dict(attrs).get("class") or "").split()
        if self._container is None:
            if "result" in classes:
                self._container, self._skip = (tag, 1), "result--ad" in classes
                self._titles, self._snippets, self._href = [], [], ""
            return
        name, depth = self._container
        if tag == name:
            self._container = (name, depth + 1)
        if tag in ("h2", "h3"):
            self._heading += 1
        elif tag == "a" and self._heading and self._title is None and not self._href:
            self._title, self._href = [], dict(attrs).get("href") or ""
        if self._snippet is not None and tag == self._snippet[0]:
            self._snippet = (tag, self._snippet[1] + 1)
        elif self._snippet is None and self._snippet_class in classes:
            self._snippet = (tag, 1)

    def handle_endtag(self, tag: str) -> None:
        if self._container is None:
            return
        if tag in ("h2", "h3") and self._heading:
            self._heading -= 1
        elif tag == "a" and self._title is not None:
            self._titles, self._title = self._title, None
        if self._snippet is not None and tag == self._snippet[0]:
            depth = self._snippet[1] - 1
            self._snippet = (tag, depth) if depth else None
        name, depth = self._container
        if tag == name:
            if depth > 1:
                self._container = (name, depth - 1)
                return
            self._container = None
            if self._href and not self._skip:
                self.hits.append(("".join(self._titles), self._href, "".join(self._snippets)))

    def handle_data(self, data: str) -> None:
        if self._title is not None:
            self._title.append(data)
        elif self._snippet is not None:
            self._snippets.append(data)


def parse_results(page: str, page_url: str, snippet_class: str, engine: str, limit: int) -> list[DocHit]:
    """Hits from a results page; links are made absolute and DuckDuckGo's redirect (`/l/?uddg=`) unwrapped."""
    parser = _ResultsParser(snippet_class)
    parser.feed(page)
    parser.close()
    hits: list[DocHit] = []
    for title, href, snippet in parser.hits:
        url = urljoin(page_url, href)
        parts = urlsplit(url)
        if parts.hostname and parts.hostname.endswith("duckduckgo.com") and parts.path.startswith("/l/"):
            url = parse_qs(parts.query).get("uddg", [""])[0]
        if urlsplit(url).scheme in ("http", "https") and title.strip():
            hits.append(_hit(title, url, snippet, engine))
        if len(hits) >= limit:
            break
    return hits


class _HttpEngine:
    """An engine read over HTTP: bounded time and size, failures as SearchUnavailableError naming the engine."""

    name: str
    _label: str  # how errors name the engine

    def __init__(self, base_url: str, settings: SearchSettings) -> None:
        self._base = base_url
        self._timeout = min(settings.step_timeout_seconds, MAX_HTTP_SECONDS)
        self._proxy = PolicyProxy(connect_timeout=self._timeout)
        self._proxy.policy = UrlPolicy.build(settings, self.trusted_hosts())
        self._proxy.on_refused = self._on_refused
        self._refusal: Refusal | None = None
        self._client: httpx.AsyncClient | None = None

    def trusted_hosts(self) -> list[str]:
        return [_host_port(self._base)]

    async def aclose(self) -> None:
        if self._client is not None:
            client, self._client = self._client, None
            await client.aclose()
            await self._proxy.close()

    def _on_refused(self, refusal: Refusal) -> None:
        self._refusal = refusal

    async def _started(self) -> httpx.AsyncClient:
        """The client, behind the proxy (started on first use: a server that never searches listens on nothing)."""
        if self._client is None:
            await self._proxy.start(None)
            self._client = httpx.AsyncClient(
                timeout=self._timeout,
                follow_redirects=True,
                headers={"User-Agent": USER_AGENT},
                proxy=f"http://127.0.0.1:{self._proxy.port}",
                trust_env=False,  # no HTTP_PROXY from the environment: this proxy is the way out
            )
        return self._client

    async def _fetch(
        self, method: str, url: str, data: dict[str, str] | None = None, params: dict[str, str] | None = None
    ) -> tuple[int, str]:
        """Status and text of the answer (at most MAX_RESPONSE_BYTES of it)."""
        self._refusal = None
        try:
            with anyio.fail_after(self._timeout):
                client = await self._started()
                request = client.build_request(method, url, data=data, params=params)
                response = await client.send(request, stream=True)
                failure = response.headers.get(PROXY_ERROR_HEADER)
                if failure is not None:  # the proxy's own answer: no connection was made
                    await response.aread()
                    raise self._unreachable(response.text, refused=failure == "refused")
                try:
                    body = bytearray()
                    async for chunk in response.aiter_bytes():
                        body += chunk
                        if len(body) >= MAX_RESPONSE_BYTES:
                            break
                finally:
                    await response.aclose()
        except TimeoutError:
            raise SearchUnavailableError(
                f"{self._label} at {self._base} did not answer within {self._timeout:g} s"
            ) from None
        except httpx.HTTPError as exc:
            if self._refusal is not None:
                raise self._unreachable(self._refusal.reason, refused=True) from None
            raise self._unreachable(f"{type(exc).__name__}: {clip(str(exc))}", refused=False) from None
        return response.status_code, bytes(body[:MAX_RESPONSE_BYTES]).decode(response.encoding or "utf-8", "replace")

    def _unreachable(self, detail: str, refused: bool) -> SearchUnavailableError:
        if refused:
            return SearchUnavailableError(f"{self._label} at {self._base} may not be reached: {detail}")
        return SearchUnavailableError(
            f"{self._label} at {self._base} cannot be reached ({detail}); "
            "check the address and the network, or set search.engine to local for the offline docs index"
        )

    def _refused(self, status: int) -> SearchUnavailableError:
        return SearchUnavailableError(f"{self._label} at {self._base} answered HTTP {status} instead of results")


class DuckDuckGoBackend(_HttpEngine):
    """DuckDuckGo's HTML endpoint (no JavaScript, no key): results in `div.result`, links behind `/l/?uddg=`."""

    name = "duckduckgo"
    _label = "DuckDuckGo"

    async def results_page(self, query: str) -> str:
        return _with_query(self._base, query)

    async def search(self, query: str, limit: int) -> list[DocHit]:
        status, page = await self._fetch("POST", self._base, data={"q": query})
        hits = parse_results(page, self._base, "result__snippet", self.name, limit) if status == 200 else []
        if status == 202 or (not hits and "anomaly" in page):
            raise SearchUnavailableError(
                f"DuckDuckGo refused the query as automated traffic (HTTP {status}, its bot check); try again in a few "
                "minutes, or set search.engine to searxng (with search.searxng_url) or local (the offline docs index)"
            )
        if status != 200:
            raise self._refused(status)
        return hits


class SearxngBackend(_HttpEngine):
    """A SearXNG instance: its JSON API (`format=json`, must be enabled in its settings.yml) or its HTML page."""

    name = "searxng"
    _label = "SearXNG"

    def __init__(self, base_url: str, settings: SearchSettings) -> None:
        super().__init__(base_url.rstrip("/"), settings)
        self._format = settings.searxng_format

    async def results_page(self, query: str) -> str:
        return _with_query(f"{self._base}/search", query)

    async def search(self, query: str, limit: int) -> list[DocHit]:
        params = {"q": query, **({"format": "json"} if self._format == "json" else {})}
        url = f"{self._base}/search"
        status, text = await self._fetch("GET", url, params=params)
        if status == 403 and self._format == "json":
            raise SearchUnavailableError(
                f"SearXNG at {self._base} refused format=json (HTTP 403): enable it in the instance's settings.yml "
                "(search: formats: [html, json]) or set search.searxng_format to html"
            )
        if status != 200:
            raise self._refused(status)
        if self._format == "html":
            return parse_results(text, url, "content", self.name, limit)
        try:
            results = json.loads(text).get("results", [])
            return [
                _hit(str(item.get("title") or item["url"]), item["url"], str(item.get("content") or ""), self.name)
                for item in results
                if isinstance(item, dict)
                and isinstance(item.get("url"), str)
                and urlsplit(item["url"]).scheme in ("http", "https")
            ][:limit]
        except (ValueError, AttributeError, TypeError) as exc:
            raise SearchUnavailableError(f"SearXNG at {self._base} did not answer JSON results ({exc})") from None


class TemplateBackend:
    """Any results page: the template with `{query}` replaced by the URL-encoded query; the browser reads it."""

    name = "template"

    def __init__(self, template: str) -> None:
        self._template = template

    async def results_page(self, query: str) -> str:
        return self._template.replace("{query}", quote_plus(query))

    async def search(self, query: str, limit: int) -> list[DocHit]:
        raise SearchUnavailableError(
            "search.engine = template only gives the browser a start page; search_docs needs search.engine "
            "duckduckgo, searxng or local"
        )

    def trusted_hosts(self) -> list[str]:
        return [_host_port(self._template.replace("{query}", ""))]

    async def aclose(self) -> None:
        return None


class LocalBackend:
    """The offline docs index, served on 127.0.0.1 by the docs server, which starts on first use."""

    name = "local"

    def __init__(self, index: Path) -> None:
        self._index_path = index
        self._server: DocsServer | None = None
        self._lock = anyio.Lock()

    async def _started(self) -> DocsServer:
        async with self._lock:
            if self._server is None:
                index = await anyio.to_thread.run_sync(DocsIndex, self._index_path)
                self._server = DocsServer(index)
            return self._server

    async def results_page(self, query: str) -> str:
        return (await self._started()).results_url(query)

    async def search(self, query: str, limit: int) -> list[DocHit]:
        server = await self._started()
        return await anyio.to_thread.run_sync(server.hits, query, limit)

    def trusted_hosts(self) -> list[str]:
        """The docs server's host:port once it runs (results_page or search starts it)."""
        return [self._server.host] if self._server is not None else []

    async def aclose(self) -> None:
        if self._server is not None:
            server, self._server = self._server, None
            await anyio.to_thread.run_sync(server.close)
            server.index.close()


def open_backend(settings: SearchSettings) -> SearchBackend:
    """The backend `settings.engine` names; a missing setting it needs is a SearchUnavailableError saying which."""
    if settings.engine == "duckduckgo":
        return DuckDuckGoBackend(settings.duckduckgo_url, settings)
    if settings.engine == "searxng":
        if not settings.searxng_url:
            raise SearchUnavailableError(
                "search.engine is searxng but search.searxng_url is not set "
                "(e.g. SYMPHONY_SEARCH__SEARXNG_URL=http://127.0.0.1:8888)"
            )
        return SearxngBackend(settings.searxng_url, settings)
    if settings.engine == "template":
        if not settings.url_template or "{query}" not in settings.url_template:
            raise SearchUnavailableError(
                "search.engine is template but search.url_template is not a URL with {query} in it "
                "(e.g. https://docs.example.org/search?q={query})"
            )
        return TemplateBackend(settings.url_template)
    return LocalBackend(settings.docs_index)
