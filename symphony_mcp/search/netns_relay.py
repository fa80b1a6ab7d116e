"""Chromium's way out of its network namespace: run inside it, before Chromium, as `python -I netns_relay.py PORT
SOCKET -- CHROMIUM ARGS...`.

The namespace has only loopback, so Chromium can reach nothing but what listens there. This brings loopback up,
listens on its 127.0.0.1:PORT, and forwards each connection over the Unix socket SOCKET (the file system is shared)
to the policy proxy outside (search/proxy.py); then it becomes Chromium (exec), keeping Playwright's
--remote-debugging-pipe descriptors 3 and 4. The forwarding runs in a child that dies with Chromium. Standard
library only: it runs as a script, without the package, at every browser start.
"""

from __future__ import annotations

import asyncio
import contextlib
import ctypes
import fcntl
import os
import signal
import socket
import struct
import sys

_SIOCGIFFLAGS, _SIOCSIFFLAGS, _IFF_UP = 0x8913, 0x8914, 0x1
_PR_SET_PDEATHSIG = 1
_PLAYWRIGHT_PIPES = (3, 4)
_CHUNK = 65536


async def splice(reader: asyncio.StreamReader, writer: asyncio.StreamWriter, other_reader: asyncio.StreamReader,
                 other_writer: asyncio.StreamWriter) -> None:  # fmt: skip
    """Copy bytes both ways until either side ends, then close both (also used by the proxy)."""

    async def copy(source: asyncio.StreamReader, sink: asyncio.StreamWriter) -> None:
        while data := await source.read(_CHUNK):
            sink.write(data)
            await sink.drain()

    tasks = [asyncio.ensure_future(copy(reader, other_writer)), asyncio.ensure_future(copy(other_reader, writer))]
    try:
        await asyncio.wait(tasks, return_when=asyncio.FIRST_COMPLETED)
    finally:
        for task in tasks:
            task.cancel()
        await asyncio.gather(*tasks, return_exceptions=True)
        for side in (writer, other_writer):
            side.close()


def loopback_up() -> None:
    """A new network namespace starts with loopback down: bring it up (we are its root)."""
    with socket.socket(socket.AF_INET, socket.SOCK_DGRAM) as probe:
        request = struct.pack("16sH14x", b"lo", 0)
        flags = struct.unpack("16sH14x", fcntl.ioctl(probe.fileno(), _SIOCGIFFLAGS, request))[1]
        fcntl.ioctl(probe.fileno(), _SIOCSIFFLAGS, struct.pack("16sH14x", b"lo", flags | _IFF_UP))


async def _relay(listener: socket.socket, proxy_socket: str) -> None:
    async def forward(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        try:
            proxy_reader, proxy_writer = await asyncio.open_unix_connection(proxy_socket)
        except OSError:
            writer.close()
            return
        with contextlib.suppress(OSError):
            await splice(reader, writer, proxy_reader, proxy_writer)

    server = await asyncio.start_server(forward, sock=listener)
    await server.serve_forever()


def _die_with_parent(parent: int) -> None:
    libc = ctypes.CDLL(None, use_errno=True)
    libc.prctl(_PR_SET_PDEATHSIG, signal.SIGKILL, 0, 0, 0)
    if os.getppid() != parent:  # the parent ended before prctl took effect
        os._exit(0)


def main(argv: list[str]) -> None:
    port, proxy_socket, separator, *browser = argv
    if separator != "--" or not browser:
        sys.exit("usage: netns_relay.py PORT SOCKET -- BROWSER [ARGS...]")
    loopback_up()
    listener = socket.create_server(("127.0.0.1", int(port)), backlog=128)
    parent = os.getpid()
    if os.fork() == 0:
        _die_with_parent(parent)
        for fd in set(_PLAYWRIGHT_PIPES) - {listener.fileno()}:  # Playwright must see them close with Chromium
            with contextlib.suppress(OSError):
                os.close(fd)
        asyncio.run(_relay(listener, proxy_socket))
        os._exit(0)
    listener.close()
    os.execv(browser[0], browser)


if __name__ == "__main__":
    main(sys.argv[1:])
