"""What the Coder loop returns to its caller (folded) and keeps on disk (the full transcript).

The orchestrator reads `CoderResult` too, so it lives here, light, with no MCP in it.
"""

from __future__ import annotations

from typing import Literal

from pydantic import BaseModel, Field

from symphony_mcp.code.types import CodeRun

CompletionReason = Literal["DONE", "FAIL", "INFEASIBLE", "BUDGET_EXHAUSTED"]
FileChange = Literal["created", "modified", "deleted"]


class ChangedFile(BaseModel):
    path: str
    change: FileChange
    size: int | None = Field(None, description="bytes after the run (None when deleted)")


class CoderTurn(BaseModel):
    """One turn of the loop: the model's answer, what was refused, and the run of its block."""

    step: int
    answer: str = Field(description="the answer used (or the last one refused)")
    rejected: list[str] = Field(default_factory=list, description="why earlier answers of this turn were refused")
    thought: str | None = None
    language: str | None = None
    code: str | None = None
    verdict: str | None = None
    run: CodeRun | None = None
    model_ms: float = 0.0
    overhead_ms: float = Field(0.0, description="time outside the model call and the block's run")


class CoderResult(BaseModel):
    """The Coder's work folded for the caller: what it was asked, how it ended, what it changed."""

    task: str
    steps_used: int = Field(description="turns used, the closing verdict included")
    budget: int
    completion_reason: CompletionReason
    summary: str = Field(description="at most 150 words on what was done and found, by a separate model call")
    files: list[ChangedFile] = Field(description="files created, changed or deleted in the writable paths")
    files_truncated: bool = Field(False, description="more files changed than are listed")
    transcript_uri: str = Field(description="resource with the full transcript (every answer, block and output)")
    transcript_file: str
    task_step: int | None = Field(None, description="the step of the session's running task this run became")

    def folded(self) -> str:
        """One paragraph for a planner's next prompt."""
        files = ", ".join(f"{f.path} ({f.change})" for f in self.files[:10]) or "none"
        return (
            f"Coder on {self.task!r}: {self.completion_reason} after {self.steps_used} of {self.budget} steps. "
            f"{self.summary} Files changed: {files}."
        )


class CoderTranscript(BaseModel):
    run_id: str
    task: str
    budget: int
    started_at: float
    ended_at: float | None = None
    workdir: str
    turns: list[CoderTurn] = Field(default_factory=list)
    result: CoderResult | None = None
