"""OSWorld's result and expected getters (`get_<type>(env, config)`), reimplemented for the local desktop.

Same inputs and outputs as OSWorld's, where its getter asks the in-VM server, here the environment's sandbox
answers, as the task user: `vm_command_line` runs the command (commands.execute) and gives stdout, or None
when the server would have failed; `vm_command_error` gives stderr; `vm_file` copies the file into the
task's cache and gives that path (None when missing); `list_directory` gives the server's tree
{type, name, children}; `cache_file` a file in the cache; `rule` the expected values as written;
`cloud_file` the gold file from a copy of OSWorld's cache (offline.py), never the network. Getters that
need GNOME Terminal, AT-SPI, Chrome or VLC are not here: such tasks are listed as skipped.
"""

from __future__ import annotations

import json
import os
import shutil
import sys
from collections.abc import Callable
from dataclasses import dataclass
from datetime import datetime
from pathlib import Path
from typing import Any

from symphony_mcp.bench.osworld.commands import execute
from symphony_mcp.bench.osworld.offline import cloud_copy
from symphony_mcp.bench.osworld.sandbox import Sandbox

# OSWorld's /list_directory tree, built inside the environment as its server builds it (listing order, a
# folder that cannot be read as {'error': ...}); printed as JSON.
TREE_SCRIPT = """
import json, os, sys
def tree(directory):
    node = {"type": "directory", "name": os.path.basename(directory), "children": []}
    try:
        for entry in os.listdir(directory):
            full = os.path.join(directory, entry)
            node["children"].append(tree(full) if os.path.isdir(full) else {"type": "file", "name": entry})
    except OSError as exc:
        return {"error": str(exc)}
    return node
print(json.dumps(tree(sys.argv[1])) if os.path.isdir(sys.argv[1]) else "null")
"""


@dataclass(frozen=True)
class GetterContext:
    sandbox: Sandbox
    cache_dir: Path
    task_id: str = ""
    offline: Path | None = None  # a copy of OSWorld's download cache (offline.py)


Getter = Callable[[GetterContext, dict[str, Any]], Any]


def get_rule(context: GetterContext, config: dict[str, Any]) -> Any:
    return config["rules"]


def get_vm_command_line(context: GetterContext, config: dict[str, Any]) -> str | None:
    result = execute(context.sandbox, config["command"], config.get("shell", False))
    return result.output if result.ok else None


def get_vm_command_error(context: GetterContext, config: dict[str, Any]) -> str | None:
    result = execute(context.sandbox, config["command"], config.get("shell", False))
    return result.error if result.ok else None


def get_list_directory(context: GetterContext, config: dict[str, Any]) -> dict[str, Any] | None:
    """None for a path that is not a directory (the server answers 400)."""
    result = execute(context.sandbox, [sys.executable, "-c", TREE_SCRIPT, config["path"]])
    if not result.ok or result.returncode != 0:
        return None
    tree: dict[str, Any] | None = json.loads(result.output)
    return tree


def get_vm_file(context: GetterContext, config: dict[str, Any]) -> str | list[str | None] | None:
    if config.get("multi", False):
        paths, dests = list(config["path"]), list(config["dest"])
    else:
        paths, dests = [config["path"]], [config["dest"]]
        if config.get("time_suffix", False):
            stamp = datetime.now().strftime(config.get("time_format", "%Y%m%d_%H%M%S"))
            dests = [f"{os.path.splitext(d)[0]}_{stamp}{os.path.splitext(d)[1]}" for d in dests]
    gives = set(config.get("gives", [0]))
    given: list[str | None] = []
    for index, (path, dest) in enumerate(zip(paths, dests, strict=True)):
        data = context.sandbox.read_file(os.path.expandvars(context.sandbox.user.expand(path)))
        if data is None:
            if index in gives:
                given.append(None)
            continue
        context.cache_dir.mkdir(parents=True, exist_ok=True)
        target = context.cache_dir / dest
        target.write_bytes(data)
        if index in gives:
            given.append(str(target))
    if not given:
        return None
    return given[0] if len(given) == 1 else given


def get_cloud_file(context: GetterContext, config: dict[str, Any]) -> str | list[str]:
    """OSWorld's gold file, from the copy of its cache (the network is never used)."""
    multi = config.get("multi", False)
    paths, dests = (list(config["path"]), list(config["dest"])) if multi else ([config["path"]], [config["dest"]])
    gives = set(config.get("gives", [0]))
    given = []
    for index, (url, dest) in enumerate(zip(paths, dests, strict=True)):
        source = cloud_copy(context.offline, context.task_id, dest, url)
        if source is None:
            raise FileNotFoundError(f"no offline copy of {url} as {dest} (OSWorld's cache)")
        context.cache_dir.mkdir(parents=True, exist_ok=True)
        shutil.copyfile(source, context.cache_dir / dest)
        if index in gives:
            given.append(str(context.cache_dir / dest))
    return given[0] if len(given) == 1 else given


def get_cache_file(context: GetterContext, config: dict[str, Any]) -> str:
    path = context.cache_dir / config["path"]
    if not path.exists():
        raise FileNotFoundError(path)
    return str(path)


GETTERS: dict[str, Getter] = {
    "rule": get_rule,
    "vm_command_line": get_vm_command_line,
    "vm_command_error": get_vm_command_error,
    "list_directory": get_list_directory,
    "vm_file": get_vm_file,
    "cache_file": get_cache_file,
    "cloud_file": get_cloud_file,
}
