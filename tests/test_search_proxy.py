"""The policy proxy on its own, over real sockets: what it serves, what it refuses, and that it stays strict.

And the two rules it stands on: a name's addresses are pinned for the session, and a browser that cannot get a
network namespace is refused unless the settings accept the weaker mode.
"""

from __future__ import annotations

import asyncio
import ipaddress
import re
import threading
from collections.abc import AsyncIterator, Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

import pytest

from symphony_mcp.config import SearchSettings
from symphony_mcp.search.browser import ChromiumBrowser
from symphony_mcp.search.chromium import launch_chromium
from symphony_mcp.search.proxy import MAX_HEAD_BYTES, PROXY_ERROR_HEADER, PolicyProxy
from symphony_mcp.search.types import BrowserError, Refusal, UrlRefusedError
from symphony_mcp.search.urls import IPAddress, UrlPolicy
from testkit.listeners import PrivateListeners

pytestmark = pytest.mark.anyio


@pytest.fixture
def origin() -> Iterator[tuple[int, list[str]]]:
    """A trusted HTTP server on 127.0.0.1; it records each request line and Connection header."""
    seen: list[str] = []

    class Handler(BaseHTTPRequestHandler):
        def do_GET(self) -> None:
            seen.append(f"{self.requestline} | {self.headers.get('Connection')} | {self.headers.get('Proxy-X')}")
            self.send_response(200)
            self.send_header("Content-Length", "5")
            self.end_headers()
            self.wfile.write(b"hello")

        def log_message(self, format: str, *args: object) -> None:
            return

    server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    yield server.server_address[1], seen
    server.shutdown()
    server.server_close()


@pytest.fixture
async def proxy(origin: tuple[int, list[str]]) -> AsyncIterator[tuple[PolicyProxy, list[Refusal]]]:
    refusals: list[Refusal] = []
    running = PolicyProxy(connect_timeout=5)
    running.policy = UrlPolicy.build(SearchSettings(), [f"127.0.0.1:{origin[0]}"])
    running.on_refused = refusals.append
    await running.start(None)
    yield running, refusals
    await running.close()


async def exchange(port: int, data: bytes) -> bytes:
    reader, writer = await asyncio.open_connection("127.0.0.1", port)
    writer.write(data)
    await writer.drain()
    answer = await asyncio.wait_for(reader.read(), timeout=30)
    writer.close()
    return answer


async def test_a_trusted_origin_is_served_by_connect_and_by_absolute_uri(
    proxy: tuple[PolicyProxy, list[Refusal]], origin: tuple[int, list[str]]
) -> None:
    running, refusals = proxy
    port, seen = origin
    get = f"GET http://127.0.0.1:{port}/page?x=1 HTTP/1.1\r\nHost: 127.0.0.1:{port}\r\nProxy-Connection: keep-alive\r\n"
    answer = await exchange(running.port, (get + "Proxy-X: 1\r\n\r\n").encode())
    assert answer.startswith(b"HTTP/1.0 200") and answer.endswith(b"hello")
    assert seen[-1] == "GET /page?x=1 HTTP/1.1 | close | 1"  # origin-form, one request per connection

    reader, writer = await asyncio.open_connection("127.0.0.1", running.port)
    writer.write(f"CONNECT 127.0.0.1:{port} HTTP/1.1\r\nHost: 127.0.0.1:{port}\r\n\r\n".encode())
    assert await reader.readuntil(b"\r\n\r\n") == b"HTTP/1.1 200 Connection established\r\n\r\n"
    writer.write(f"GET /tunnel HTTP/1.1\r\nHost: 127.0.0.1:{port}\r\nConnection: close\r\n\r\n".encode())
    assert (await asyncio.wait_for(reader.read(), timeout=30)).endswith(b"hello")
    writer.close()
    assert seen[-1].startswith("GET /tunnel") and refusals == []


async def test_refusals_are_403_with_the_reason_and_reach_nothing(proxy: tuple[PolicyProxy, list[Refusal]]) -> None:
    running, refusals = proxy
    private = PrivateListeners()
    private.start()
    try:
        for request in (
            f"CONNECT 127.0.0.1:{private.tcp_port} HTTP/1.1\r\n\r\n",
            f"CONNECT localhost:{private.tcp_port} HTTP/1.1\r\n\r\n",
            f"CONNECT [::ffff:127.0.0.1]:{private.tcp_port} HTTP/1.1\r\n\r\n",
            f"GET http://2130706433:{private.tcp_port}/ HTTP/1.1\r\n\r\n",
        ):
            answer = await exchange(running.port, request.encode())
            assert answer.startswith(b"HTTP/1.1 403 Forbidden"), answer
            assert f"{PROXY_ERROR_HEADER}: refused".encode() in answer and b"loopback" in answer
        running.policy = None  # no session open: nothing at all
        assert (await exchange(running.port, b"CONNECT example.org:443 HTTP/1.1\r\n\r\n")).startswith(b"HTTP/1.1 403")
    finally:
        private.close()
    assert (private.connections, private.received) == (0, 0)
    assert len(refusals) == 5 and "no browsing session is open" in refusals[-1].reason


