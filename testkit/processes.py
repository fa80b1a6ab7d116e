"""This test run's own processes, found by a /proc scan: which Chromiums it started, and killing their renderers
(other runs on the machine start and stop theirs meanwhile)."""

from __future__ import annotations

import os
import signal
from pathlib import Path


def descendants() -> dict[int, str]:
    """pid -> command line of every process below this one (a /proc scan: who belongs to this test run)."""
    parents: dict[int, int] = {}
    commands: dict[int, str] = {}
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            stat = (entry / "stat").read_text()
            commands[int(entry.name)] = (entry / "cmdline").read_bytes().replace(b"\0", b" ").decode()
        except OSError:
            continue
        parents[int(entry.name)] = int(stat.rpartition(")")[2].split()[1])
    mine = {os.getpid()}
    changed = True
    while changed:
        changed = False
        for pid, parent in parents.items():
            if parent in mine and pid not in mine:
                mine.add(pid)
                changed = True
    return {pid: commands[pid] for pid in mine if pid != os.getpid() and pid in commands}


def chromium_processes() -> set[int]:
    return {pid for pid, command in descendants().items() if "chromium" in command}


def kill_renderers(spare: set[int]) -> list[int]:
    """SIGKILL the renderer processes of this run's Chromiums, but those in `spare` (other tests' browser)."""
    renderers = [pid for pid, command in descendants().items() if "--type=renderer" in command and pid not in spare]
    for pid in renderers:
        os.kill(pid, signal.SIGKILL)
    return renderers
