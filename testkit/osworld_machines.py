"""Stand-in VMs for the runner's remote environments: each its own Xvfb desktop (openbox, the tests' fonts) with a
stand-in server on it (OSWorld's controller, testkit/osworld_controller, by default; or WAA's, testkit/waa_server),
its own home, on a loopback port."""

from __future__ import annotations

import contextlib
from collections.abc import Callable, Iterator
from pathlib import Path

from symphony_mcp.config import DisplaySettings
from symphony_mcp.desktop.virtual_display import start_virtual_display
from testkit.display import SCREEN
from testkit.osworld_controller.process import RunningController, running_controller


@contextlib.contextmanager
def stand_in_machines(
    count: int,
    root: Path,
    server: Callable[..., contextlib.AbstractContextManager[RunningController]] = running_controller,
) -> Iterator[list[RunningController]]:
    """`count` machines, homes under `root` (machine-0, ...), each running `server(home, display=...)`; all stopped
    afterwards (servers, then displays)."""
    with contextlib.ExitStack() as stack:
        machines = []
        for index in range(count):
            settings = DisplaySettings(resolution=f"{SCREEN[0]}x{SCREEN[1]}", window_manager="openbox")
            display = start_virtual_display(settings)
            stack.callback(display.stop)
            machines.append(stack.enter_context(server(root / f"machine-{index}", display=display.name)))
        yield machines
