"""A process-count limit that also holds for root: a pids cgroup per run.

RLIMIT_NPROC does not bind a process whose user is root outside every user namespace (the kernel exempts
the initial root user), and the server may run as root (containers, VMs). Where the pids controller is
writable (cgroup v1 `pids` hierarchy or a v2 hierarchy with `pids` enabled), a child cgroup per run caps the
number of processes and lets the run's every process be killed at its end.
"""

from __future__ import annotations

import contextlib
import itertools
import os
import signal
import time
from pathlib import Path

_ROOTS = (Path("/sys/fs/cgroup/pids"), Path("/sys/fs/cgroup"))
_counter = itertools.count()


def _writable_root() -> Path | None:
    for root in _ROOTS:
        v1 = root.name == "pids" and (root / "cgroup.procs").exists()
        if (v1 or _has_pids(root)) and os.access(root, os.W_OK):
            return root
    return None


def _has_pids(root: Path) -> bool:
    try:
        return "pids" in (root / "cgroup.subtree_control").read_text().split()
    except OSError:
        return False


class PidsGroup:
    """One run's cgroup: `enter()` is called in the child before exec; `close()` kills what is left and removes
    the group. `available` is False where no pids controller can be written (nothing is then limited here)."""

    def __init__(self, limit: int) -> None:
        root = _writable_root() if os.geteuid() == 0 else None
        self.path: Path | None = None
        if root is not None:
            path = root / f"symphony-code-{os.getpid()}-{next(_counter)}"
            try:
                path.mkdir()
                (path / "pids.max").write_text(str(limit))
                self.path = path
            except OSError:
                with contextlib.suppress(OSError):
                    path.rmdir()

    @property
    def available(self) -> bool:
        return self.path is not None

    def enter(self) -> None:
        """Move the calling process (a child between fork and exec) into the group."""
        if self.path is not None:
            (self.path / "cgroup.procs").write_text("0")

    def hit_limit(self) -> bool:
        """Whether a fork was refused because the group was full."""
        if self.path is None:
            return False
        try:
            for line in (self.path / "pids.events").read_text().splitlines():
                name, _, count = line.partition(" ")
                if name == "max" and int(count) > 0:
                    return True
        except (OSError, ValueError):
            pass
        return False

    def close(self) -> None:
        if self.path is None:
            return
        for _ in range(100):
            try:
                pids = [int(p) for p in (self.path / "cgroup.procs").read_text().split()]
            except OSError:
                break
            if not pids:
                break
            for pid in pids:
                with contextlib.suppress(ProcessLookupError):
                    os.kill(pid, signal.SIGKILL)
        for _ in range(200):  # the killed processes leave the group within milliseconds
            try:
                self.path.rmdir()
                break
            except FileNotFoundError:
                break
            except OSError:
                time.sleep(0.01)
        self.path = None
