"""The searcher's browser's only way out: an HTTP proxy that connects only where the URL policy allows.

Chromium runs in a network namespace with nothing but loopback (search/chromium.py); its relay there forwards
every proxy connection over a Unix socket to this proxy, in the server process. Playwright's own requests (the
route's fetches) come over TCP on 127.0.0.1. Each connection asks for one target, by CONNECT host:port or by one
absolute-URI HTTP request; the proxy asks the session's policy for the target's addresses (resolved once, pinned,
each checked: `UrlPolicy.addresses`) and connects to exactly those. Whatever the page uses (fetch, workers, web
sockets, preconnects, TURN over TCP), the address checked is the address connected to. A refusal answers 403 with
the reason and is reported to the session. The request head is bounded in size and time; nothing else is parsed.
"""

from __future__ import annotations

import asyncio
import contextlib
import errno
from collections.abc import Callable
from pathlib import Path
from urllib.parse import urlsplit

from symphony_mcp.errors import clip
from symphony_mcp.search.netns_relay import splice
from symphony_mcp.search.types import HostUnresolvedError, Refusal, UrlRefusedError
from symphony_mcp.search.urls import IPAddress, UrlPolicy

MAX_HEAD_BYTES = 16_384  # request line and headers
HEAD_TIMEOUT_SECONDS = 10.0
MAX_CONNECT_SECONDS = 10.0
# On the proxy's own answers: "refused" (the policy's, with the reason as the body) or the errno name of a failed
# connection (ECONNREFUSED, ...), so Playwright's fetches, which read a refused CONNECT as a response, can tell.
PROXY_ERROR_HEADER = "x-symphony-proxy-error"
_DROPPED_HEADERS = {b"proxy-connection", b"proxy-authorization", b"connection", b"keep-alive"}


class _BadRequestError(Exception):
    """A request the proxy does not serve; the message goes back in the 400 answer."""


