"""Commands run as OSWorld's in-VM server runs them (`/execute`, `/setup/launch`), here on the local desktop.

`/execute` semantics: a string without `shell` is split with shlex; list arguments starting with `~/` are
expanded; the command runs with a 120 s timeout and answers stdout, stderr and the return code; a command
that cannot start or times out is a server error (the getter then gets None). It runs as the task user on
the environment's display. The tasks' pyautogui one-liners (`python -c "import pyautogui; ..."`, a click or
a hotkey) run with this interpreter, which has pyautogui, as the invoking user: they touch only the
display, and the task user's `python` may not exist.
"""

from __future__ import annotations

import logging
import os
import shlex
import subprocess
import sys
from dataclasses import dataclass
from typing import Any

from symphony_mcp.bench.osworld.account import TaskUser

log = logging.getLogger(__name__)
EXECUTE_TIMEOUT = 120.0  # OSWorld's server default
Command = str | list[str]


@dataclass(frozen=True)
class CommandResult:
    ok: bool  # False where OSWorld's server answers an error (could not start, timed out)
    output: str = ""
    error: str = ""
    returncode: int | None = None


def is_pyautogui(command: Command) -> bool:
    """A setup step that drives the GUI through pyautogui in a `python -c` one-liner."""
    return (
        isinstance(command, list)
        and len(command) == 3
        and command[0] in ("python", "python3")
        and command[1] == "-c"
        and "pyautogui" in command[2]
    )


def argv(user: TaskUser, command: Command, shell: bool) -> Command:
    """The command as the server would run it: split when a string without shell, `~/` expanded."""
    if isinstance(command, str):
        return command if shell else [user.expand(a) if a.startswith("~/") else a for a in shlex.split(command)]
    return [user.expand(a) if a.startswith("~/") else a for a in command]


def execute(
    user: TaskUser, display: str, command: Command, shell: bool = False, timeout: float = EXECUTE_TIMEOUT
) -> CommandResult:
    """Run to completion, as `/execute` does."""
    if is_pyautogui(command):
        assert isinstance(command, list)
        return _run([sys.executable, "-c", command[2]], False, timeout, {"env": _gui_env(display)})
    options = {"env": user.env(display), "cwd": str(user.home), **user.process_options()}
    return _run(argv(user, command, shell), shell, timeout, options)


def launch(user: TaskUser, display: str, command: Command, shell: bool = False) -> subprocess.Popen[bytes] | None:
    """Start without waiting, as `/setup/launch` does; None (and a log line) when it cannot start."""
    if not shell and isinstance(command, str):
        command = command.split()  # OSWorld's client splits a launch string on spaces
    try:
        return subprocess.Popen(
            argv(user, command, shell),
            shell=shell,
            env=user.env(display),
            cwd=str(user.home),
            stdin=subprocess.DEVNULL,
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
            start_new_session=True,
            **user.process_options(),
        )
    except OSError as exc:
        log.warning("launch %r failed: %s", command, exc)
        return None


def _run(command: Command, shell: bool, timeout: float, options: dict[str, Any]) -> CommandResult:
    try:
        done = subprocess.run(
            command,
            shell=shell,
            stdin=subprocess.DEVNULL,
            capture_output=True,
            text=True,
            errors="replace",
            timeout=timeout,
            **options,
        )
    except (OSError, subprocess.SubprocessError) as exc:
        log.warning("command %r failed to run: %s", command, exc)
        return CommandResult(False, error=str(exc))
    return CommandResult(True, done.stdout, done.stderr, done.returncode)


def _gui_env(display: str) -> dict[str, str]:
    return {k: v for k, v in os.environ.items() if k in ("PATH", "HOME", "LANG")} | {"DISPLAY": display}
