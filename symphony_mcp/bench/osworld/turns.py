"""Environments take turns on the one task account: its home holds one task's state at a time.

OSWorld gives every environment its own VM; here all environments share the account `user` and its home,
so an environment holds the home from its reset to its evaluate (or its next reset, or teardown) and the
others wait. The turn is an exclusive flock on a file named after the account, so environments in other
processes on this machine (Ray actors, a second `symphony-mcp bench`) wait too; the kernel releases it
when a holder dies.
"""

from __future__ import annotations

import fcntl
import os
import tempfile
from pathlib import Path

import anyio

POLL_SECONDS = 0.1


def turn_file(user: str) -> Path:
    return Path(tempfile.gettempdir()) / f"symphony-mcp-osworld-{user}.lock"


class HomeTurns:
    def __init__(self, path: Path) -> None:
        self.path = path
        self._held: dict[str, int] = {}  # environment name -> its open lock file

    async def take(self, environment: str) -> None:
        """Wait for the home (polling: a blocked flock in a thread could not be cancelled)."""
        if environment in self._held:
            return
        descriptor = os.open(self.path, os.O_RDONLY | os.O_CREAT, 0o644)
        try:
            while True:
                try:
                    fcntl.flock(descriptor, fcntl.LOCK_EX | fcntl.LOCK_NB)
                    break
                except BlockingIOError:
                    await anyio.sleep(POLL_SECONDS)
        except BaseException:
            os.close(descriptor)
            raise
        self._held[environment] = descriptor

    def give(self, environment: str) -> None:
        descriptor = self._held.pop(environment, None)
        if descriptor is not None:
            os.close(descriptor)  # closing the file releases its lock

    def give_all(self) -> None:
        for environment in list(self._held):
            self.give(environment)