class PolicyProxy:
    """One browser's proxy. `policy` is the open session's (None: every connection is refused); `on_refused`
    hears each refusal. Start with `start`, always `close`."""

    def __init__(self, connect_timeout: float = MAX_CONNECT_SECONDS) -> None:
        self.connect_timeout = min(connect_timeout, MAX_CONNECT_SECONDS)
        self.policy: UrlPolicy | None = None
        self.on_refused: Callable[[Refusal], None] | None = None
        self._servers: list[asyncio.Server] = []
        self._connections: set[asyncio.Task[None]] = set()
        self.port = 0

    async def start(self, unix_socket: Path | None) -> None:
        """Listen on 127.0.0.1 (a free port, `port`) and, for a namespaced browser, on `unix_socket`."""
        tcp = await asyncio.start_server(self._accept, "127.0.0.1", 0, limit=MAX_HEAD_BYTES)
        self._servers.append(tcp)
        self.port = tcp.sockets[0].getsockname()[1]
        if unix_socket is not None:
            self._servers.append(await asyncio.start_unix_server(self._accept, str(unix_socket), limit=MAX_HEAD_BYTES))

    async def close(self) -> None:
        for server in self._servers:
            server.close()
        for task in list(self._connections):
            task.cancel()
        await asyncio.gather(*self._connections, return_exceptions=True)
        for server in self._servers:
            with contextlib.suppress(Exception):
                await server.wait_closed()
        self._servers = []

    async def _accept(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        task = asyncio.current_task()
        assert task is not None
        self._connections.add(task)
        try:
            await self._serve(reader, writer)
        except (OSError, asyncio.IncompleteReadError):
            pass  # the browser went away
        finally:
            self._connections.discard(task)
            writer.close()

    async def _serve(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        try:
            async with asyncio.timeout(HEAD_TIMEOUT_SECONDS):
                head = await reader.readuntil(b"\r\n\r\n")
            target, host, port, forward = _parse(head)
        except (asyncio.LimitOverrunError, ValueError):
            await _answer(writer, 431, "Request Header Fields Too Large", f"the request head exceeds {MAX_HEAD_BYTES}")
            return
        except TimeoutError:
            await _answer(writer, 408, "Request Timeout", f"no request head within {HEAD_TIMEOUT_SECONDS:g} s")
            return
        except _BadRequestError as exc:
            await _answer(writer, 400, "Bad Request", str(exc))
            return
        try:
            addresses = await self._allowed(target, host, port)
        except HostUnresolvedError as exc:  # a network failure, not a verdict: told as such
            await _answer(writer, 502, "Bad Gateway", str(exc), "ENOTFOUND")
            return
        except UrlRefusedError as exc:
            await _answer(writer, 403, "Forbidden", str(exc), "refused")
            return
        try:
            upstream_reader, upstream_writer = await _connect(addresses, port, self.connect_timeout)
        except OSError as exc:
            failure = errno.errorcode.get(exc.errno or 0, "ECONNRESET")
            await _answer(writer, 502, "Bad Gateway", f"{target} could not be reached: {exc.strerror or exc}", failure)
            return
        if forward is None:
            writer.write(b"HTTP/1.1 200 Connection established\r\n\r\n")
        else:
            upstream_writer.write(forward)
        await splice(reader, writer, upstream_reader, upstream_writer)

    async def _allowed(self, target: str, host: str, port: int) -> list[IPAddress]:
        policy = self.policy
        try:
            if policy is None:
                raise UrlRefusedError(f"{target} refused: no browsing session is open")
            return await policy.addresses(host, port)
        except HostUnresolvedError:
            raise
        except UrlRefusedError as exc:
            if self.on_refused is not None:
                self.on_refused(Refusal(url=target, reason=str(exc)))
            raise


def _parse(head: bytes) -> tuple[str, str, int, bytes | None]:
    """(target as reported, host, port, the request to send upstream or None for a tunnel)."""
    lines = head[:-4].split(b"\r\n")
    try:
        method, target, version = lines[0].decode("ascii").split(" ")
    except (UnicodeDecodeError, ValueError):
        raise _BadRequestError("the request line is not METHOD TARGET HTTP/1.x") from None
    if version not in ("HTTP/1.0", "HTTP/1.1"):
        raise _BadRequestError(f"{clip(version)} is not HTTP/1.0 or HTTP/1.1")
    if method == "CONNECT":
        parts = urlsplit("//" + target)
        if not parts.hostname or parts.port is None or parts.path or parts.username is not None:
            raise _BadRequestError(f"CONNECT needs host:port, got {clip(target)}")
        return target, parts.hostname, parts.port, None
    parts = urlsplit(target)
    if parts.scheme != "http" or not parts.hostname or parts.username is not None:
        raise _BadRequestError(f"only CONNECT and absolute http:// requests are served, got {clip(target)}")
    path = (parts.path or "/") + (f"?{parts.query}" if parts.query else "")
    headers = [line for line in lines[1:] if line.split(b":", 1)[0].strip().lower() not in _DROPPED_HEADERS]
    forward = b"\r\n".join([f"{method} {path} {version}".encode("ascii"), *headers, b"Connection: close", b"", b""])
    return target, parts.hostname, parts.port or 80, forward


async def _connect(
    addresses: list[IPAddress], port: int, timeout: float
) -> tuple[asyncio.StreamReader, asyncio.StreamWriter]:
    """A connection to the first of `addresses` that answers: these, never a name resolved again."""
    failure: OSError = OSError("no address")
    for address in addresses:
        try:
            async with asyncio.timeout(timeout):
                return await asyncio.open_connection(str(address), port)
        except TimeoutError:
            failure = OSError(errno.ETIMEDOUT, f"connecting to {address} took over {timeout:g} s")
        except OSError as exc:
            failure = exc
    raise failure


async def _answer(writer: asyncio.StreamWriter, status: int, reason: str, text: str, failure: str = "bad") -> None:
    body = text.encode("utf-8", "replace")
    head = (
        f"HTTP/1.1 {status} {reason}\r\nContent-Type: text/plain; charset=utf-8\r\nContent-Length: {len(body)}\r\n"
        f"{PROXY_ERROR_HEADER}: {failure}\r\nConnection: close\r\n\r\n"
    )
    writer.write(head.encode("ascii") + body)
    with contextlib.suppress(OSError):
        await writer.drain()
