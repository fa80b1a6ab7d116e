"""Installed applications as the freedesktop.org specifications describe them, read the way xdg-open reads them.

A file's application is decided here, before anything starts, so what the policy checks is what runs:
the file's MIME type and its default application come from `xdg-mime` (the user's mimeapps.list, the
system's defaults, the desktop's own rules), the application's desktop entry from the XDG data directories,
and its command line from the entry's Exec key, run inside a terminal emulator when the entry says
Terminal=true (as xdg-open does: $TERMINAL, else x-terminal-emulator).
"""

from __future__ import annotations

import configparser
import os
import shlex
import shutil
import subprocess
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

from symphony_mcp.errors import InvalidInputError, clip

_XDG_MIME_TIMEOUT_SECONDS = 10
_VALUE_ESCAPES = {"s": " ", "n": "\n", "t": "\t", "r": "\r", "\\": "\\"}
_DEPRECATED_FIELD_CODES = ("%d", "%D", "%n", "%N", "%v", "%m")
_FILE_FIELD_CODES = ("%f", "%F", "%u", "%U")


@dataclass(frozen=True)
class Application:
    """One desktop entry (Type=Application) with the keys a launcher needs."""

    entry_id: str  # e.g. "vim.desktop", "org.gnome.TextEditor.desktop"
    path: Path
    name: str
    exec_words: tuple[str, ...]
    terminal: bool
    icon: str
    listed: bool  # NoDisplay is not set: the entry is meant to be found by its name

    def command(self, file: Path | None = None) -> list[str]:
        """The Exec line with its field codes expanded (Desktop Entry spec, "The Exec key"); a file the line
        has no place for goes last, as xdg-open does."""
        argv: list[str] = []
        placed = False
        for word in self.exec_words:
            if word in _FILE_FIELD_CODES:
                placed = True
                argv.extend([str(file)] if file is not None else [])
            elif word == "%i":
                argv.extend(["--icon", self.icon] if self.icon else [])
            elif word == "%c":
                argv.append(self.name)
            elif word == "%k":
                argv.append(str(self.path))
            elif word not in _DEPRECATED_FIELD_CODES:
                argv.append(word.replace("%%", "%"))
        if file is not None and not placed:
            argv.append(str(file))
        return argv


def terminal_command() -> list[str]:
    """How xdg-open runs a terminal application: `$TERMINAL -e`, a $TERMINAL with arguments as given, else
    `x-terminal-emulator -e`."""
    configured = os.environ.get("TERMINAL", "")
    if not configured:
        return ["x-terminal-emulator", "-e"]
    words = shlex.split(configured)
    return words if len(words) > 1 else [*words, "-e"]


def data_dirs() -> list[Path]:
    """XDG_DATA_HOME then XDG_DATA_DIRS (with the spec's defaults), read at call time."""
    home = os.environ.get("XDG_DATA_HOME") or str(Path.home() / ".local/share")
    system = os.environ.get("XDG_DATA_DIRS") or "/usr/local/share:/usr/share"
    return [Path(d) for d in [home, *system.split(os.pathsep)] if d]


def applications() -> Iterator[Application]:
    """Every readable application entry, the user's first; an id found earlier hides the same id later."""
    seen: set[str] = set()
    for directory in (d / "applications" for d in data_dirs()):
        if not directory.is_dir():
            continue
        for file in sorted(directory.rglob("*.desktop")):
            entry_id = str(file.relative_to(directory)).replace(os.sep, "-")
            if entry_id in seen:
                continue
            seen.add(entry_id)
            application = _read_entry(entry_id, file)
            if application is not None:
                yield application


def find_by_id(entry_id: str) -> Application | None:
    return next((a for a in applications() if a.entry_id == entry_id), None)


def find_by_name(name: str) -> Application | None:
    """A listed application whose Name or file name is `name` (case-insensitive) and whose program is installed."""
    wanted = name.casefold()
    for application in applications():
        names = {application.name.casefold(), application.path.stem.casefold()}
        if application.listed and wanted in names and _installed(application):
            return application
    return None


def installed_names() -> list[str]:
    return sorted({a.name for a in applications() if a.listed and a.name and _installed(a)})


@dataclass(frozen=True)
class FileDefault:
    """The application xdg-open would open a file with, and why."""

    mime_type: str
    application: Application


def default_for_file(file: Path) -> FileDefault:
    """Ask xdg-mime for the file's MIME type and its default application; raise with what to do if there is none."""
    mime_type = _xdg_mime("filetype", str(file)).split(";")[0].strip()
    if not mime_type:
        raise InvalidInputError(f"cannot tell what kind of file {clip(str(file))} is (xdg-mime query filetype)")
    entry_id = _xdg_mime("default", mime_type).strip()
    application = find_by_id(entry_id) if entry_id else None
    if application is None:
        raise InvalidInputError(
            f"no application is set to open {mime_type} files such as {clip(str(file))}: set one with "
            f"`xdg-mime default <app>.desktop {mime_type}`, or open it with a command line ('<program> <file>')"
        )
    return FileDefault(mime_type=mime_type, application=application)


def _xdg_mime(query: str, argument: str) -> str:
    if shutil.which("xdg-mime") is None:
        raise InvalidInputError("opening files needs xdg-mime (Debian package xdg-utils)")
    try:
        done = subprocess.run(
            ["xdg-mime", "query", query, argument],
            capture_output=True,
            text=True,
            timeout=_XDG_MIME_TIMEOUT_SECONDS,
            stdin=subprocess.DEVNULL,
        )
    except subprocess.TimeoutExpired as exc:
        raise InvalidInputError(f"xdg-mime query {query} did not answer within {exc.timeout:g} s") from None
    return done.stdout if done.returncode == 0 else ""


def _read_entry(entry_id: str, file: Path) -> Application | None:
    parser = configparser.RawConfigParser(interpolation=None, strict=False)
    try:
        parser.read(file, encoding="utf-8")
        section = parser["Desktop Entry"]
        words = tuple(shlex.split(_unescape(section.get("Exec", ""))))
    except (configparser.Error, KeyError, UnicodeDecodeError, ValueError):
        return None
    if section.get("Type", "Application") != "Application" or _true(section.get("Hidden")) or not words:
        return None
    return Application(
        entry_id=entry_id,
        path=file,
        name=section.get("Name", ""),
        exec_words=words,
        terminal=_true(section.get("Terminal")),
        icon=section.get("Icon", ""),
        listed=not _true(section.get("NoDisplay")),
    )


def _unescape(value: str) -> str:
    """A desktop entry's string escapes (\\s, \\n, \\t, \\r, \\\\), undone before the Exec quoting rules apply."""
    out: list[str] = []
    chars = iter(value)
    for char in chars:
        if char == "\\":
            following = next(chars, "")
            out.append(_VALUE_ESCAPES.get(following, "\\" + following))
        else:
            out.append(char)
    return "".join(out)


def _true(value: str | None) -> bool:
    return (value or "").strip().lower() == "true"


def _installed(application: Application) -> bool:
    return shutil.which(application.exec_words[0]) is not None
