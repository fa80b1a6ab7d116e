"""Read one stdio line as a JSON-RPC message, or the JSON-RPC error that answers it.

Every line gets an answer: a line that is not one message would otherwise leave the client waiting for
its own timeout (the SDK's dispatcher only logs what it cannot parse). The error is -32700 (parse error)
or -32600 (invalid request), as JSON-RPC 2.0 says, with the request's id when the line still reveals one
(null otherwise), so the client's pending call fails at once. It names the cause and never echoes the
input (a line can be megabytes). Nothing here recurses over the input: a nesting thousands deep is
refused by pydantic-core's parser with its limit named, never re-read by a recursive one.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Any

import pydantic_core
from mcp.types import (
    INVALID_REQUEST,
    PARSE_ERROR,
    ErrorData,
    JSONRPCError,
    JSONRPCMessage,
    JSONRPCNotification,
    jsonrpc_message_adapter,
)
from pydantic import ValidationError

# pydantic-core's JSON parser refuses arrays and objects nested deeper than this (tests pin the number).
JSON_NESTING_LIMIT = 201
MAX_ID_PREFIX = 4_096  # bytes at a line's start searched for its id when the whole line cannot be read

_STRING = rb'"(?:[^"\\]|\\.)*"'
_SCALAR = rb"(?:" + _STRING + rb"|-?\d+(?:\.\d+)?(?:[eE][-+]?\d+)?|true|false|null)"
# The id as a top-level member, after only scalar members: what a line's start shows of a request's id.
_LEADING_ID = re.compile(
    rb"\s*\{(?:\s*" + _STRING + rb"\s*:\s*" + _SCALAR + rb"\s*,)*?\s*\"id\"\s*:\s*(-?\d+|" + _STRING + rb")\s*[,}]"
)


@dataclass(frozen=True)
class LineTooLong:
    """A line past the size cap, read no further than the cap: its first bytes (for the id) and the cap."""

    prefix: bytes
    limit: int


def parse_line(line: bytes | LineTooLong) -> JSONRPCMessage | JSONRPCError:
    """The message the line holds, or the error answering it."""
    if isinstance(line, LineTooLong):
        return _error(
            _leading_id(line.prefix),
            INVALID_REQUEST,
            f"Invalid request: the message is longer than this server's limit of {line.limit:,} bytes a line "
            "(setting server.max_message_bytes); send less in one call",
        )
    try:
        message = jsonrpc_message_adapter.validate_json(line, by_name=False)  # refuses bytes that are not UTF-8
    except ValidationError as exc:
        return _not_utf8(line) or _unreadable(line, exc)
    if isinstance(message, JSONRPCNotification) and (bad_id := _invalid_id(line)) is not None:
        return _error(
            None,
            INVALID_REQUEST,
            f"Invalid request: the id must be a string or an integer, not {bad_id} (a notification has no id)",
        )
    return message


def _not_utf8(line: bytes) -> JSONRPCError | None:
    """The error naming the first byte that is not UTF-8, if there is one (only for a line already refused: the
    parser checks UTF-8 itself, but its message calls such a byte an 'invalid unicode code point')."""
    try:
        line.decode("utf-8")
    except UnicodeDecodeError as exc:
        return _error(
            _leading_id(line[: min(exc.start, MAX_ID_PREFIX)]),
            PARSE_ERROR,
            f"Parse error: byte 0x{line[exc.start]:02X} at offset {exc.start} is not UTF-8 ({exc.reason}); "
            "JSON-RPC messages are UTF-8 text",
        )
    return None


def _unreadable(line: bytes, error: ValidationError) -> JSONRPCError:
    errors = error.errors()
    first = errors[0] if errors else None
    if first is None or first["type"] == "json_invalid":
        reason = first["msg"] if first is not None else "not JSON"
        return _error(_leading_id(line[:MAX_ID_PREFIX]), PARSE_ERROR, f"Parse error: {_parse_cause(reason)}")
    # The message as parsed is the input of the outermost error that has one (an error deeper in has a part).
    outermost = sorted(errors, key=lambda found: len(found["loc"]))
    value = next((found["input"] for found in outermost if isinstance(found.get("input"), list | dict)), None)
    if isinstance(value, list):
        return _error(None, INVALID_REQUEST, "Invalid request: JSON-RPC batches are not supported; one message a line")
    return _error(_id_of(value), INVALID_REQUEST, "Invalid request: not a JSON-RPC 2.0 request, notification or reply")


def _parse_cause(reason: str) -> str:
    """pydantic-core's parse error, said in terms of what the sender can change."""
    if "recursion limit exceeded" in reason:
        return f"nesting deeper than {JSON_NESTING_LIMIT} levels of arrays and objects ({reason}); flatten the message"
    if "surrogate" in reason or "hex escape" in reason:
        return f"{reason} (a lone UTF-16 surrogate escape such as \\ud800 is not text; send valid Unicode)"
    return reason


def _invalid_id(line: bytes) -> str | None:
    """How the id of a line read as a notification is wrong, if it has one (the SDK drops an invalid id)."""
    value = pydantic_core.from_json(line)  # already parsed once, so within the nesting limit
    if not isinstance(value, dict) or "id" not in value:
        return None
    found = value["id"]
    if found is None:
        return "null"
    if isinstance(found, bool):
        return "a boolean"
    if isinstance(found, float):
        return "a number with a fraction or exponent"
    return "an object" if isinstance(found, dict) else "an array"


def _leading_id(start: bytes) -> str | int | None:
    """The request's id if the line's start shows it as a top-level member, for an error on the rest."""
    match = _LEADING_ID.match(start)
    if match is None:
        return None
    try:
        return _id_of({"id": pydantic_core.from_json(match.group(1))})
    except ValueError:
        return None


def _id_of(value: Any) -> str | int | None:
    request_id = value.get("id") if isinstance(value, dict) else None
    return request_id if isinstance(request_id, str | int) and not isinstance(request_id, bool) else None


def _error(request_id: str | int | None, code: int, message: str) -> JSONRPCError:
    return JSONRPCError(jsonrpc="2.0", id=request_id, error=ErrorData(code=code, message=message))
