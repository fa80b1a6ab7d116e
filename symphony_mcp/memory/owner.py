"""Which server process runs a task, so that a later server can tell a live owner from a dead one.

A task whose server was killed stays "running" in its `task.json`. A pid alone cannot say whether
that server is gone (pids are reused), so the owner is recorded as pid, the process's start time
(clock ticks since boot, `/proc/<pid>/stat`) and the boot id: a live process with the same pid
but another start time, or a different boot, is not the owner.
"""

from __future__ import annotations

import os
import socket
from pathlib import Path

from pydantic import BaseModel, Field

_BOOT_ID = Path("/proc/sys/kernel/random/boot_id")


class TaskOwner(BaseModel):
    host: str
    pid: int
    started: int | None = Field(None, description="process start, clock ticks since boot (Linux); None elsewhere")
    boot_id: str | None = None

    def gone(self) -> bool:
        """Whether the owner has certainly stopped; a process on another host is never judged."""
        if self.host != socket.gethostname():
            return False
        if self.boot_id is not None and self.boot_id != _boot_id():
            return True
        if self.started is not None:
            return _start_ticks(self.pid) != self.started
        return not _pid_exists(self.pid)


def this_process() -> TaskOwner:
    pid = os.getpid()
    return TaskOwner(host=socket.gethostname(), pid=pid, started=_start_ticks(pid), boot_id=_boot_id())


def _start_ticks(pid: int) -> int | None:
    """Field 22 of /proc/<pid>/stat (counted after the command name, which may hold spaces); None: no such process."""
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        return None
    fields = stat.rsplit(")", 1)[1].split()
    if fields[0] == "Z":  # a zombie has exited
        return None
    return int(fields[19])


def _boot_id() -> str | None:
    try:
        return _BOOT_ID.read_text().strip()
    except OSError:
        return None


def _pid_exists(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True
