"""Remote machines as a run's environments (`bench --machines URL,...`): one environment per machine, no display here.

The one rule for every adapter that drives machines (types.DrivesMachines: osworld-vm, waa, macosarena). Each
environment is the machine its URL names (OSWorld's or WAA's in-VM server on port 5000, a Mac's ssh://user@host);
the adapter's server drives it through a remote desktop backend, and the adapter says which URL schemes it takes.
The user may give a reset command (`--machine-reset`), run on this host before every task with `{url}`, `{host}`,
`{port}` and `{index}` filled in (e.g. a hypervisor's snapshot revert, or a container restart); the runner then
waits as the adapter says until the machine answers again. Without one, machines are not reset between tasks, and
the run's summary says so.
"""

from __future__ import annotations

import shlex
import shutil
import subprocess
import tempfile
import time
from collections.abc import Callable, Iterator
from contextlib import ExitStack, contextmanager
from pathlib import Path
from urllib.parse import urlsplit

import httpx

from symphony_mcp.bench.types import Environment
from symphony_mcp.config import Settings
from symphony_mcp.errors import SettingsError, SymphonyError, clip
from symphony_mcp.orchestrator.api import spawned_server
from symphony_mcp.orchestrator.connection import SpawnServer

RESET_SECONDS = 900.0  # a snapshot revert or a VM boot
READY_SECONDS = 300.0  # the controller answering again after a reset
READY_POLL_SECONDS = 1.0


class MachineResetError(SymphonyError):
    """The reset command failed, or the machine's controller did not answer after it."""


def parse_machines(urls: list[str]) -> tuple[str, ...]:
    """The machines' URLs, checked: scheme://host[:port], each once (which schemes: check_schemes)."""
    machines = tuple(url.strip().rstrip("/") for url in urls if url.strip())
    for url in machines:
        parts = urlsplit(url)
        if not parts.scheme or not parts.hostname:
            raise SettingsError(
                f"--machines takes URLs like http://192.168.122.10:5000 or ssh://admin@mac-mini.local:22, got {url!r}"
            )
    if len(set(machines)) != len(machines):
        raise SettingsError(f"--machines names a machine twice: {', '.join(machines)}")
    return machines


def check_schemes(benchmark: str, machines: tuple[str, ...], schemes: tuple[str, ...]) -> None:
    """Each machine's URL has one of the schemes the benchmark's adapter drives (http(s) controllers, ssh logins)."""
    for url in machines:
        if urlsplit(url).scheme not in schemes:
            accepted = " or ".join(f"{scheme}://" for scheme in schemes)
            raise SettingsError(f"{benchmark} takes machines as {accepted} URLs in --machines, got {url!r}")


def reset_argv(template: str, url: str, index: int) -> list[str]:
    """The reset command for one machine: split like a shell line, then the placeholders filled in each word (no
    shell runs it; write `sh -c '...'` for one)."""
    parts = urlsplit(url)
    values = {"url": url, "host": parts.hostname or "", "port": str(parts.port or ""), "index": str(index)}
    try:
        words = shlex.split(template)
    except ValueError as exc:
        raise SettingsError(f"--machine-reset is not a command line: {exc}") from exc
    if not words:
        raise SettingsError("--machine-reset is empty")
    filled = []
    for word in words:
        for key, value in values.items():
            word = word.replace("{" + key + "}", value)
        filled.append(word)
    return filled


def machine_environment(
    index: int, url: str, settings: Settings, workdir: Path, server_args: tuple[str, ...], reset: str | None
) -> Environment:
    """Environment `env-<index>`: the machine at `url`, a folder here; its server's desktop is the adapter's to
    choose (Adapter.server), no display and no live view of this host."""
    workdir.mkdir(parents=True, exist_ok=True)
    base = spawned_server(settings, *server_args)
    server = SpawnServer(base.args, {**base.env, "SYMPHONY_VIEW__ENABLED": "false"})
    return Environment(f"env-{index}", "", workdir, server, machine=url, machine_reset=reset)


@contextmanager
def machine_environments(
    machines: tuple[str, ...],
    settings: Settings,
    root: Path | None = None,
    server_args: tuple[str, ...] = (),
    reset: str | None = None,
) -> Iterator[list[Environment]]:
    """One environment per machine, with folders under `root` (a temporary one by default)."""
    if not machines:
        raise SettingsError("--machines needs at least one controller URL")
    with ExitStack() as stack:
        if root is None:
            root = Path(tempfile.mkdtemp(prefix="symphony-bench-"))
            stack.callback(shutil.rmtree, root, True)
        yield [
            machine_environment(i, url, settings, root / f"env-{i}", server_args, reset)
            for i, url in enumerate(machines)
        ]


WaitForMachine = Callable[[Environment, float], None]  # DrivesMachines.wait_for_machine


def reset_machine(
    environment: Environment, wait: WaitForMachine, timeout: float = RESET_SECONDS, ready: float = READY_SECONDS
) -> None:
    """Run the environment's reset command (blocking: call it from a worker thread), then `wait` (the adapter's) until
    its machine answers; MachineResetError with the command's output when the command fails."""
    if environment.machine is None or environment.machine_reset is None:
        return
    index = int(environment.name.rpartition("-")[2] or 0)
    argv = reset_argv(environment.machine_reset, environment.machine, index)
    try:
        done = subprocess.run(argv, stdin=subprocess.DEVNULL, capture_output=True, text=True, timeout=timeout)
    except (OSError, subprocess.SubprocessError) as exc:
        raise MachineResetError(f"resetting {environment.machine}: {shlex.join(argv)} did not run: {exc}") from exc
    if done.returncode != 0:
        said = (done.stderr or done.stdout).strip() or "no output"
        raise MachineResetError(
            f"resetting {environment.machine}: {shlex.join(argv)} exited with {done.returncode}: {clip(said)}"
        )
    wait(environment, ready)


def wait_for_route(url: str, route: str, timeout: float = READY_SECONDS) -> None:
    """Until the controller at `url` answers 200 on `route` (OSWorld's /screenshot, WAA's /probe), or
    MachineResetError after `timeout` seconds."""
    deadline = time.monotonic() + timeout
    last = "no answer yet"
    with httpx.Client(base_url=url, timeout=30.0) as client:
        while True:
            try:
                status = client.get(route).status_code
            except httpx.HTTPError as exc:
                last = f"{type(exc).__name__}: {exc}"
            else:
                if status == 200:
                    return
                last = f"HTTP {status}"
            if time.monotonic() > deadline:
                raise MachineResetError(f"{url} did not answer within {timeout:g} s after its reset ({clip(last)})")
            time.sleep(READY_POLL_SECONDS)
