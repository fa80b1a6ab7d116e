"""Stand-in OSWorld VMs for the runner's remote environments: each its own Xvfb desktop (openbox, the tests' fonts)
with the stand-in controller (testkit/osworld_controller) on it, its own home, on a loopback port."""

from __future__ import annotations

import contextlib
from collections.abc import Iterator
from pathlib import Path

from symphony_mcp.config import DisplaySettings
from symphony_mcp.desktop.virtual_display import start_virtual_display
from testkit.display import SCREEN
from testkit.osworld_controller.process import RunningController, running_controller


@contextlib.contextmanager
def stand_in_machines(count: int, root: Path) -> Iterator[list[RunningController]]:
    """`count` machines, homes under `root` (machine-0, ...); all stopped afterwards (controllers, then displays)."""
    with contextlib.ExitStack() as stack:
        machines = []
        for index in range(count):
            settings = DisplaySettings(resolution=f"{SCREEN[0]}x{SCREEN[1]}", window_manager="openbox")
            display = start_virtual_display(settings)
            stack.callback(display.stop)
            machines.append(stack.enter_context(running_controller(root / f"machine-{index}", display=display.name)))
        yield machines
