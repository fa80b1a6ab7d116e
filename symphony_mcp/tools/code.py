"""MCP tools that run code: `run_code` runs one block, confined (symphony_mcp/code)."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

from mcp.server.mcpserver import MCPServer
from mcp.types import ToolAnnotations
from pydantic import Field

from symphony_mcp.code.local import LocalExecutor
from symphony_mcp.code.types import CodeRun, Language
from symphony_mcp.limits import MAX_CODE, MAX_CODE_SECONDS, MAX_PATH
from symphony_mcp.tools.arguments import state_in_schema
from symphony_mcp.tools.common import caller_errors

# The code can change or delete whatever its writable paths hold and, with network allowed, reach anything.
RUNS_CODE = ToolAnnotations(readOnlyHint=False, destructiveHint=True, idempotentHint=False, openWorldHint=True)
RUN_CODE_DESCRIPTION = """Run one python or bash block on the desktop's machine, confined: read-only system, private
/tmp, only the work directory (and configured writable paths) writable, no network or display unless the settings
allow them, resource limits. Returns exit code, stdout, stderr (capped), duration, and whether a limit killed it
(timeout, memory, cpu, processes, file_size). Files persist in the work directory between calls."""


def register(server: MCPServer, executor: LocalExecutor) -> None:
    @server.tool(annotations=RUNS_CODE, description=RUN_CODE_DESCRIPTION)
    @caller_errors
    async def run_code(
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
        return await executor.run(language, code, timeout_s, None if workdir is None else Path(workdir))

    state_in_schema(server, "run_code", "timeout_s", maximum=executor.settings.max_timeout_seconds)
