"""SIGTERM and SIGINT stop the server cleanly and promptly, whatever the transport.

Python's default SIGTERM ends the process on the spot: running tasks stay "running" and the virtual
display is left behind. SIGINT raised KeyboardInterrupt, and then the process waited for the stdio
transport's stdin reader, a worker thread blocked in read() until the client closes its end. Here
both signals become a request to stop: the caller ends its running tasks (saying which signal
stopped them), asks its transport to finish, cleans up, and exits 0. The stdio transport reads
stdin through `cancellable_stdin`, so stopping does not wait for the client's next line; the read
left blocked in its thread is why the process then exits with `exit_now`.
"""

from __future__ import annotations

import contextlib
import io
import logging
import os
import signal
import sys
from collections.abc import Awaitable, Callable

import anyio

log = logging.getLogger(__name__)
STOP_SIGNALS = (signal.SIGTERM, signal.SIGINT)


async def serve_until_signalled(
    serve: Callable[[], Awaitable[None]], stop: Callable[[], None], on_signal: Callable[[str], None]
) -> str | None:
    """Run `serve()`. On SIGTERM or SIGINT call `on_signal(name)`, then `stop()`, and wait for `serve` to return.

    Returns the signal's name, or None when `serve` ended by itself (e.g. the client closed stdin).
    Once a signal is received, further ones are ignored until the process exits: cleanup is bounded.
    """
    received: str | None = None
    with anyio.open_signal_receiver(*STOP_SIGNALS) as signals:
        async with anyio.create_task_group() as tg:

            async def watch() -> None:
                nonlocal received
                async for number in signals:
                    received = signal.Signals(number).name
                    log.info("%s received: ending running tasks and stopping", received)
                    on_signal(received)
                    stop()
                    return

            tg.start_soon(watch)
            await serve()
            tg.cancel_scope.cancel()
    if received is not None:
        for number in STOP_SIGNALS:
            signal.signal(number, signal.SIG_IGN)
    return received


class _CancellableLines(anyio.AsyncFile[str]):
    async def readline(self) -> str:
        return await anyio.to_thread.run_sync(self.wrapped.readline, abandon_on_cancel=True)


def cancellable_stdin() -> anyio.AsyncFile[str]:
    """The process's stdin for the stdio transport, read so that a cancelled read does not wait for a line.

    Like the SDK's own reader, it moves the wire off fd 0 (to a private descriptor) and points fd 0
    at the null device, so child processes read EOF, not the client's messages.
    """
    wire = os.dup(0)  # not inherited by children
    null = os.open(os.devnull, os.O_RDONLY)
    os.dup2(null, 0)
    os.close(null)
    lines = io.TextIOWrapper(os.fdopen(wire, "rb"), encoding="utf-8", errors="replace")
    return _CancellableLines(lines)


def exit_now(code: int = 0) -> None:
    """Exit without joining threads still blocked in reads (the stdio transport's stdin reader): flush first."""
    logging.shutdown()
    for stream in (sys.stdout, sys.stderr):
        with contextlib.suppress(OSError, ValueError):
            stream.flush()
    os._exit(code)
