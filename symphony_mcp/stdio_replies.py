"""Answer stdio lines the SDK cannot parse, instead of leaving the client to wait for its own timeout.

The SDK's stdio transport turns a line it cannot read as one JSON-RPC message (invalid JSON, a JSON-RPC
batch, a lone UTF-16 surrogate escape its JSON parser refuses) into an exception on the read stream,
and its dispatcher only logs it: the client hears nothing. `AnsweringReadStream` sits between the two
and answers such a line as JSON-RPC 2.0 says: -32700 (parse error) or -32600 (invalid request), with
the request's id when the line still reveals one, so the client's pending call fails at once.
The reply never echoes the input (a line can be megabytes).
"""

from __future__ import annotations

import json
from types import TracebackType
from typing import Any, Self

import anyio
from mcp.shared._stream_protocols import ReadStream, WriteStream
from mcp.shared.message import SessionMessage
from mcp.types import INVALID_REQUEST, PARSE_ERROR, ErrorData, JSONRPCError
from pydantic import ValidationError

Item = SessionMessage | Exception


class AnsweringReadStream:
    """The transport's read stream minus its exception items, each answered on the write stream."""

    def __init__(self, inner: ReadStream[Item], replies: WriteStream[SessionMessage]) -> None:
        self._inner = inner
        self._replies = replies

    @property
    def last_context(self) -> Any:
        """The sender context of the latest item, which the SDK's loops read from context-aware streams."""
        return getattr(self._inner, "last_context", None)

    async def receive(self) -> Item:
        while True:
            item = await self._inner.receive()
            if not isinstance(item, Exception):
                return item
            await self._replies.send(SessionMessage(reply_to_unreadable(item)))

    async def aclose(self) -> None:
        await self._inner.aclose()

    def __aiter__(self) -> Self:
        return self

    async def __anext__(self) -> Item:
        try:
            return await self.receive()
        except anyio.EndOfStream:
            raise StopAsyncIteration from None

    async def __aenter__(self) -> Self:
        return self

    async def __aexit__(
        self, exc_type: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        await self.aclose()


def reply_to_unreadable(error: Exception) -> JSONRPCError:
    """The JSON-RPC error for a line the SDK could not read as a message (`error` is what it raised)."""
    if not isinstance(error, ValidationError) or not error.errors():
        return _error(None, PARSE_ERROR, "Parse error: the line is not one JSON-RPC message")
    errors = error.errors()
    first = errors[0]
    if first["type"] == "json_invalid":
        try:
            value = json.loads(first["input"]) if isinstance(first["input"], str) else None
        except ValueError:
            return _error(None, PARSE_ERROR, f"Parse error: {first['msg']}")
        # Python reads it, the SDK's parser did not: a lone surrogate escape is the case seen.
        return _error(
            _id_of(value),
            PARSE_ERROR,
            f"Parse error: {first['msg']} (a lone UTF-16 surrogate escape such as \\ud800 is not text; "
            "send valid Unicode)",
        )
    # The message as parsed is the input of the outermost error that has one (an error deeper in has a part).
    outermost = sorted(errors, key=lambda found: len(found["loc"]))
    value = next((found["input"] for found in outermost if isinstance(found.get("input"), list | dict)), None)
    if isinstance(value, list):
        return _error(None, INVALID_REQUEST, "Invalid request: JSON-RPC batches are not supported; one message a line")
    return _error(_id_of(value), INVALID_REQUEST, "Invalid request: not a JSON-RPC 2.0 request, notification or reply")


def _id_of(value: Any) -> str | int | None:
    request_id = value.get("id") if isinstance(value, dict) else None
    return request_id if isinstance(request_id, str | int) and not isinstance(request_id, bool) else None


def _error(request_id: str | int | None, code: int, message: str) -> JSONRPCError:
    return JSONRPCError(jsonrpc="2.0", id=request_id, error=ErrorData(code=code, message=message))
