"""Commands run as OSWorld's in-VM server runs them (`/execute`, `/setup/launch`), here inside the environment.

`/execute` semantics: a string without `shell` is split with shlex; list arguments starting with `~/` are
expanded; the command runs with a 120 s timeout and answers stdout, stderr and the return code; a command
that cannot start or times out is a server error (the getter then gets None). It runs inside the
environment's sandbox (sandbox.py) as the task user, from its home, on the environment's display, as
OSWorld's server runs everything as `user` in the VM. The tasks' pyautogui one-liners (`python -c "import
pyautogui; ..."`, a click or a hotkey) run with this interpreter, which has pyautogui (the task user's
`python` may not exist), as the task user too.
"""

from __future__ import annotations

import logging
import shlex
import subprocess
import sys
from dataclasses import dataclass
from typing import Any

from symphony_mcp.bench.osworld.account import TaskUser
from symphony_mcp.bench.osworld.sandbox import Sandbox

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


def argv(user: TaskUser, command: Command, shell: bool) -> list[str]:
    """The command as the server would run it: split when a string without shell, `~/` expanded; a shell
    command as `sh -c` (what Popen's shell=True runs)."""
    if isinstance(command, str):
        if shell:
            return ["/bin/sh", "-c", command]
        return [user.expand(a) if a.startswith("~/") else a for a in shlex.split(command)]
    if is_pyautogui(command):
        return [sys.executable, "-c", command[2]]
    return [user.expand(a) if a.startswith("~/") else a for a in command]


def execute(sandbox: Sandbox, command: Command, shell: bool = False, timeout: float = EXECUTE_TIMEOUT) -> CommandResult:
    """Run to completion, as `/execute` does."""
    inside = sandbox.command(argv(sandbox.user, command, shell))
    return _run(inside, timeout, {"env": sandbox.env()})


def launch(sandbox: Sandbox, command: Command, shell: bool = False) -> subprocess.Popen[bytes] | None:
    """Start without waiting, as `/setup/launch` does; None (and a log line) when it cannot start. It ends with
    the environment (Sandbox.stop), wherever it put itself in the background."""
    if not shell and isinstance(command, str):
        command = command.split()  # OSWorld's client splits a launch string on spaces
    try:
        process = subprocess.Popen(
            sandbox.command(argv(sandbox.user, command, shell)),
            env=sandbox.env(),
            stdin=subprocess.DEVNULL,
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
            start_new_session=True,
        )
    except OSError as exc:
        log.warning("launch %r failed: %s", command, exc)
        return None
    sandbox.children.append(process)
    return process


def _run(command: list[str], timeout: float, options: dict[str, Any]) -> CommandResult:
    try:
        done = subprocess.run(
            command,
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
