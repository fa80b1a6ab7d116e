"""SIGTERM and SIGINT stop the server cleanly and promptly, whatever the transport.

Python's default SIGTERM ends the process on the spot: running tasks stay "running" and the virtual
display is left behind. SIGINT raised KeyboardInterrupt, and then the process waited for the stdio
transport's stdin reader, a worker thread blocked in read() until the client closes its end. Here
both signals become a request to stop: the caller ends its running tasks (saying which signal
stopped them), asks its transport to finish, cleans up, and exits 0. The stdio transport abandons
its pending read when cancelled (stdio_transport.py), so stopping does not wait for the client's
next line; the read left blocked in its thread is why the process then exits with `exit_now`.
"""

from __future__ import annotations

import contextlib
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


def exit_now(code: int = 0) -> None:
    """Exit without joining threads still blocked in reads (the stdio transport's stdin reader): flush first."""
    logging.shutdown()
    for stream in (sys.stdout, sys.stderr):
        with contextlib.suppress(OSError, ValueError):
            stream.flush()
    os._exit(code)
