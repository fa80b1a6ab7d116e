"""A bound on what code puts on the disk: the default work directory holds at most `disk_mb` (all runs' files
together), and one run adds at most `disk_mb` to the writable paths; a run past either is killed.

RLIMIT_FSIZE caps each file, not their number (two calls put 3.7 GB on the host's disk). What would bound the
total exactly, a quota or a size-limited file system under each directory, needs a file system mounted with
project quotas or a loop device, neither of which a server can count on. So the run is watched: every
`POLL_SECONDS` the free space of each directory's file system is read (one statfs); only when it fell by more than
the room left is the directory walked (by descriptor, links not followed) and the run killed if it is over.
Other processes freeing space on the same file system would hide the run's writes from that estimate, so each
directory is also walked every `WALK_SECONDS` whatever the estimate says. What a run can add past a bound is what
it writes in one poll interval (in one walk interval while others free space beside it). The writable paths are
the user's own (maybe large) folders, so what counts there is the files the run changed (ctime, which code cannot
set back, from the run's start on). A run that starts with the work directory over its bound (the bound was
lowered) may not grow it further, so it can still delete files.
"""

from __future__ import annotations

import asyncio
import os
import time
from dataclasses import dataclass

from symphony_mcp.code.folders import OpenDirectory

POLL_SECONDS = 0.1
WALK_SECONDS = 1.0
BLOCK = 512  # st_blocks unit
CLOCK_SLACK_NS = 50_000_000  # file times come from a coarse clock that may lag time.time_ns() by a tick


def usage(directory: OpenDirectory, changed_since_ns: int = 0) -> int:
    """Bytes of disk the files and directories under `directory` take (allocated blocks, links not followed);
    only of those changed since `changed_since_ns` (ctime) when given."""
    total = 0
    for _, dirs, files, fd in os.fwalk(".", dir_fd=directory.fd):
        for name in (*dirs, *files):
            try:
                status = os.stat(name, dir_fd=fd, follow_symlinks=False)
            except OSError:
                continue  # deleted meanwhile
            if status.st_ctime_ns >= changed_since_ns:
                total += status.st_blocks * BLOCK
    return total


def _free(directory: OpenDirectory) -> int:
    status = os.statvfs(directory.fd)
    return status.f_bavail * status.f_frsize


@dataclass
class _Watched:
    directory: OpenDirectory
    bound: int
    changed_since_ns: int  # 0: everything under it counts
    used: int
    free: int
    walked: float  # time.monotonic() of the last walk


class DiskWatch:
    """Watches one run: the default work directory against `limit_bytes` in all, each writable path against
    `limit_bytes` of files changed by the run."""

    def __init__(self, work: OpenDirectory, writable: list[OpenDirectory], limit_bytes: int) -> None:
        started = time.time_ns() - CLOCK_SLACK_NS
        used = usage(work)
        now = time.monotonic()
        self._watched = [_Watched(work, max(limit_bytes, used), 0, used, _free(work), now)]
        self._watched += [_Watched(path, limit_bytes, started, 0, _free(path), now) for path in writable]

    async def over(self) -> None:
        """Return once a directory holds more than its bound (never, while none does)."""
        while True:
            await asyncio.sleep(POLL_SECONDS)
            for watched in self._watched:
                try:
                    free = _free(watched.directory)
                    due = time.monotonic() - watched.walked >= WALK_SECONDS
                    if watched.used + (watched.free - free) <= watched.bound and not due:
                        continue
                    used = await asyncio.to_thread(usage, watched.directory, watched.changed_since_ns)
                except OSError:
                    continue  # the next poll tries again
                watched.used, watched.free, watched.walked = used, free, time.monotonic()
                if used > watched.bound:
                    return
