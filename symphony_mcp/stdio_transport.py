"""The stdio transport: one JSON-RPC message a line on the process's stdin and stdout, and every line answered.

It replaces the SDK's `stdio_server`, whose reader decodes stdin with errors="replace" (bytes that are not
UTF-8 became U+FFFD and were typed), holds a line whole whatever its size (a 200 MB line peaked at 1.46 GB),
and hands the lines it cannot parse to a dispatcher that only logs them. Here a line is read up to the
`server.max_message_bytes` cap and no further (the rest is skipped), `stdio_replies.parse_line` turns it
into a message or the error that answers it, and that error goes straight back to the client.

As with the SDK's transport, the wire moves off fds 0 and 1 to private descriptors: fd 0 reads the null
device, so child processes read EOF rather than the client's messages, and fd 1 writes to stderr, so stray
output (a library's print) cannot corrupt the replies. The wire is read and written without blocking, on the
event loop: no worker thread per line in either direction (two thread wake-ups fewer per call), and a pending
read is simply cancelled by a stop signal, so stopping does not wait for the client's next line.

A reply goes out in one write when the wire is a pipe: its buffer is raised from Linux's 64 KiB to
`PIPE_BUFFER_BYTES`, so a default screenshot's ~270 KB line no longer waits, a 64 KiB slice at a time, for the
client to drain the pipe (nine writes and six event-loop wake-ups per screenshot before, one write after).
"""

from __future__ import annotations

import errno
import fcntl
import os
import stat
from collections.abc import AsyncIterator, Iterator
from contextlib import asynccontextmanager, contextmanager

import anyio
from mcp.shared.message import SessionMessage
from mcp.types import JSONRPCError

from symphony_mcp.sdk_internals import ReadStream, WriteStream, create_context_streams
from symphony_mcp.stdio_replies import MAX_ID_PREFIX, LineTooLong, parse_line

READ_CHUNK = 1024 * 1024  # bytes asked of the wire at a time
# The pipe buffer a reply line is written into: Linux's default limit for a process that is not root
# (/proc/sys/fs/pipe-max-size), room for a full-frame 1080p JPEG or PNG screenshot's line (~0.4-0.5 MB).
PIPE_BUFFER_BYTES = 1024 * 1024


class LineReader:
    """Lines of the wire, each at most `limit` bytes (newline excluded); a longer one is skipped to its end.

    The wire is non-blocking and read on the event loop: a request reaches the server without a hop through a
    worker thread, which on a busy machine waits for a core like any other wake-up. Only a wire with nothing to
    read makes it wait for readability (a pipe or socket; a regular file always has data or its end)."""

    def __init__(self, fd: int, limit: int) -> None:
        self._fd = fd
        self._limit = limit
        self._buffer = bytearray()
        self._scanned = 0  # bytes of the buffer known to hold no newline
        self._ended = False

    async def read(self) -> bytes | LineTooLong | None:
        """The next line (with its newline, which JSON reads as white space), LineTooLong for one past the cap (its
        first bytes kept for the id, the rest dropped as it arrives), None at the end of the stream."""
        skipped: bytes | None = None  # the start of a line past the cap
        while True:
            end = self._buffer.find(b"\n", self._scanned)
            if end >= 0:
                line = bytes(self._buffer[: end + 1])
                del self._buffer[: end + 1]
                self._scanned = 0
                return line if skipped is None else LineTooLong(skipped, self._limit)
            self._scanned = len(self._buffer)
            if skipped is None and len(self._buffer) > self._limit:
                skipped = bytes(self._buffer[:MAX_ID_PREFIX])
            if skipped is not None:
                self._buffer.clear()
                self._scanned = 0
            if self._ended:
                if skipped is not None:
                    return LineTooLong(skipped, self._limit)
                last, self._buffer, self._scanned = bytes(self._buffer), bytearray(), 0
                return last or None  # the last line may have no newline
            await self._fill()

    async def _fill(self) -> None:
        try:
            chunk = os.read(self._fd, READ_CHUNK)
        except BlockingIOError:
            await anyio.wait_readable(self._fd)
            return
        if chunk:
            self._buffer += chunk
        else:
            self._ended = True


class LineWriter:
    """Writes whole lines to the non-blocking wire on the event loop; waits for room only when the reader lags."""

    def __init__(self, fd: int) -> None:
        self._fd = fd

    async def write(self, data: bytes) -> None:
        view = memoryview(data)
        while view:
            try:
                view = view[os.write(self._fd, view) :]
            except BlockingIOError:
                await anyio.wait_writable(self._fd)


def _claim_wire() -> tuple[int, int]:
    """The client's stdin and stdout on private descriptors (not inherited), fds 0 and 1 pointed elsewhere."""
    wire_in, wire_out = os.dup(0), os.dup(1)
    null = os.open(os.devnull, os.O_RDONLY)
    os.dup2(null, 0)
    os.close(null)
    os.dup2(2, 1)
    return wire_in, wire_out


def _widen_pipe(fd: int) -> None:
    """The pipe behind `fd` holds a whole screenshot's reply (PIPE_BUFFER_BYTES); a file, terminal or socket, or a
    system that refuses the size (a lower pipe-max-size, the user's pipe quota spent), is left as it is: the writer
    then simply waits for room, as before."""
    if not stat.S_ISFIFO(os.fstat(fd).st_mode):
        return
    try:
        if fcntl.fcntl(fd, fcntl.F_GETPIPE_SZ) < PIPE_BUFFER_BYTES:
            fcntl.fcntl(fd, fcntl.F_SETPIPE_SZ, PIPE_BUFFER_BYTES)
    except OSError as exc:
        if exc.errno not in (errno.EPERM, errno.EBUSY, errno.EINVAL):
            raise


@contextmanager
def _non_blocking(*fds: int) -> Iterator[None]:
    """The descriptors non-blocking while the transport runs, as they were after (the flag belongs to the open
    file the client handed over, which may outlive this process, e.g. a terminal)."""
    before = [os.get_blocking(fd) for fd in fds]
    for fd in fds:
        os.set_blocking(fd, False)
    try:
        yield
    finally:
        for fd, blocking in zip(fds, before, strict=True):
            os.set_blocking(fd, blocking)


@asynccontextmanager
async def stdio_transport(
    max_message_bytes: int,
) -> AsyncIterator[tuple[ReadStream[SessionMessage | Exception], WriteStream[SessionMessage]]]:
    """The streams the SDK's server loop runs on: messages read from stdin, messages to write to stdout."""
    wire_in, wire_out = _claim_wire()
    _widen_pipe(wire_out)
    lines, writer = LineReader(wire_in, max_message_bytes), LineWriter(wire_out)
    to_server, from_client = create_context_streams[SessionMessage | Exception](0)
    to_client, outgoing = create_context_streams[SessionMessage](0)

    async def read_lines(replies: WriteStream[SessionMessage]) -> None:
        async with to_server, replies:
            while (line := await lines.read()) is not None:
                parsed = parse_line(line)
                if isinstance(parsed, JSONRPCError):
                    await replies.send(SessionMessage(parsed))
                else:
                    await to_server.send(SessionMessage(parsed))

    async def write_lines() -> None:
        async with outgoing:
            async for message in outgoing:
                await writer.write(message.message.model_dump_json(by_alias=True, exclude_unset=True).encode() + b"\n")

    try:
        with _non_blocking(wire_in, wire_out):
            async with anyio.create_task_group() as tasks:
                tasks.start_soon(read_lines, to_client.clone())
                tasks.start_soon(write_lines)
                yield from_client, to_client
    finally:
        os.close(wire_in)
        os.close(wire_out)
