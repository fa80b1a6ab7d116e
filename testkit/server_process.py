"""`symphony-mcp serve` as a real subprocess that tests and benchmarks can kill or signal while connected.

The SDK's stdio client keeps its process to itself; crash tests need the pid (to `kill -9` it and to
find the display it started) and the exit status (a signalled server must exit 0). `ServerProcess`
spawns the server and is a `Transport` for `mcp.Client`, so the client is the real one.
"""

from __future__ import annotations

import contextlib
import os
import subprocess
import sys
import time
from collections.abc import AsyncIterator
from contextlib import AbstractAsyncContextManager, asynccontextmanager
from pathlib import Path
from types import TracebackType
from typing import IO, Any

import anyio
import mcp_types as types
from anyio.abc import Process
from mcp import Client, StdioServerParameters
from mcp.shared.message import SessionMessage

from symphony_mcp.sdk_internals import TransportStreams

ENV_KEPT = ("PATH", "HOME", "LANG", "PYTHONPATH", "VIRTUAL_ENV", "XDG_STATE_HOME")


def serve_command() -> list[str]:
    """This environment's console script (not whatever `symphony-mcp` is first on PATH)."""
    executable = Path(sys.executable).parent / "symphony-mcp"
    return [str(executable)] if executable.exists() else [sys.executable, "-m", "symphony_mcp.cli"]


def base_env(**extra: str) -> dict[str, str]:
    return {**{k: os.environ[k] for k in ENV_KEPT if k in os.environ}, **extra}


def stdio_params(*args: str, env: dict[str, str] | None = None) -> StdioServerParameters:
    """`serve *args` for the SDK's own stdio client."""
    command, *prefix = serve_command()
    return StdioServerParameters(command=command, args=[*prefix, "serve", *args], env=env)


class ServerProcess(AbstractAsyncContextManager[TransportStreams]):
    """One server process per `async with`; `pid` and `returncode` while and after it runs."""

    def __init__(self, *args: str, env: dict[str, str] | None = None, stderr: IO[Any] | int | None = None) -> None:
        self.command = [*serve_command(), "serve", *args]
        self.env = base_env() if env is None else env
        self.stderr = stderr
        self.process: Process | None = None
        self._streams: AbstractAsyncContextManager[TransportStreams] | None = None

    @property
    def pid(self) -> int:
        assert self.process is not None, "the server is not started"
        return self.process.pid

    @property
    def returncode(self) -> int | None:
        assert self.process is not None, "the server is not started"
        return self.process.returncode

    async def wait(self, timeout: float) -> int:
        """The exit status, once the process has ended (raises TimeoutError after `timeout` s)."""
        assert self.process is not None, "the server is not started"
        with anyio.fail_after(timeout):
            return await self.process.wait()

    def children(self) -> set[int]:
        """The pids of the processes the server started (e.g. its Xvfb and window manager)."""
        return children(self.pid)

    async def __aenter__(self) -> TransportStreams:
        self._streams = self._connect()
        return await self._streams.__aenter__()

    async def __aexit__(
        self, kind: type[BaseException] | None, error: BaseException | None, traceback: TracebackType | None
    ) -> bool | None:
        assert self._streams is not None
        return await self._streams.__aexit__(kind, error, traceback)

    @asynccontextmanager
    async def _connect(self) -> AsyncIterator[TransportStreams]:
        self.process = process = await anyio.open_process(
            self.command, stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=self.stderr, env=self.env
        )
        assert process.stdin is not None and process.stdout is not None
        stdin, stdout = process.stdin, process.stdout
        reader_in, read_stream = anyio.create_memory_object_stream[SessionMessage | Exception](0)
        write_stream, writer_out = anyio.create_memory_object_stream[SessionMessage](0)

        async def read() -> None:
            buffer = b""
            async with reader_in:
                with contextlib.suppress(anyio.EndOfStream, anyio.ClosedResourceError, anyio.BrokenResourceError):
                    async for chunk in stdout:
                        *lines, buffer = (buffer + chunk).split(b"\n")
                        for line in lines:
                            await reader_in.send(_parse(line))

        async def write() -> None:
            async with writer_out:
                with contextlib.suppress(anyio.ClosedResourceError, anyio.BrokenResourceError, OSError):
                    async for message in writer_out:
                        data = message.message.model_dump_json(by_alias=True, exclude_unset=True) + "\n"
                        await stdin.send(data.encode())

        try:
            async with anyio.create_task_group() as tg:
                tg.start_soon(read)
                tg.start_soon(write)
                try:
                    yield read_stream, write_stream
                finally:
                    tg.cancel_scope.cancel()
        finally:
            with anyio.CancelScope(shield=True):
                await _stop(process)


def _parse(line: bytes) -> SessionMessage | Exception:
    try:
        return SessionMessage(types.jsonrpc_message_adapter.validate_json(line, by_name=False))
    except ValueError as exc:
        return exc


async def _stop(process: Process) -> None:
    """Close stdin (a stdio server's cue to stop), then terminate, then kill: whatever ends it first."""
    with contextlib.suppress(OSError, anyio.BrokenResourceError, anyio.ClosedResourceError):
        if process.stdin is not None:
            await process.stdin.aclose()
    for stop, grace in ((None, 10.0), (process.terminate, 5.0), (process.kill, 5.0)):
        if process.returncode is not None:
            break
        if stop is not None:
            with contextlib.suppress(ProcessLookupError):
                stop()
        with anyio.move_on_after(grace):
            await process.wait()
    with contextlib.suppress(OSError, anyio.ClosedResourceError):
        if process.stdout is not None:
            await process.stdout.aclose()


def children(pid: int) -> set[int]:
    """The pids of a process's children (e.g. a server's Xvfb and window manager)."""
    found: set[int] = set()
    for task in Path(f"/proc/{pid}/task").glob("*"):
        with contextlib.suppress(OSError):
            found |= {int(child) for child in (task / "children").read_text().split()}
    return found


def names(pids: set[int]) -> list[str]:
    """The sorted command names of live processes (e.g. ["Xvfb", "openbox"])."""
    found = []
    for pid in pids:
        with contextlib.suppress(OSError):
            found.append(Path(f"/proc/{pid}/comm").read_text().strip())
    return sorted(found)


def pid_alive(pid: int) -> bool:
    """Whether a process (not a zombie) has this pid."""
    try:
        state = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
    except (OSError, IndexError):
        return False
    return state != "Z"


def wait_gone(pids: set[int], timeout: float = 10.0) -> set[int]:
    """Wait up to `timeout` s for the processes to end; the pids still alive."""
    deadline = time.monotonic() + timeout
    while (alive := {p for p in pids if pid_alive(p)}) and time.monotonic() < deadline:
        time.sleep(0.05)
    return alive


@asynccontextmanager
async def stdio_client(display: str) -> AsyncIterator[Client]:
    """The real MCP client over stdio to a server process of its own on `display` (the tests' fontconfig passed on):
    for tests of what reads the display's applications through the server's own subprocesses (elements' helper)."""
    env = base_env(DISPLAY=display, FONTCONFIG_FILE=os.environ["FONTCONFIG_FILE"])
    async with Client(ServerProcess(env=env)) as connected:
        yield connected
