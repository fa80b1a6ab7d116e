"""The docs server: the offline index's results pages and documents over HTTP on 127.0.0.1, for the searcher's browser.

A ThreadingHTTPServer in a daemon thread rather than uvicorn: it serves static files and one page from a sync SQLite
index, needs no event loop of its own (the callers run under anyio, the CLI and tests under none) and starts in
about a millisecond. Documents are served under `/files/<absolute path>` so relative links and LibreOffice's
`<base href="../../../../">` resolve as they do on disk; only files under the index's roots and the assets its
pages reference are served, everything else (and any symlink out of the roots, and directories) is a 404.
"""

from __future__ import annotations

import html
import logging
import mimetypes
import os
import shutil
import threading
from http import HTTPStatus
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from urllib.parse import parse_qs, quote, quote_plus, unquote, urlsplit

from symphony_mcp.search.docs_index import SNIPPET_CLOSE, SNIPPET_OPEN, DocsIndex, IndexHit, plain_snippet
from symphony_mcp.search.types import DocHit

FILES = "/files"
PAGE_HITS = 10
MAX_PAGE_HITS = 50
MAX_QUERY_CHARS = 500

log = logging.getLogger(__name__)


class DocsServer:
    """Serves one docs index on a free port of 127.0.0.1 until closed."""

    def __init__(self, index: DocsIndex) -> None:
        self.index = index
        self._http = _Http(self)
        self._thread = threading.Thread(target=self._http.serve_forever, args=(0.05,), name="docs-server", daemon=True)
        self._thread.start()
        self.host = f"127.0.0.1:{self._http.server_port}"
        self.base_url = f"http://{self.host}"

    def results_url(self, query: str) -> str:
        return f"{self.base_url}/search?q={quote_plus(query)}"

    def file_url(self, path: Path) -> str:
        return f"{self.base_url}{FILES}{quote(str(path))}"

    def hits(self, query: str, limit: int) -> list[DocHit]:
        return [
            DocHit(title=hit.title, url=self.file_url(hit.path), snippet=plain_snippet(hit.snippet), engine="local")
            for hit in self.index.search(query[:MAX_QUERY_CHARS], limit)
        ]

    def close(self) -> None:
        self._http.shutdown()
        self._http.server_close()
        self._thread.join()


class _Http(ThreadingHTTPServer):
    daemon_threads = True

    def __init__(self, docs: DocsServer) -> None:
        super().__init__(("127.0.0.1", 0), _Handler)
        self.docs = docs


class _Handler(BaseHTTPRequestHandler):
    server: _Http
    server_version = "symphony-docs"

    def do_GET(self) -> None:
        self._answer(body=True)

    def do_HEAD(self) -> None:
        self._answer(body=False)

    def log_message(self, format: str, *args: object) -> None:
        log.debug("docs server: " + format, *args)

    def _answer(self, body: bool) -> None:
        url = urlsplit(self.path)
        if url.path in ("/", "/search"):
            form = parse_qs(url.query)
            query = form.get("q", [""])[0][:MAX_QUERY_CHARS]
            limit = form.get("limit", [""])[0]
            count = min(int(limit), MAX_PAGE_HITS) if limit.isdigit() and int(limit) > 0 else PAGE_HITS
            docs = self.server.docs
            hits = docs.index.search(query, count) if query.strip() else []
            page = _results_page(query, [(hit, docs.file_url(hit.path)) for hit in hits])
            self._send(HTTPStatus.OK, "text/html; charset=utf-8", page.encode(), body)
        elif url.path.startswith(FILES + "/"):
            self._send_file(unquote(url.path[len(FILES) :]), body)
        else:
            self._not_found(body)

    def _send_file(self, requested: str, body: bool) -> None:
        if "\x00" in requested:
            return self._not_found(body)
        path = self.server.docs.index.servable(Path(os.path.normpath(requested)))
        try:
            file = path.open("rb") if path is not None else None
        except OSError:
            file = None
        if file is None or path is None:
            return self._not_found(body)
        with file:
            kind = mimetypes.guess_type(path.name)[0] or "application/octet-stream"
            if kind.startswith("text/") or kind.endswith("javascript"):
                kind += "; charset=utf-8"
            self.send_response(HTTPStatus.OK)
            self.send_header("Content-Type", kind)
            self.send_header("Content-Length", str(os.fstat(file.fileno()).st_size))
            self.send_header("X-Content-Type-Options", "nosniff")
            self.end_headers()
            if body:
                shutil.copyfileobj(file, self.wfile)
        return None

    def _not_found(self, body: bool) -> None:
        page = b"<!DOCTYPE html><title>Not found</title><p>Not found: only indexed documentation is served.</p>"
        self._send(HTTPStatus.NOT_FOUND, "text/html; charset=utf-8", page, body)

    def _send(self, status: HTTPStatus, kind: str, content: bytes, body: bool) -> None:
        self.send_response(status)
        self.send_header("Content-Type", kind)
        self.send_header("Content-Length", str(len(content)))
        self.send_header("X-Content-Type-Options", "nosniff")
        self.end_headers()
        if body:
            self.wfile.write(content)


def _marked(snippet: str) -> str:
    """The snippet as HTML, its matched words in bold (the index marks them with control characters)."""
    return html.escape(snippet).replace(SNIPPET_OPEN, "<b>").replace(SNIPPET_CLOSE, "</b>")


def _results_page(query: str, hits: list[tuple[IndexHit, str]]) -> str:
    """A search engine's results page: a search form, then each hit's title link, address and snippet."""
    escaped = html.escape(query)
    if not query.strip():
        summary = "Type what you are looking for."
    elif hits:
        summary = f"{len(hits)} results for <b>{escaped}</b>"
    else:
        summary = f"No results for <b>{escaped}</b>. Try other words."
    items = "\n".join(
        f'<li class="result"><h2><a class="result-title" href="{html.escape(url)}">{html.escape(hit.title)}</a>'
        f'</h2><div class="result-url">{html.escape(str(hit.path))}</div>'
        f'<p class="result-snippet">{_marked(hit.snippet)}</p></li>'
        for hit, url in hits
    )
    return f"""<!DOCTYPE html>
<html lang="en"><head><meta charset="utf-8"><title>{escaped or "Search"} - Local documentation</title>
<style>
body {{ font-family: sans-serif; margin: 2em auto; max-width: 50em; padding: 0 1em; }}
form {{ display: flex; gap: .5em; margin-bottom: 1.5em; }} input {{ flex: 1; font-size: 1.1em; padding: .3em; }}
ol {{ list-style: none; padding: 0; }} .result {{ margin-bottom: 1.4em; }} h2 {{ font-size: 1.15em; margin: 0; }}
.result-url {{ color: #286428; font-size: .85em; }} .result-snippet {{ margin: .2em 0; }}
</style></head>
<body>
<form action="/search" method="get" role="search">
<input type="search" name="q" value="{escaped}" aria-label="Search the documentation" autofocus>
<button type="submit">Search</button>
</form>
<p class="summary">{summary}</p>
<ol class="results">
{items}
</ol>
</body></html>
"""
