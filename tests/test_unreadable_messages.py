"""Every line that is not one JSON-RPC message gets a JSON-RPC error at once, over stdio and HTTP, naming the
cause, and the server keeps serving: unparseable and deeply nested JSON, batches, invalid ids, bytes that are
not UTF-8, lines past the size cap."""

from __future__ import annotations

import httpx
import pytest

from symphony_mcp.stdio_replies import JSON_NESTING_LIMIT
from testkit.http_server import http_server
from testkit.raw_jsonrpc import MCP_HEADERS, raw_stdio_server

pytestmark = pytest.mark.anyio

LONE_SURROGATE = '{"jsonrpc":"2.0","id":3,"method":"ping","params":{"note":"\\ud800"}}'
BATCH = '[{"jsonrpc":"2.0","id":2,"method":"ping"}]'
NOT_UTF8 = b'{"jsonrpc":"2.0","id":6,"method":"ping","params":{"a":"\xff\xfe"}}'


def nested(depth: int, request_id: int = 42) -> str:
    """The issue's line: a tools/call whose argument nests `depth` arrays."""
    junk = "[" * depth + "]" * depth
    return (
        f'{{"jsonrpc":"2.0","id":{request_id},"method":"tools/call",'
        f'"params":{{"name":"screen_info","arguments":{{"junk":{junk}}}}}}}'
    )


def with_id(request_id: str) -> str:
    return f'{{"jsonrpc":"2.0","id":{request_id},"method":"ping"}}'


# (line, the id the error answers, its code, words its message must have)
UNREADABLE = (
    ("{not json", None, -32700, "key must be a string"),
    (BATCH, None, -32600, "batches are not supported"),
    (LONE_SURROGATE, 3, -32700, "lone UTF-16 surrogate"),
    ('{"jsonrpc":"2.0","id":5,"method":7}', 5, -32600, "not a JSON-RPC 2.0 request"),
    (nested(300), 42, -32700, f"nesting deeper than {JSON_NESTING_LIMIT} levels"),
    (nested(1_000), 42, -32700, f"nesting deeper than {JSON_NESTING_LIMIT} levels"),
    (nested(1_000_000), 42, -32700, f"nesting deeper than {JSON_NESTING_LIMIT} levels"),
    (with_id("{}"), None, -32600, "not an object"),
    (with_id("1.5"), None, -32600, "not a number with a fraction"),
    (with_id("true"), None, -32600, "not a boolean"),
    (with_id("null"), None, -32600, "not null"),
    (with_id("[7]"), None, -32600, "not an array"),
)


def test_stdio_answers_lines_it_cannot_parse() -> None:
    with raw_stdio_server() as server:
        for line, request_id, code, words in UNREADABLE:
            reply = server.send(line)
            assert reply["id"] == request_id and reply["error"]["code"] == code, (line[:100], reply)
            assert words in reply["error"]["message"] and len(reply["error"]["message"]) < 300, reply
            assert server.send(with_id("9")) == {"jsonrpc": "2.0", "id": 9, "result": {}}


def test_stdio_nesting_limit_is_the_parsers() -> None:
    """The limit the error names is where the parser stops: a message nested exactly that deep is served."""
    deepest = "[" * (JSON_NESTING_LIMIT - 2) + "]" * (JSON_NESTING_LIMIT - 2)  # inside the message and its params
    with raw_stdio_server() as server:
        line = f'{{"jsonrpc":"2.0","id":11,"method":"ping","params":{{"a":{deepest}}}}}'
        assert server.send(line) == {"jsonrpc": "2.0", "id": 11, "result": {}}
        reply = server.send(line.replace('"a":', '"a":[', 1).replace("}}", "]}}", 1))
        assert reply["id"] == 11 and f"deeper than {JSON_NESTING_LIMIT}" in reply["error"]["message"], reply


def test_stdio_refuses_bytes_that_are_not_utf8() -> None:
    """FF FE used to be read as U+FFFD and typed; now the line is refused, naming the byte."""
    with raw_stdio_server() as server:
        reply = server.send(NOT_UTF8)
        assert reply["id"] == 6 and reply["error"]["code"] == -32700, reply
        assert "byte 0xFF at offset 55 is not UTF-8" in reply["error"]["message"], reply
        assert server.send(with_id("9"))["result"] == {}


def peak_rss_kib(pid: int) -> int:
    with open(f"/proc/{pid}/status") as status:
        return next(int(line.split()[1]) for line in status if line.startswith("VmHWM:"))


def test_stdio_refuses_a_line_past_the_cap_without_holding_it() -> None:
    """A 64 MB line under a 64 KiB cap is answered with the cap named and the request's id, and the
    server's peak memory grows by far less than the line (it was parsed whole: 200 MB peaked at 1.46 GB)."""
    cap = 64 * 1024
    with raw_stdio_server(SYMPHONY_SERVER__MAX_MESSAGE_BYTES=str(cap)) as server:
        fits = '{"jsonrpc":"2.0","id":12,"method":"ping","params":{"a":"' + "x" * (cap - 100) + '"}}'
        assert server.send(fits)["result"] == {}
        before = peak_rss_kib(server.process.pid)
        huge = '{"jsonrpc":"2.0","id":13,"method":"ping","params":{"a":"' + "x" * (64 * 1024 * 1024) + '"}}'
        reply = server.send(huge)
        assert reply["id"] == 13 and reply["error"]["code"] == -32600, reply
        assert "limit of 65,536 bytes" in reply["error"]["message"] and "max_message_bytes" in reply["error"]["message"]
        assert peak_rss_kib(server.process.pid) - before < 16 * 1024
        assert server.send(with_id("14"))["result"] == {}


async def test_http_answers_bodies_it_cannot_parse() -> None:
    async with http_server("--virtual-display", "never", display="") as url, httpx.AsyncClient() as http:
        for body, _, code, _ in UNREADABLE:
            response = await http.post(url, content=body.encode(), headers=MCP_HEADERS, timeout=20)
            assert response.status_code == 400, (body, response.status_code, response.text[:300])
            assert response.json()["error"]["code"] in (code, -32602), (body, response.json())
