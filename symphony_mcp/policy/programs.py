"""The open_app allow-list: which programs may be started and which files opened with their default app.

Matching is on what would actually run, after the launcher has understood the target:
- a command or an installed application's entry runs its program (the first word), looked up on PATH
  like the launcher does; it matches an entry that is the same name looked up on PATH, or an absolute
  path to the same file. Directories are compared with symlinks resolved, the file name is not: a
  multi-call binary (busybox) behaves by the name it is started as, so `ls` allowed never admits
  `busybox` or `sh` even when they are one file on disk;
- a file is opened by its default application, which the server cannot foresee: it matches only when
  the file, with every symlink resolved, lies under a directory entry.
Arguments are never inspected: an allowed terminal or interpreter (`xterm -e ...`, `python3 -c ...`)
runs anything, so allow only programs whose arguments you would hand to the client.
"""

from __future__ import annotations

import os
import shutil
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

from symphony_mcp.errors import PolicyError, clip

SETTING = "policy.open_app_allow (SYMPHONY_POLICY__OPEN_APP_ALLOW, --open-app-allow)"


@dataclass(frozen=True)
class ProgramAllowList:
    """`entries` None allows everything (the default); an empty list allows nothing."""

    entries: tuple[str, ...] | None = None

    def check(self, kind: str, argv: Sequence[str]) -> None:
        """Raise PolicyError unless the launch plan (`kind` 'file': argv ends with the file) is allowed."""
        if self.entries is None:
            return
        if kind == "file":
            file = Path(argv[-1]).resolve()
            if not any(file.is_relative_to(d) for d in self._directories()):
                raise PolicyError(
                    f"open_app may not open {clip(str(file))}: files are opened only under the directories "
                    f"{SETTING} lists ({self._described()})"
                )
            return
        program = _program_path(argv[0])
        if program is None or program not in self._programs():
            raise PolicyError(
                f"open_app may not start {clip(program or argv[0])}: it is not allowed by {SETTING} "
                f"({self._described()})"
            )

    def _programs(self) -> set[str]:
        found = (_program_path(e) for e in self.entries or () if not _is_directory(e))
        return {p for p in found if p is not None}

    def _directories(self) -> list[Path]:
        return [Path(os.path.expanduser(e)).resolve() for e in self.entries or () if _is_directory(e)]

    def _described(self) -> str:
        return "allowed: " + ", ".join(clip(e, 80) for e in self.entries) if self.entries else "it allows nothing"


def _is_directory(entry: str) -> bool:
    return ("/" in entry or entry.startswith("~")) and Path(os.path.expanduser(entry)).is_dir()


def _program_path(name: str) -> str | None:
    """Where `name` is found on PATH (or the path itself), its directories resolved and its file name kept."""
    try:
        found = shutil.which(os.path.expanduser(name))
    except (OSError, ValueError):  # a name too long or with a NUL byte is no program
        return None
    if found is None:
        return None
    path = Path(os.path.abspath(found))
    return str(path.parent.resolve() / path.name)

