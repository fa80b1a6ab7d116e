"""MCP tools that run code: `run_code` runs one block, confined; `code_agent` hands a task to the Coder loop
(symphony_mcp/code), whose transcripts are resources."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

from mcp.types import ToolAnnotations
from pydantic import Field

from symphony_mcp.code.result_schemas import CoderResult
from symphony_mcp.code.types import CodeRun, Language
from symphony_mcp.limits import MAX_CODE, MAX_CODE_SECONDS, MAX_INSTRUCTION, MAX_PATH
from symphony_mcp.tools.cores import Cores
from symphony_mcp.tools.definition import define_resource, define_tool
from symphony_mcp.tools.progress import report_step

# The code can change or delete whatever its writable paths hold and, with network allowed, reach anything.
RUNS_CODE = ToolAnnotations(readOnlyHint=False, destructiveHint=True, idempotentHint=False, openWorldHint=True)
RUN_CODE_DESCRIPTION = """Run one python or bash block on the desktop's machine, confined: read-only system, private
/tmp, only the work directory (and configured writable paths) writable, no network or display unless the settings
allow them, resource limits. Returns exit code, stdout, stderr (capped), duration, and whether a limit killed it
(timeout, memory, cpu, processes, file_size, disk). Files persist in the work directory between calls."""
MAX_CODER_BUDGET = 50


@define_tool(
    RUNS_CODE,
    description=RUN_CODE_DESCRIPTION,
    bounds=lambda cores: {"timeout_s": {"maximum": cores.settings.code.max_timeout_seconds}},
)
async def run_code(
    cores: Cores,
    language: Annotated[Language, Field(description="the interpreter: python or bash")],
    code: Annotated[str, Field(min_length=1, max_length=MAX_CODE, description="the program text")],
    timeout_s: Annotated[
        float,
        Field(gt=0, le=MAX_CODE_SECONDS, allow_inf_nan=False, description="wall time after which it is killed"),
    ] = 30,
    workdir: Annotated[
        str | None,
        Field(
            min_length=1,
            max_length=MAX_PATH,
            description="directory to run in, inside the default work directory (relative paths are) or a "
            "writable path; default: the work directory",
        ),
    ] = None,
) -> CodeRun:
    return await cores.executor.run(language, code, timeout_s, None if workdir is None else Path(workdir))


@define_tool(RUNS_CODE)
async def code_agent(
    cores: Cores,
    task: Annotated[
        str,
        Field(min_length=1, max_length=MAX_INSTRUCTION, description="what to do with code, e.g. a file edit"),
    ],
    budget: Annotated[
        int, Field(ge=2, le=MAX_CODER_BUDGET, description="turns the coder may use (the last one only concludes)")
    ] = 20,
) -> CoderResult:
    """Hand a task that code does better than the GUI (fill a spreadsheet column, edit a config, rename
    files) to the Coder: its model writes and runs one confined python or bash block per turn until DONE,
    FAIL or INFEASIBLE. Returns a folded result (reason, steps, <=150-word summary, changed files) and
    the transcript's resource."""

    return await cores.coder.run(task, budget, report_step)


@define_resource(
    "trajectory://{task_id}/coder/{run}",
    name="coder-transcript",
    description="A code_agent run's full transcript (JSON): every answer, block, output and the folded result",
    mime_type="application/json",
)
async def coder_transcript(cores: Cores, task_id: str, run: str) -> str:
    return cores.coder.transcript(task_id, run).read_text(encoding="utf-8")


DEFINITIONS = (
    run_code,
    code_agent,
    coder_transcript,
)
