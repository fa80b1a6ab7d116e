"""The `CodeExecutor` of a remote machine: blocks run on the OSWorld VM through its controller, never on this host.

Each block is one `/execute` of `timeout -s KILL N bash -c ...` (python3 or bash), in its work directory on the
machine: `/execute` is sent once and answers with the exit status, where `/run_bash_script` runs a script and then
answers 500 (so a client that retries runs it again) and `/run_python` caps a run at 30 s. The machine is the
sandbox (a benchmark VM): nothing confines the block beyond the user the controller runs as.
"""

from __future__ import annotations

import asyncio
import time
from pathlib import Path, PurePosixPath

from symphony_mcp.code.output import truncation_notice
from symphony_mcp.code.types import CodeRun, Language
from symphony_mcp.config import CodeSettings
from symphony_mcp.desktop.remote.osworld_controller import COMMAND_SECONDS, CommandResult, OsworldController
from symphony_mcp.errors import InvalidInputError, PolicyError

REMOTE_WORKDIR = PurePosixPath("/tmp/symphony-code")
MAX_REMOTE_SECONDS = COMMAND_SECONDS - 5  # the controller kills a command at 120 s, answering 500 without output
# timeout(1) sends SIGKILL to its whole process group, itself included: the status is -9 (or 137 through a shell)
_KILLED = (-9, 128 + 9)
_IN_WORKDIR = 'mkdir -p -- "$1" && cd -- "$1" && shift && exec "$@"'
_INTERPRETERS: dict[Language, list[str]] = {"python": ["python3", "-c"], "bash": ["bash", "-c"]}


class RemoteExecutor:
    """Runs run_code's blocks where the remote desktop is; `default_workdir` is a path on that machine."""

    def __init__(self, controller: OsworldController, settings: CodeSettings) -> None:
        self.controller = controller
        self.settings = settings
        self.default_workdir = Path(settings.workdir or REMOTE_WORKDIR)

    async def run(self, language: Language, code: str, timeout_s: float, workdir: Path | None = None) -> CodeRun:
        check_block(self.settings, language, timeout_s, "controller")
        if "\0" in code:
            raise InvalidInputError("code holds a NUL character, which a command line cannot carry")
        directory = PurePosixPath(self.default_workdir) / PurePosixPath(str(workdir or "."))
        argv = [
            "timeout",
            "-s",
            "KILL",
            f"{timeout_s:g}",
            "bash",
            "-c",
            _IN_WORKDIR,
            "run",
            str(directory),
            *_INTERPRETERS[language],
            code,
        ]
        started = time.monotonic()
        result = await asyncio.to_thread(self.controller.execute, argv, timeout_s + 5)
        return remote_run(self.settings, language, result, started, timeout_s, _KILLED, str(directory))


def check_block(settings: CodeSettings, language: Language, timeout_s: float, stopper: str) -> None:
    """A block a remote machine may run: its language enabled, its timeout within what the machine's `stopper`
    (the server answering a command) allows."""
    if language not in settings.languages:
        raise PolicyError(
            f"language {language!r} is not enabled (enabled: {', '.join(settings.languages) or 'none'}); "
            "the setting SYMPHONY_CODE__LANGUAGES lists the languages the code tools run"
        )
    bound = min(settings.max_timeout_seconds, MAX_REMOTE_SECONDS)
    if not 0 < timeout_s <= bound:
        raise InvalidInputError(
            f"timeout_s must be in (0, {bound:g}] seconds on a remote machine (its {stopper} stops a command "
            f"after {COMMAND_SECONDS} s), got {timeout_s:g}"
        )


def remote_run(
    settings: CodeSettings,
    language: Language,
    result: CommandResult,
    started: float,
    timeout_s: float,
    killed_statuses: tuple[int, ...],
    workdir: str,
) -> CodeRun:
    """The run's result from the machine's answer: killed when its status says so and the timeout had passed."""
    killed = result.returncode in killed_statuses and time.monotonic() - started >= timeout_s
    stdout, stdout_cut = capped(result.output, settings.output_bytes)
    stderr, stderr_cut = capped(result.error, settings.output_bytes)
    return CodeRun(
        language=language,
        exit_code=-9 if killed else result.returncode,
        stdout=stdout,
        stderr=stderr,
        duration_seconds=round(time.monotonic() - started, 3),
        stdout_truncated=stdout_cut,
        stderr_truncated=stderr_cut,
        killed=killed,
        kill_reason="timeout" if killed else None,
        confinement="remote",
        workdir=workdir,
    )


def capped(text: str, cap: int) -> tuple[str, bool]:
    """The text within `cap` bytes (UTF-8), with the notice the local executor gives, and whether it was cut."""
    data = text.encode("utf-8")
    if len(data) <= cap:
        return text, False
    return data[:cap].decode("utf-8", errors="ignore") + truncation_notice(len(data) - cap, cap), True
