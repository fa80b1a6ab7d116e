"""Parallel slots for a benchmark run: each its own Xvfb display, work folder and server settings.

An adapter whose environments bring their own display (types.brings_own_display: OSWorld's sandbox) gets slots
without one: no Xvfb and no live view is started for them.

The displays are started from the calling thread (the main thread in the CLI and in a Ray actor), so
they get SIGTERM when the runner dies even by SIGKILL (virtual_display's parent-death signal), and
`stop()` ends them on a normal exit, an exception or a SIGTERM/SIGINT turned into cancellation.
"""

from __future__ import annotations

import shutil
import tempfile
from collections.abc import Iterator
from contextlib import ExitStack, contextmanager
from dataclasses import replace
from pathlib import Path

from symphony_mcp.bench.types import Environment
from symphony_mcp.config import Settings
from symphony_mcp.desktop.live_view import live_view_for
from symphony_mcp.desktop.virtual_display import VirtualDisplay, start_virtual_display
from symphony_mcp.orchestrator.api import spawned_server
from symphony_mcp.orchestrator.connection import SpawnServer


def environment_server(settings: Settings, display: str, *server_args: str) -> SpawnServer:
    """`symphony-mcp serve` on `display` with the client's settings (its trajectory dir set per task). The environment
    owns the display and its live view: a task's server starts neither, whatever the environment or config file say."""
    base = spawned_server(settings, *server_args)
    own = {
        "SYMPHONY_DISPLAY__DISPLAY": display,
        "SYMPHONY_DISPLAY__VIRTUAL": "never",
        "SYMPHONY_VIEW__ENABLED": "false",
    }
    return SpawnServer(base.args, {**base.env, "DISPLAY": display, **own})


def server_for_task(environment: Environment, trajectory_dir: Path) -> SpawnServer:
    """The environment's server writing its trajectory into the task's results folder."""
    server = environment.server
    return replace(server, env={**server.env, "SYMPHONY_MEMORY__TRAJECTORY_DIR": str(trajectory_dir)})


@contextmanager
def started_environment(
    name: str,
    settings: Settings,
    workdir: Path,
    server_args: tuple[str, ...] = (),
    view_port: int | None = None,
    own_display: bool = False,
) -> Iterator[Environment]:
    """One environment: a display of the configured resolution, and its live view when settings.view asks for one
    (on `view_port`, default settings.view.port), stopped on the way out; neither when the adapter brings its
    own display (`own_display`)."""
    if own_display:
        workdir.mkdir(parents=True, exist_ok=True)
        yield Environment(name, "", workdir, environment_server(settings, "", *server_args))
        return
    display: VirtualDisplay = start_virtual_display(settings.display)
    try:
        with live_view_for(display.name, settings.view, view_port) as view:
            workdir.mkdir(parents=True, exist_ok=True)
            server = environment_server(settings, display.name, *server_args)
            yield Environment(name, display.name, workdir, server, view.url if view else None)
    finally:
        display.stop()


@contextmanager
def started_environments(
    count: int,
    settings: Settings,
    root: Path | None = None,
    server_args: tuple[str, ...] = (),
    own_display: bool = False,
) -> Iterator[list[Environment]]:
    """`count` environments named env-0, env-1, ... with folders under `root` (a temporary one by default), without
    displays when the adapter brings its own (`own_display`)."""
    if count < 1:
        raise ValueError(f"--parallel must be at least 1, got {count}")
    with ExitStack() as stack:
        if root is None:
            root = Path(tempfile.mkdtemp(prefix="symphony-bench-"))
            stack.callback(shutil.rmtree, root, True)
        yield [
            stack.enter_context(
                started_environment(
                    f"env-{i}", settings, root / f"env-{i}", server_args, _view_port(settings, i), own_display
                )
            )
            for i in range(count)
        ]


def _view_port(settings: Settings, index: int) -> int:
    """Environment `index`'s live view port: settings.view.port + index, or any free port when that is 0."""
    return settings.view.port + index if settings.view.port else 0
