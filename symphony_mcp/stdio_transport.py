"""The stdio transport: one JSON-RPC message a line on the process's stdin and stdout, and every line answered.

It replaces the SDK's `stdio_server`, whose reader decodes stdin with errors="replace" (bytes that are not
UTF-8 became U+FFFD and were typed), holds a line whole whatever its size (a 200 MB line peaked at 1.46 GB),
and hands the lines it cannot parse to a dispatcher that only logs them. Here a line is read up to the
`server.max_message_bytes` cap and no further (the rest is skipped), `stdio_replies.parse_line` turns it
into a message or the error that answers it, and that error goes straight back to the client.

As with the SDK's transport, the wire moves off fds 0 and 1 to private descriptors: fd 0 reads the null
device, so child processes read EOF rather than the client's messages, and fd 1 writes to stderr, so stray
output (a library's print) cannot corrupt the replies. A pending read is abandoned when its reader is
cancelled (a stop signal), so stopping does not wait for the client's next line.
"""

from __future__ import annotations

import os
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from typing import BinaryIO

import anyio
from mcp.shared.message import SessionMessage
from mcp.types import JSONRPCError

from symphony_mcp.sdk_internals import ReadStream, WriteStream, create_context_streams
from symphony_mcp.stdio_replies import MAX_ID_PREFIX, LineTooLong, parse_line

SKIP_CHUNK = 1024 * 1024  # bytes read at a time while skipping the rest of a line past the cap


class LineReader:
    """Lines of a byte stream, each at most `limit` bytes (newline excluded); a longer one is skipped to its end."""

    def __init__(self, wire: BinaryIO, limit: int) -> None:
        self._wire = wire
        self._limit = limit

    def read(self) -> bytes | LineTooLong | None:
        """The next line (with its newline, which JSON reads as white space: no copy to cut it), LineTooLong for
        one past the cap, None at the end of the stream."""
        line = self._wire.readline(self._limit + 1)
        if not line:
            return None
        if line.endswith(b"\n") or len(line) <= self._limit:
            return line  # the last line may have no newline
        prefix = line[:MAX_ID_PREFIX]
        del line
        while (rest := self._wire.readline(SKIP_CHUNK)) and not rest.endswith(b"\n"):
            pass
        return LineTooLong(prefix, self._limit)


def _claim_wire() -> tuple[BinaryIO, BinaryIO]:
    """The client's stdin and stdout on private descriptors (not inherited), fds 0 and 1 pointed elsewhere."""
    wire_in, wire_out = os.dup(0), os.dup(1)
    null = os.open(os.devnull, os.O_RDONLY)
    os.dup2(null, 0)
    os.close(null)
    os.dup2(2, 1)
    return os.fdopen(wire_in, "rb"), os.fdopen(wire_out, "wb")


def _write_line(wire: BinaryIO, data: bytes) -> None:
    wire.write(data)
    wire.flush()


@asynccontextmanager
async def stdio_transport(
    max_message_bytes: int,
) -> AsyncIterator[tuple[ReadStream[SessionMessage | Exception], WriteStream[SessionMessage]]]:
    """The streams the SDK's server loop runs on: messages read from stdin, messages to write to stdout."""
    wire_in, wire_out = _claim_wire()
    lines = LineReader(wire_in, max_message_bytes)
    to_server, from_client = create_context_streams[SessionMessage | Exception](0)
    to_client, outgoing = create_context_streams[SessionMessage](0)

    async def read_lines(replies: WriteStream[SessionMessage]) -> None:
        async with to_server, replies:
            while (line := await anyio.to_thread.run_sync(lines.read, abandon_on_cancel=True)) is not None:
                parsed = parse_line(line)
                if isinstance(parsed, JSONRPCError):
                    await replies.send(SessionMessage(parsed))
                else:
                    await to_server.send(SessionMessage(parsed))

    async def write_lines() -> None:
        async with outgoing:
            async for message in outgoing:
                data = message.message.model_dump_json(by_alias=True, exclude_unset=True).encode() + b"\n"
                await anyio.to_thread.run_sync(_write_line, wire_out, data)

    async with anyio.create_task_group() as tasks:
        tasks.start_soon(read_lines, to_client.clone())
        tasks.start_soon(write_lines)
        yield from_client, to_client
