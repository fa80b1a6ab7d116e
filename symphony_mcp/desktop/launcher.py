"""Open an application or a file by name, the way a person would from a launcher."""

from __future__ import annotations

import configparser
import os
import shlex
import shutil
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path

from symphony_mcp.errors import InvalidInputError, clip

_DESKTOP_DIRS = (
    Path.home() / ".local/share/applications",
    Path("/usr/local/share/applications"),
    Path("/usr/share/applications"),
)
_FIELD_CODES = ("%f", "%F", "%u", "%U", "%i", "%c", "%k")


@dataclass(frozen=True)
class LaunchPlan:
    """What will be started: the argv and how the target was understood."""

    argv: list[str]
    kind: str  # "file", "command" or "desktop-entry"


def plan_launch(target: str) -> LaunchPlan:
    """Resolve a file path, a command on PATH (with arguments), or an installed app's name."""
    target = target.strip()
    if not target:
        raise InvalidInputError("give an application name (e.g. 'xterm', 'Text Editor') or a file path")
    path = Path(os.path.expanduser(target))
    if _exists(path):
        return LaunchPlan(argv=[*_file_opener(), str(path.resolve())], kind="file")
    try:
        words = shlex.split(target)
    except ValueError as exc:
        raise InvalidInputError(f"cannot parse {clip(target)} as a command line: {exc}") from exc
    if words and shutil.which(words[0]):
        return LaunchPlan(argv=words, kind="command")
    entry = _find_desktop_entry(target)
    if entry is not None:
        return LaunchPlan(argv=entry, kind="desktop-entry")
    raise InvalidInputError(
        f"cannot open {clip(target)}: it is not an existing file, not a command on PATH, and no installed "
        f"application has that name. Installed applications: {', '.join(installed_app_names()[:40]) or 'none found'}"
    )


def _exists(path: Path) -> bool:
    """Whether a file is there; a name the system refuses to look up (too long, a NUL byte) is not."""
    try:
        return path.exists()
    except (OSError, ValueError):
        return False


def launch(plan: LaunchPlan, env: dict[str, str]) -> int:
    """Start the program detached from the server (own session, no stdio), return its pid."""
    process = subprocess.Popen(
        plan.argv,
        env=env,
        stdin=subprocess.DEVNULL,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
        start_new_session=True,
    )
    return process.pid


def _file_opener() -> list[str]:
    if sys.platform == "darwin":
        return ["open"]
    if sys.platform == "win32":
        return ["cmd", "/c", "start", ""]
    if shutil.which("xdg-open"):
        return ["xdg-open"]
    raise InvalidInputError("opening files needs xdg-open (Debian package xdg-utils)")


def _desktop_entries() -> list[tuple[str, list[str]]]:
    entries: list[tuple[str, list[str]]] = []
    for directory in _DESKTOP_DIRS:
        if not directory.is_dir():
            continue
        for file in sorted(directory.glob("*.desktop")):
            parser = configparser.RawConfigParser(interpolation=None, strict=False)
            try:
                parser.read(file, encoding="utf-8")
                section = parser["Desktop Entry"]
            except (configparser.Error, KeyError, UnicodeDecodeError):
                continue
            if section.get("NoDisplay", "false").lower() == "true" or "Exec" not in section:
                continue
            argv = [w for w in shlex.split(section["Exec"]) if w not in _FIELD_CODES]
            names = {section.get("Name", ""), file.stem}
            entries.extend((name, argv) for name in names if name)
    return entries


def _find_desktop_entry(name: str) -> list[str] | None:
    wanted = name.casefold()
    for entry_name, argv in _desktop_entries():
        if entry_name.casefold() == wanted and argv and shutil.which(argv[0]):
            return argv
    return None


def installed_app_names() -> list[str]:
    return sorted({name for name, argv in _desktop_entries() if argv and shutil.which(argv[0])})
