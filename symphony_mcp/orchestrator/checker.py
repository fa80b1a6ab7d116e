"""Task checkers for OSCAR's Verify state: something that says whether the task is really done."""

from __future__ import annotations

import asyncio
import contextlib
from dataclasses import dataclass
from typing import Protocol

_FEEDBACK_CHARS = 2000


@dataclass(frozen=True)
class CheckResult:
    success: bool
    feedback: str


class Checker(Protocol):
    async def check(self) -> CheckResult: ...


@dataclass(frozen=True)
class CommandChecker:
    """A shell command whose exit status 0 means success; its output is the feedback on failure."""

    command: str
    timeout: float = 120.0

    async def check(self) -> CheckResult:
        process = await asyncio.create_subprocess_shell(
            self.command, stdout=asyncio.subprocess.PIPE, stderr=asyncio.subprocess.STDOUT
        )
        try:
            output, _ = await asyncio.wait_for(process.communicate(), self.timeout)
        except TimeoutError:
            with contextlib.suppress(ProcessLookupError):
                process.kill()
            await process.wait()
            return CheckResult(False, f"the checker `{self.command}` did not finish within {self.timeout:g} s")
        text = output.decode(errors="replace").strip()[-_FEEDBACK_CHARS:]
        if process.returncode == 0:
            return CheckResult(True, text or "the checker passed")
        detail = f": {text}" if text else ""
        return CheckResult(False, f"the checker `{self.command}` exited with status {process.returncode}{detail}")
