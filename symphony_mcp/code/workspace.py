"""What the Coder is told about the machine, and which files its run created or changed.

The change list comes from comparing the writable paths before and after the run (size and mtime),
bounded so a huge tree costs a bounded walk.
"""

from __future__ import annotations

import getpass
import os
import platform
import re
import stat
from collections.abc import Iterable
from pathlib import Path

from symphony_mcp.code.folders import normalised, open_directory
from symphony_mcp.code.result_schemas import ChangedFile
from symphony_mcp.errors import InvalidInputError

MAX_WALKED = 20_000  # files looked at per snapshot
MAX_LISTED = 50  # changed files reported
# file.ext, dir/file.ext, ~/dir/file.ext, ./file.ext; or an absolute or home path without an extension
_PATHS_IN_TASK = re.compile(
    r"(?:~/|\.{0,2}/)?[\w.@+-]+(?:/[\w.@+-]+)*\.[A-Za-z0-9]{1,8}\b|(?:~/|/)[\w.@+-]+(?:/[\w.@+-]+)+"
)
# A word of digits and dots (12.50, 3.14, 1.2.3, 2024.01.05) is a number or a version, not a file name.
_NUMBER = re.compile(r"[+-]?\d+(?:\.\d+)+")

Snapshot = dict[str, tuple[int, int]]


def environment_facts(workdir: Path, writable: list[Path], task: str, python_version: str | None = None) -> list[str]:
    """OS, user, home, python version, the writable places, and the files the task names (found in those places
    or not)."""
    home = Path.home()
    facts = [
        f"OS: {platform.system()} {platform.release()} ({platform.machine()})",
        f"User: {_user()}; home: {home}",
        f"Python: {python_version or platform.python_version()}",
        f"Working directory: {workdir}",
        "Writable: " + ", ".join(str(p) for p in [workdir, *writable]),
    ]
    places = [workdir, *writable]
    facts += [f"File named in the task: {name} -> {_describe(name, places)}" for name in named_files(task)]
    return facts


def named_files(task: str) -> list[str]:
    """Path-like words of the task (file.ext, ~/dir/file, /abs/path), in order, once each; numbers are not."""
    words = (match.group(0) for match in _PATHS_IN_TASK.finditer(task))
    return list(dict.fromkeys(word for word in words if not _NUMBER.fullmatch(word)))[:20]


def snapshot(roots: Iterable[Path]) -> Snapshot:
    """Size and mtime of each file under `roots`, walked by descriptor: a root that is missing or reached
    through a link the code planted is not walked (the executor refuses to run there), nor is a link below."""
    seen: Snapshot = {}
    for root in roots:
        try:
            top = open_directory(root)
        except InvalidInputError:
            continue
        try:
            for directory, dirs, files, fd in os.fwalk(".", dir_fd=top.fd):
                dirs[:] = [d for d in dirs if not d.startswith(".")]
                for name in files:
                    try:
                        stat = os.stat(name, dir_fd=fd, follow_symlinks=False)
                    except OSError:
                        continue
                    seen[os.path.normpath(os.path.join(root, directory, name))] = (stat.st_mtime_ns, stat.st_size)
                    if len(seen) >= MAX_WALKED:
                        return seen
        finally:
            top.close()
    return seen


def changes(before: Snapshot, after: Snapshot) -> tuple[list[ChangedFile], bool]:
    """Files created, modified or deleted between two snapshots (at most MAX_LISTED), and whether more changed."""
    found = [ChangedFile(path=p, change="created", size=after[p][1]) for p in after if p not in before]
    found += [
        ChangedFile(path=p, change="modified", size=size)
        for p, (_, size) in after.items()
        if before.get(p, (0, 0)) != after[p] and p in before
    ]
    found += [ChangedFile(path=p, change="deleted") for p in before if p not in after]
    found.sort(key=lambda f: f.path)
    return found[:MAX_LISTED], len(found) > MAX_LISTED


def _user() -> str:
    try:
        return getpass.getuser()
    except (KeyError, OSError):
        return str(os.getuid())


def _describe(name: str, places: list[Path]) -> str:
    """Where a file the task names is, looked up only where the code can write (the workdir, the writable
    paths) and without following links: what exists elsewhere on the host, and how big it is, is none of the
    model's business (asking about /etc/shadow must not tell it the file is there)."""
    named = Path(name).expanduser()
    candidates = [named] if named.is_absolute() else [place / name for place in places]
    for candidate in candidates:
        try:
            path = normalised(candidate)
        except InvalidInputError:
            continue
        if not any(path.is_relative_to(place) for place in places):
            return "outside the places code can write (not looked up)"
        found = _look_up(path)
        if found is not None:
            return f"{path} ({found})"
    return "not found"


def _look_up(path: Path) -> str | None:
    try:
        parent = open_directory(path.parent)
    except InvalidInputError:
        return None
    try:
        status = os.stat(path.name, dir_fd=parent.fd, follow_symlinks=False)
    except OSError:
        return None
    finally:
        parent.close()
    if stat.S_ISLNK(status.st_mode):
        return "a symbolic link, not followed"
    return "directory" if stat.S_ISDIR(status.st_mode) else f"{status.st_size} bytes"
