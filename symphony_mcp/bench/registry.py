"""Benchmarks by name: which module holds each adapter, imported only when that benchmark is used.

A benchmark's optional dependencies (miniwob, desktop-env) are imported by its module, so a missing one
surfaces here as one clear error naming the install command, not as an ImportError at start-up. Custom
adapters need no registration: `--adapter package.module:Factory` names any callable that returns an Adapter
(a class or a function), importable from the runner's Python path. `--option KEY=VALUE` passes keyword
arguments to the factory (MiniWoB++'s seeds, OSWorld's tasks_dir), values read as JSON when they are JSON.
"""

from __future__ import annotations

import importlib
import inspect
import json
from collections.abc import Callable
from dataclasses import dataclass
from typing import cast

from symphony_mcp.bench.types import Adapter
from symphony_mcp.errors import SettingsError, SymphonyError


class BenchmarkUnavailableError(SymphonyError):
    """A benchmark whose module or optional dependencies are not installed (a misspelt name or option is a
    SettingsError)."""


@dataclass(frozen=True)
class Registration:
    factory: str  # "package.module:callable", the callable taking no arguments
    install: str  # how to install what the module imports


BENCHMARKS: dict[str, Registration] = {
    "miniwob": Registration("symphony_mcp.bench.miniwob:MiniWobAdapter", "pip install --no-deps miniwob"),
    "macosarena": Registration("symphony_mcp.bench.macosarena:MacOSArenaAdapter", "pip install symphony-mcp"),
    "osworld": Registration(
        "symphony_mcp.bench.osworld:OSWorldAdapter",
        "pip install 'symphony-mcp[osworld]' && pip install --no-deps desktop-env==1.0.2",
    ),
    "osworld-vm": Registration(  # OSWorld's own VMs, given with bench --machines
        "symphony_mcp.bench.osworld.remote:OSWorldVmAdapter",
        "pip install 'symphony-mcp[osworld]' && pip install --no-deps desktop-env==1.0.2",
    ),
    "waa": Registration(
        "symphony_mcp.bench.waa.adapter:WaaAdapter",
        "pip install 'symphony-mcp[osworld]' && pip install --no-deps desktop-env==1.0.2 (WAA scores with its metrics)",
    ),
}


def adapter_spec(benchmark: str | None, custom: str | None) -> str:
    """The factory spec of a named benchmark, or the custom one; what Ray actors re-create adapters from."""
    if custom:
        if ":" not in custom:
            raise SettingsError(f"--adapter must look like package.module:Factory, got {custom!r}")
        return custom
    if benchmark not in BENCHMARKS:
        known = ", ".join(sorted(BENCHMARKS))
        raise SettingsError(f"unknown benchmark {benchmark!r}: known are {known}, or give --adapter MODULE:NAME")
    return BENCHMARKS[benchmark].factory


AdapterOptions = tuple[tuple[str, object], ...]


def parse_option(text: str) -> tuple[str, object]:
    """KEY=VALUE from the command line; VALUE as JSON (3, 2.5, true, [..]) when it parses, else as text."""
    key, equals, value = text.partition("=")
    if not equals or not key.isidentifier():
        raise SettingsError(f"an adapter option must look like KEY=VALUE (e.g. seeds=3), got {text!r}")
    try:
        return key, json.loads(value)
    except ValueError:
        return key, value


def load_adapter(spec: str, options: AdapterOptions = ()) -> Adapter:
    """Import `module:callable` and call it with `options`; a missing dependency names the install command."""
    module_name, _, attribute = spec.partition(":")
    install = next((r.install for r in BENCHMARKS.values() if r.factory == spec), None)
    try:
        module = importlib.import_module(module_name)
    except ImportError as exc:
        missing = exc.name or module_name
        if module_name == missing or module_name.startswith(f"{missing}."):
            raise BenchmarkUnavailableError(f"no module {module_name} in this installation (from {spec!r})") from exc
        how = f": {install}" if install else ""
        raise BenchmarkUnavailableError(f"cannot import {module_name} ({missing} is missing){how}") from exc
    factory = getattr(module, attribute, None)
    if not callable(factory):
        raise SettingsError(f"{module_name} has no callable {attribute!r} (from {spec!r})")
    try:
        return cast(Adapter, cast(Callable[..., object], factory)(**dict(options)))
    except TypeError as exc:
        accepted = ", ".join(inspect.signature(factory).parameters) or "no options"
        raise SettingsError(f"{spec} does not take these options ({exc}); it takes: {accepted}") from exc
