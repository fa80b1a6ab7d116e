"""What `symphony-mcp bench run` is asked to do: its own module, so the command and the backends it
hands the request to (ray_backend.py) both import it and neither imports the other."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

from symphony_mcp.bench.registry import AdapterOptions
from symphony_mcp.bench.types import TaskFilter
from symphony_mcp.errors import SettingsError

Backend = Literal["local", "ray"]


@dataclass(frozen=True)
class BenchRequest:
    spec: str  # the adapter's factory, "module:callable" (registry.adapter_spec)
    selection: TaskFilter
    options: AdapterOptions = ()  # keyword arguments of the factory (--option KEY=VALUE)
    parallel: int = 1
    force: bool = False
    backend: Backend = "local"
    ray_address: str | None = None
    quiet: bool = False
    server_args: tuple[str, ...] = ()  # e.g. ("--config", path) for every spawned server
    machines: tuple[str, ...] = ()  # remote machines' controller URLs: one environment each (machines.py)
    machine_reset: str | None = None  # the command that reverts a machine before each task

    def __post_init__(self) -> None:
        if self.parallel < 1:
            raise SettingsError(f"--parallel must be at least 1 (environments at once), got {self.parallel}")
        if self.ray_address and self.backend != "ray":
            raise SettingsError("--ray-address needs --backend ray")
        if self.machine_reset and not self.machines:
            raise SettingsError("--machine-reset needs --machines (the machines it resets)")