async def test_what_is_not_a_proxy_request_gets_a_clear_error(proxy: tuple[PolicyProxy, list[Refusal]]) -> None:
    running, _ = proxy
    turn_allocate = bytes.fromhex("000300002112a442") + bytes(12) + b"\r\n\r\n"  # a TURN request, framed
    for data, status in (
        (b"GET /relative HTTP/1.1\r\n\r\n", b"400"),
        (b"GET ftp://example.org/ HTTP/1.1\r\n\r\n", b"400"),
        (b"CONNECT example.org HTTP/1.1\r\n\r\n", b"400"),
        (b"CONNECT a@example.org:443 HTTP/1.1\r\n\r\n", b"400"),
        (b"GET http://example.org/ HTTP/2.0\r\n\r\n", b"400"),
        (turn_allocate, b"400"),
        (b"GET http://example.org/ HTTP/1.1\r\nX: " + b"a" * MAX_HEAD_BYTES + b"\r\n\r\n", b"431"),
    ):
        answer = await exchange(running.port, data)
        assert answer.startswith(b"HTTP/1.1 " + status), (data[:40], answer)


async def test_a_name_is_resolved_once_and_pinned() -> None:
    answers = [[ipaddress.ip_address("93.184.216.34")], [ipaddress.ip_address("127.0.0.1")]]
    asked: list[str] = []

    async def rebinding(host: str, port: int) -> list[IPAddress]:
        asked.append(host)
        return answers[min(len(asked), 2) - 1]

    policy = UrlPolicy(resolver=rebinding)
    together = await asyncio.gather(*(policy.addresses(name, 443) for name in ("Rebind.Example.", "rebind.example")))
    assert together == [[ipaddress.ip_address("93.184.216.34")]] * 2  # asked at once: one lookup, one answer
    assert await policy.addresses("rebind.example", 80) == [ipaddress.ip_address("93.184.216.34")]
    assert asked == ["rebind.example"]


async def test_without_namespaces_the_browser_is_refused_unless_allowed(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("PATH", str(tmp_path))  # no unshare on PATH
    with pytest.raises(BrowserError, match=r"network namespace.*SYMPHONY_SEARCH__ALLOW_UNCONFINED_NETWORK=true"):
        await launch_chromium(SearchSettings())
    settings = SearchSettings(allow_unconfined_network=True, step_timeout_seconds=10)
    private = PrivateListeners()
    private.start()
    browser = await ChromiumBrowser.start(settings, UrlPolicy.build(settings))
    try:
        assert browser.page is not None  # flags only: still every request through the proxy
        await browser.page.evaluate(
            f"fetch('http://127.0.0.1:{private.tcp_port}/', {{mode: 'no-cors'}}).catch(() => 0)"
        )
    finally:
        await browser.close()
        private.close()
    assert private.connections == 0


async def test_connections_meet_the_patterns_by_their_host(proxy: tuple[PolicyProxy, list[Refusal]]) -> None:
    """With allow patterns, a connection (a worker's socket, a preconnect) to a host none of them names is refused;
    a deny pattern for a whole site refuses its connections. Patterns that name no host leave it to the route."""

    async def public(host: str, port: int) -> list[IPAddress]:
        return [ipaddress.ip_address("93.184.216.34")]

    settings = SearchSettings(
        allow_urls=["https://*.example.org/*", "http*://docs.example.net:8080/help/*"],
        deny_urls=["https://bad.example.org/*", "*/private/*"],
    )
    policy = UrlPolicy.build(settings)
    policy.resolver = public
    assert await policy.addresses("docs.example.org", 443) == [ipaddress.ip_address("93.184.216.34")]
    assert await policy.addresses("docs.example.net", 8080)
    for host, port, why in (
        ("evil.example.com", 443, "matches none of the allow patterns"),
        ("docs.example.net", 443, "matches none of the allow patterns"),
        ("bad.example.org", 443, "deny pattern 'https://bad.example.org/*'"),
    ):
        with pytest.raises(UrlRefusedError, match=re.escape(why)):
            await policy.addresses(host, port)
    running, refusals = proxy
    running.policy = policy
    answer = await exchange(running.port, b"CONNECT evil.example.com:443 HTTP/1.1\r\n\r\n")
    assert answer.startswith(b"HTTP/1.1 403") and b"allow patterns" in answer
    assert refusals[-1].url == "evil.example.com:443"
