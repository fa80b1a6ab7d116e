"""The `CodeExecutor` of a machine reached over SSH: blocks run there as the SSH user, never on this host.

Each block is one channel on the machine's connection running the agent's `run` mode (ssh_agent.py), which reads
the code from stdin (no command-line limit), runs it in its work directory in a session of its own, kills that
session at the timeout and exits with the block's status. The machine is the sandbox: nothing confines the block
beyond the SSH user's rights.
"""

from __future__ import annotations

import asyncio
from pathlib import Path, PurePosixPath

from symphony_mcp.code.output import truncation_notice
from symphony_mcp.code.types import CodeRun, Language
from symphony_mcp.config import CodeSettings
from symphony_mcp.desktop.remote.ssh_machine import SshMachine
from symphony_mcp.errors import InvalidInputError, PolicyError

SSH_WORKDIR = PurePosixPath("~/symphony-code")  # under the SSH user's home: the agent expands it
_KILLED = 128 + 9


class SshExecutor:
    """Runs run_code's blocks on the SSH machine; `default_workdir` is a path there."""

    def __init__(self, machine: SshMachine, settings: CodeSettings) -> None:
        self.machine = machine
        self.settings = settings
        self.default_workdir = Path(settings.workdir or SSH_WORKDIR)

    async def run(self, language: Language, code: str, timeout_s: float, workdir: Path | None = None) -> CodeRun:
        if language not in self.settings.languages:
            raise PolicyError(
                f"language {language!r} is not enabled (enabled: {', '.join(self.settings.languages) or 'none'}); "
                "the setting SYMPHONY_CODE__LANGUAGES lists the languages the code tools run"
            )
        if not 0 < timeout_s <= self.settings.max_timeout_seconds:
            raise InvalidInputError(
                f"timeout_s must be in (0, {self.settings.max_timeout_seconds:g}] seconds, got {timeout_s:g}"
            )
        directory = PurePosixPath(self.default_workdir) / PurePosixPath(str(workdir or "."))
        cap = self.settings.output_bytes
        result = await asyncio.to_thread(self.machine.agent_run, timeout_s, str(directory), language, code, cap)
        killed = result.status == _KILLED and result.seconds >= timeout_s
        return CodeRun(
            language=language,
            exit_code=-9 if killed else result.status,
            stdout=_text(result.stdout, result.stdout_dropped, cap),
            stderr=_text(result.stderr, result.stderr_dropped, cap),
            duration_seconds=round(result.seconds, 3),
            stdout_truncated=result.stdout_dropped > 0,
            stderr_truncated=result.stderr_dropped > 0,
            killed=killed,
            kill_reason="timeout" if killed else None,
            confinement="remote",
            workdir=str(directory),
        )


def _text(kept: bytes, dropped: int, cap: int) -> str:
    text = kept.decode("utf-8", errors="replace")
    return text + truncation_notice(dropped, cap) if dropped else text
