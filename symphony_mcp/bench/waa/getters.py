"""WAA's getters that run here, over its server's routes as its own getters call them, and its evaluation.

- `rule`: the task's own value; `cloud_file`: the gold file, downloaded once into the task's cache folder;
- `vm_file`: the machine's file via `/file`, into the cache folder (None when the machine has no such file, as WAA's
  getter gives); `vm_file_exists_in_vm_folder`: 1.0 or 0.0 (`/file_exists`, whose "no" is HTTP 400);
- `vm_command_line`: the output of a command run through `/execute`.
The metrics are OSWorld's functions (WAA's evaluators import OSWorld's), combined as OSWorld's `evaluate` does
(bench/osworld/evaluate.py says how): postconfig, fail() on infeasible tasks, `conj` "and"/"or".
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path, PureWindowsPath
from typing import Any

import httpx

from symphony_mcp.bench.osworld.evaluate import metric_score
from symphony_mcp.bench.types import Score
from symphony_mcp.desktop.remote.waa_controller import WaaController
from symphony_mcp.errors import RemoteActionError

CLOUD_SECONDS = 120


@dataclass(frozen=True)
class Getting:
    controller: WaaController
    cache_dir: Path


def _cached(getting: Getting, dest: str) -> Path:
    getting.cache_dir.mkdir(parents=True, exist_ok=True)
    return getting.cache_dir / PureWindowsPath(dest).name


def _vm_file(getting: Getting, config: dict[str, Any]) -> str | None:
    try:
        data = getting.controller.download(config["path"])
    except RemoteActionError as exc:
        if "HTTP 404" in str(exc):
            return None
        raise
    path = _cached(getting, config.get("dest") or PureWindowsPath(config["path"]).name)
    path.write_bytes(data)
    return str(path)


def _cloud_file(getting: Getting, config: dict[str, Any]) -> str:
    path = _cached(getting, config["dest"])
    if not path.exists():
        answer = httpx.get(config["path"], timeout=CLOUD_SECONDS, follow_redirects=True)
        answer.raise_for_status()
        path.write_bytes(answer.content)
    return str(path)


def _file_in_folder(getting: Getting, config: dict[str, Any]) -> float:
    if not config.get("folder_name") or not config.get("file_name"):
        return 0.0
    found = getting.controller.exists("/file_exists", {"path": config["folder_name"], "file_name": config["file_name"]})
    return 1.0 if found else 0.0


def _command_line(getting: Getting, config: dict[str, Any]) -> str:
    """A list runs as is; a command line through the machine's shell (cmd on Windows, sh elsewhere)."""
    command = config["command"]
    if isinstance(command, str):
        shell = ["cmd", "/c"] if getting.controller.platform() == "win32" else ["sh", "-c"]
        command = [*shell, command]
    return getting.controller.execute([str(part) for part in command]).output


GETTERS: dict[str, Callable[[Getting, dict[str, Any]], Any]] = {
    "rule": lambda _, config: config["rules"],
    "vm_file": _vm_file,
    "cloud_file": _cloud_file,
    "vm_file_exists_in_vm_folder": _file_in_folder,
    "vm_command_line": _command_line,
}


def score(evaluator: dict[str, Any], getting: Getting) -> Score:
    """The task's metrics over its getters' values, combined by `conj` (infeasible and postconfig are the
    adapter's: see WaaAdapter.evaluate)."""
    return metric_score(evaluator, lambda config: _get(getting, config))


def _get(getting: Getting, config: dict[str, Any] | None) -> Any:
    if config is None:
        return None
    return GETTERS[config["type"]](getting, config)
