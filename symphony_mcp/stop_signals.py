"""SIGTERM, SIGINT, SIGHUP and SIGQUIT stop the server cleanly and promptly, whatever the transport and
whenever they come: while it serves, and while it starts.

Python's default SIGTERM ends the process on the spot: running tasks stay "running" and the virtual
display is left behind. SIGINT raised KeyboardInterrupt, and then the process waited for the stdio
transport's stdin reader, a worker thread blocked in read() until the client closes its end. Here
both signals become a request to stop: the caller ends its running tasks (saying which signal
stopped them), asks its transport to finish, cleans up, and exits 0. The stdio transport abandons
its pending read when cancelled (stdio_transport.py), so stopping does not wait for the client's
next line; the read left blocked in its thread is why the process then exits with `exit_now`.
SIGHUP (the terminal or the host went away) and SIGQUIT are the same request: by default they ended
the process on the spot too, leaving its tasks "running".

During start-up (imports, settings, the virtual display, building the server: over a second) there is
no loop to watch signals yet: `stop_before_serving` makes a stop signal raise `StopRequested` there,
which unwinds start-up like an exception (the display started so far is stopped) and exits 0 without a
traceback, where it ended the process with -15, or -2 and a KeyboardInterrupt traceback.
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
STOP_SIGNALS = (signal.SIGTERM, signal.SIGINT, signal.SIGHUP, signal.SIGQUIT)


class StopRequested(BaseException):
    """A stop signal received before serving began. A BaseException, as KeyboardInterrupt is: start-up code
    that handles errors (`except Exception`) must not swallow it."""

    def __init__(self, name: str) -> None:
        super().__init__(f"{name} received")
        self.name = name


def stop_before_serving() -> None:
    """Until `serve_until_signalled` takes over, a stop signal raises StopRequested in the main thread; later
    ones are ignored, so the unwinding it starts runs to its end."""

    def on_signal(number: int, _: object) -> None:
        for each in STOP_SIGNALS:
            signal.signal(each, signal.SIG_IGN)
        raise StopRequested(signal.Signals(number).name)

    for number in STOP_SIGNALS:
        signal.signal(number, on_signal)


def restore_default_signals() -> None:
    """The interpreter's own handling of the stop signals (Ctrl-C raises KeyboardInterrupt), for commands
    other than `serve`."""
    for number in STOP_SIGNALS:
        signal.signal(number, signal.default_int_handler if number == signal.SIGINT else signal.SIG_DFL)


async def serve_until_signalled(
    serve: Callable[[], Awaitable[None]], stop: Callable[[], None], on_signal: Callable[[str], None]
) -> str | None:
    """Run `serve()`. On a stop signal call `on_signal(name)`, then `stop()`, and wait for `serve` to return.

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
