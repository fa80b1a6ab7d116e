"""The user's policy applied to every tool the server registers, present and future.

`PolicyServer` is the MCP server the tool modules register on. Registration goes through its
`add_tool`, so no tool module has policy code of its own: a tool that is off is missing from
tools/list, and calling it anyway gives a tool error that names the setting.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from mcp.server.mcpserver import Context, MCPServer
from mcp.server.mcpserver.exceptions import ToolError
from mcp.types import CallToolResult, Icon, InputRequiredResult, ToolAnnotations
from mcp.types import Tool as MCPTool

from symphony_mcp.config import PolicySettings
from symphony_mcp.policy.tools import ToolFacts, ToolPolicy


class PolicyServer(MCPServer):
    def __init__(self, policy: PolicySettings, *args: Any, **kwargs: Any) -> None:
        self.policy = ToolPolicy(policy)
        super().__init__(*args, **kwargs)

    def add_tool(
        self,
        fn: Callable[..., Any],
        name: str | None = None,
        title: str | None = None,
        description: str | None = None,
        annotations: ToolAnnotations | None = None,
        icons: list[Icon] | None = None,
        meta: dict[str, Any] | None = None,
        structured_output: bool | None = None,
    ) -> None:
        hints = annotations or ToolAnnotations()
        self.policy.register(
            ToolFacts(
                name=name or fn.__name__,
                module=fn.__module__,
                read_only=hints.read_only_hint,
                destructive=hints.destructive_hint,
                open_world=hints.open_world_hint,
            )
        )
        super().add_tool(fn, name, title, description, annotations, icons, meta, structured_output)

    async def list_tools(self) -> list[MCPTool]:
        return [tool for tool in await super().list_tools() if self.policy.refusal(tool.name) is None]

    async def call_tool(
        self, name: str, arguments: dict[str, Any], context: Context[Any, Any] | None = None
    ) -> CallToolResult | InputRequiredResult:
        refusal = self.policy.refusal(name)
        if refusal is not None:
            raise ToolError(refusal)
        return await super().call_tool(name, arguments, context)
