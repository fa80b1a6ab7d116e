"""A bound on what the default work directory holds: a run that grows it past `disk_mb` is killed.

RLIMIT_FSIZE caps each file, not their number (two calls put 3.7 GB on the host's disk). What would bound the
total exactly, a quota or a size-limited file system under the directory, needs a file system mounted with
project quotas or a loop device, neither of which a server can count on. So the run is watched: every
`POLL_SECONDS` the free space of the directory's file system is read (one statfs); only when it fell by more than
the room left is the directory walked (by descriptor, links not followed) to count its blocks, and the run is
killed if they are over. What a run can add past the bound is what it writes in one poll interval. A run that
starts over the bound (the bound was lowered) may not grow it further, so it can still delete files.
"""

from __future__ import annotations

import asyncio
import os

from symphony_mcp.code.folders import OpenDirectory

POLL_SECONDS = 0.1
BLOCK = 512  # st_blocks unit


def usage(directory: OpenDirectory) -> int:
    """Bytes of disk the files and directories under `directory` take (allocated blocks, links not followed)."""
    total = 0
    for _, dirs, files, fd in os.fwalk(".", dir_fd=directory.fd):
        for name in (*dirs, *files):
            try:
                total += os.stat(name, dir_fd=fd, follow_symlinks=False).st_blocks * BLOCK
            except OSError:
                continue  # deleted meanwhile
    return total


def _free(directory: OpenDirectory) -> int:
    status = os.statvfs(directory.fd)
    return status.f_bavail * status.f_frsize


class DiskWatch:
    """Watches one run's growth of `directory` against `limit_bytes`."""

    def __init__(self, directory: OpenDirectory, limit_bytes: int) -> None:
        self.directory = directory
        self._used = usage(directory)
        self._free = _free(directory)
        self.bound = max(limit_bytes, self._used)

    async def over(self) -> None:
        """Return once the directory holds more than its bound (never, while it does not)."""
        while True:
            await asyncio.sleep(POLL_SECONDS)
            try:
                free = _free(self.directory)
                if self._used + (self._free - free) <= self.bound:
                    continue
                self._used, self._free = await asyncio.to_thread(usage, self.directory), free
            except OSError:
                continue  # the next poll tries again
            if self._used > self.bound:
                return
