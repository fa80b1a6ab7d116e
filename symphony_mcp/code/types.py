"""What every code executor returns and the interface it implements, so a remote backend (a benchmark VM) can
stand in for the local one without its callers changing."""

from __future__ import annotations

from pathlib import Path
from typing import Literal, Protocol

from pydantic import BaseModel, Field

from symphony_mcp.config import CODE_LANGUAGES, CodeLanguage

Language = CodeLanguage
LANGUAGES = CODE_LANGUAGES
KillReason = Literal["timeout", "memory", "cpu", "processes", "file_size", "disk"]
Confinement = Literal["bwrap", "unshare", "unconfined", "remote"]


class CodeRun(BaseModel):
    """The outcome of one code block: what it printed, how it ended and under which confinement it ran."""

    language: Language
    exit_code: int | None = Field(description="the block's exit status; negative: killed by that signal")
    stdout: str
    stderr: str
    duration_seconds: float = Field(description="wall time of the run, start-up and confinement included")
    stdout_truncated: bool = Field(False, description="stdout was longer than the output cap; its tail was dropped")
    stderr_truncated: bool = Field(False, description="stderr was longer than the output cap; its tail was dropped")
    killed: bool = Field(False, description="the run was stopped by a limit rather than ending by itself")
    kill_reason: KillReason | None = Field(None, description="which limit stopped it, when killed")
    confinement: Confinement = Field(description="how the block was confined; 'unconfined' = with the user's rights")
    workdir: str = Field(description="the block's working directory (kept after the run)")

    @property
    def ok(self) -> bool:
        return self.exit_code == 0 and not self.killed


class CodeExecutor(Protocol):
    """Runs one block in `workdir` (None: a fresh work directory the executor picks) within `timeout_s`."""

    async def run(self, language: Language, code: str, timeout_s: float, workdir: Path | None = None) -> CodeRun: ...
