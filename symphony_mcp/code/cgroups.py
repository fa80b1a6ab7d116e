"""One run's control groups: the run's processes together are bounded in number (pids) and in memory (memory,
swap and its RAM-backed /tmp included), and every one of them can be found and killed at the run's end.

Rlimits bound each process alone (three forks of 1.2 GB took 3.6 GB under a 2 GB RLIMIT_AS), and RLIMIT_NPROC
does not bind root outside a user namespace; a cgroup bounds the run. cgroup v1 (a hierarchy per controller,
`/sys/fs/cgroup/pids`, `/sys/fs/cgroup/memory`) and v2 (one hierarchy, the controllers enabled in its root's
`cgroup.subtree_control`) are both handled. Where neither is writable (not root, nothing delegated) nothing is
limited here and the rlimits remain.

Groups are named after the server process that made them (pid and start time), so a server started later removes
those of a server that died (kill -9) before it could.
"""

from __future__ import annotations

import contextlib
import itertools
import os
import signal
import socket
import time
from dataclasses import dataclass
from pathlib import Path

from symphony_mcp.code.types import KillReason
from symphony_mcp.memory.owner import TaskOwner, this_process

CGROUP_FS = Path("/sys/fs/cgroup")
PREFIX = "symphony-code-"
_CONTROLLERS = ("pids", "memory")
_counter = itertools.count()


@dataclass(frozen=True)
class Hierarchy:
    root: Path
    controllers: frozenset[str]  # of _CONTROLLERS, those this hierarchy limits
    v2: bool


def hierarchies() -> list[Hierarchy]:
    """The writable hierarchies that hold the pids and memory controllers (none unless root)."""
    if os.geteuid() != 0:
        return []
    found = [
        Hierarchy(CGROUP_FS / name, frozenset({name}), v2=False)
        for name in _CONTROLLERS
        if (CGROUP_FS / name / "cgroup.procs").exists() and os.access(CGROUP_FS / name, os.W_OK)
    ]
    covered = {name for hierarchy in found for name in hierarchy.controllers}
    try:
        enabled = set((CGROUP_FS / "cgroup.subtree_control").read_text().split())
    except OSError:
        enabled = set()
    wanted = frozenset(enabled & set(_CONTROLLERS) - covered)
    if wanted and os.access(CGROUP_FS, os.W_OK):
        found.append(Hierarchy(CGROUP_FS, wanted, v2=True))
    return found


class RunGroup:
    """One run's cgroups: `enter()` is called in the child before exec; `reason()` says which limit the run hit;
    `close()` kills what is left and removes the groups. `available` is False where no controller is writable."""

    def __init__(self, processes: int, memory_bytes: int) -> None:
        me = this_process()
        self.paths: list[Path] = []
        self._limits: dict[Path, Hierarchy] = {}
        for hierarchy in hierarchies():
            path = hierarchy.root / f"{PREFIX}{me.pid}-{me.started or 0}-{next(_counter)}"
            try:
                path.mkdir()
                self.paths.append(path)
                self._limits[path] = hierarchy
                _limit(path, hierarchy, processes, memory_bytes)
            except OSError:
                _remove(path)
                self.paths = [p for p in self.paths if p != path]

    @property
    def available(self) -> bool:
        return bool(self.paths)

    def enter(self) -> None:
        """Move the calling process (a child between fork and exec) into the groups."""
        for path in self.paths:
            (path / "cgroup.procs").write_text("0")

    def reason(self) -> KillReason | None:
        """ "memory" when the kernel killed a process of the run at its memory limit, "processes" when a fork was
        refused at the process limit, else None."""
        for path, hierarchy in self._limits.items():
            if "memory" in hierarchy.controllers:
                events = "memory.events" if hierarchy.v2 else "memory.oom_control"
                if _count(path / events, "oom_kill") > 0:
                    return "memory"
        for path, hierarchy in self._limits.items():
            if "pids" in hierarchy.controllers and _count(path / "pids.events", "max") > 0:
                return "processes"
        return None

    def close(self) -> None:
        for path in self.paths:
            _remove(path)
        self.paths = []


def remove_orphans() -> list[Path]:
    """Remove the groups of servers that are gone (their processes killed first); the groups removed."""
    removed = []
    for hierarchy in hierarchies():
        for path in hierarchy.root.glob(f"{PREFIX}*"):
            owner = _owner(path.name)
            if owner is not None and owner.gone():
                _remove(path)
                removed.append(path)
    return removed


def _owner(name: str) -> TaskOwner | None:
    try:
        pid, started, _ = name.removeprefix(PREFIX).split("-")
        return TaskOwner(host=socket.gethostname(), pid=int(pid), started=int(started) or None)
    except ValueError:
        return None  # not a name this module gives


def _limit(path: Path, hierarchy: Hierarchy, processes: int, memory_bytes: int) -> None:
    if "pids" in hierarchy.controllers:
        (path / "pids.max").write_text(str(processes))
    if "memory" not in hierarchy.controllers:
        return
    if hierarchy.v2:
        (path / "memory.max").write_text(str(memory_bytes))
        with contextlib.suppress(FileNotFoundError):  # no swap accounting: no swap to bound
            (path / "memory.swap.max").write_text("0")
    else:
        (path / "memory.limit_in_bytes").write_text(str(memory_bytes))
        with contextlib.suppress(FileNotFoundError):  # memory + swap, set after memory (it may not be lower)
            (path / "memory.memsw.limit_in_bytes").write_text(str(memory_bytes))


def _count(path: Path, key: str) -> int:
    """The number after `key` in a flat-keyed cgroup file (pids.events, memory.events, memory.oom_control)."""
    try:
        for line in path.read_text().splitlines():
            name, _, value = line.partition(" ")
            if name == key:
                return int(value)
    except (OSError, ValueError):
        pass
    return 0


def _remove(path: Path) -> None:
    """Kill every process in the group, then remove it (the killed leave it within milliseconds)."""
    for _ in range(100):
        try:
            pids = [int(p) for p in (path / "cgroup.procs").read_text().split()]
        except OSError:
            break
        if not pids:
            break
        for pid in pids:
            with contextlib.suppress(ProcessLookupError):
                os.kill(pid, signal.SIGKILL)
    for _ in range(200):
        try:
            path.rmdir()
            return
        except FileNotFoundError:
            return
        except OSError:
            time.sleep(0.01)
