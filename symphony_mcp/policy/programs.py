"""The open_app allow-list: which programs may be started and which files opened, and with what.

Matching is on what would actually run, after the launcher has understood the target and before anything
starts (the launcher then starts exactly the checked paths):
- every program that would run must be allowed: a command's or an installed application's program, and for
  a file the program of its default application (and the terminal emulator, for a terminal application);
  a program is looked up on PATH like the launcher does and matches an entry that is the same name looked
  up on PATH, or an absolute path to the same file. Directories are compared with symlinks resolved, the
  file name is not: a multi-call binary (busybox) behaves by the name it is started as, so `ls` allowed
  never admits `busybox` or `sh` even when they are one file on disk;
- a file must also lie, with every symlink resolved, under a directory entry.
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

    def check(self, programs: Sequence[str], file: Path | None = None, opened_with: str | None = None) -> None:
        """Raise PolicyError unless every program of a launch may run (and its file, if any, may be opened)."""
        if self.entries is None:
            return
        if file is not None and not any(file.resolve().is_relative_to(d) for d in self._directories()):
            raise PolicyError(
                f"open_app may not open {clip(str(file.resolve()))}: files are opened only under the directories "
                f"{SETTING} lists ({self._described()})"
            )
        allowed = self._programs()
        refused = [p for p in programs if program_path(p) not in allowed]
        if not refused:
            return
        names = ", ".join(clip(program_path(p) or p) for p in refused)
        if file is None:
            raise PolicyError(f"open_app may not start {names}: it is not allowed by {SETTING} ({self._described()})")
        raise PolicyError(
            f"open_app may not open {clip(str(file))}: it would open with {opened_with}, and {names} "
            f"{'is' if len(refused) == 1 else 'are'} not allowed by {SETTING} ({self._described()}). Add "
            f"{'it' if len(refused) == 1 else 'them'} there, or make an allowed program the default for this type "
            "(xdg-mime default <app>.desktop <type>)"
        )

    def _programs(self) -> set[str]:
        found = (program_path(e) for e in self.entries or () if not _is_directory(e))
        return {p for p in found if p is not None}

    def _directories(self) -> list[Path]:
        return [Path(os.path.expanduser(e)).resolve() for e in self.entries or () if _is_directory(e)]

    def _described(self) -> str:
        return "allowed: " + ", ".join(clip(e, 80) for e in self.entries) if self.entries else "it allows nothing"


def _is_directory(entry: str) -> bool:
    return ("/" in entry or entry.startswith("~")) and Path(os.path.expanduser(entry)).is_dir()


def program_path(name: str) -> str | None:
    """Where `name` is found on PATH (or the path itself), its directories resolved and its file name kept."""
    try:
        found = shutil.which(os.path.expanduser(name))
    except (OSError, ValueError):  # a name too long or with a NUL byte is no program
        return None
    if found is None:
        return None
    path = Path(os.path.abspath(found))
    return str(path.parent.resolve() / path.name)
