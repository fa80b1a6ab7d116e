"""Open an application or a file by name, the way a person would from a launcher.

The plan names every program that will run, resolved on PATH once, and the launch starts exactly those
paths: what the allow-list checked is what runs, whatever changes on PATH or in the MIME defaults later.
"""

from __future__ import annotations

import os
import shlex
import subprocess
from dataclasses import dataclass
from pathlib import Path

from symphony_mcp.desktop.accessibility import app_arguments, app_environment
from symphony_mcp.desktop.applications import (
    Application,
    default_for_file,
    find_by_name,
    installed_names,
    terminal_command,
)
from symphony_mcp.errors import InvalidInputError, clip
from symphony_mcp.policy.programs import program_path


@dataclass(frozen=True)
class LaunchPlan:
    """What will be started and how the target was understood."""

    argv: list[str]  # programs as absolute paths
    kind: str  # "file", "command" or "desktop-entry"
    programs: tuple[str, ...]  # every program that runs: for a terminal application the terminal, then it
    file: Path | None = None
    opened_with: str | None = None  # for a file: its application and why


def plan_launch(target: str) -> LaunchPlan:
    """Resolve a file path, a command on PATH (with arguments), or an installed app's name."""
    target = target.strip()
    if not target:
        raise InvalidInputError("give an application name (e.g. 'xterm', 'Text Editor') or a file path")
    path = Path(os.path.expanduser(target))
    if _exists(path):
        return _file_plan(path.resolve())
    try:
        words = shlex.split(target)
    except ValueError as exc:
        raise InvalidInputError(f"cannot parse {clip(target)} as a command line: {exc}") from exc
    if words and (program := program_path(words[0])) is not None:
        return LaunchPlan(argv=[program, *words[1:]], kind="command", programs=(program,))
    application = find_by_name(target)
    if application is not None:
        argv, programs = _application_command(application, None)
        return LaunchPlan(argv=argv, kind="desktop-entry", programs=programs)
    raise InvalidInputError(
        f"cannot open {clip(target)}: it is not an existing file, not a command on PATH, and no installed "
        f"application has that name. Installed applications: {', '.join(installed_names()[:40]) or 'none found'}"
    )


def _file_plan(file: Path) -> LaunchPlan:
    default = default_for_file(file)
    application = default.application
    argv, programs = _application_command(application, file)
    how = f"{application.entry_id} ({application.name or 'no name'}), the default application for {default.mime_type}"
    if application.terminal:
        how += f", a terminal application run in {Path(programs[0]).name}"
    return LaunchPlan(argv=argv, kind="file", programs=programs, file=file, opened_with=how)


def _application_command(application: Application, file: Path | None) -> tuple[list[str], tuple[str, ...]]:
    """The argv and the programs of an application's Exec line, inside a terminal if it is a terminal app."""
    command = application.command(file)
    program = _resolved(command[0], f"{application.entry_id} runs")
    if not application.terminal:
        return [program, *command[1:]], (program,)
    terminal = terminal_command()
    emulator = _resolved(terminal[0], f"{application.entry_id} is a terminal application; its terminal (TERMINAL)")
    return [emulator, *terminal[1:], program, *command[1:]], (emulator, program)


def _resolved(name: str, role: str) -> str:
    found = program_path(name)
    if found is None:
        raise InvalidInputError(f"{role} {clip(name)}, which is not installed (not found on PATH)")
    return found


def _exists(path: Path) -> bool:
    """Whether a file is there; a name the system refuses to look up (too long, a NUL byte) is not."""
    try:
        return path.exists()
    except (OSError, ValueError):
        return False


def launch(plan: LaunchPlan, env: dict[str, str]) -> int:
    """Start the program detached from the server (own session, no stdio), with its accessibility tree on; return
    its pid."""
    process = subprocess.Popen(
        app_arguments(plan.argv),
        env=app_environment(env),
        stdin=subprocess.DEVNULL,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
        start_new_session=True,
    )
    return process.pid
