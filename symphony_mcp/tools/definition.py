"""A tool as one top-level record, found by its name: `@define_tool(...)` above `async def click(cores, ...)`.

The record holds what registration needs: the function (its first parameter takes the `Cores`, the rest are the
tool's arguments), its annotations, name and description when they are not the function's own, and the rules of
its input schema that its signature cannot state. `register` puts each record on the server through `add_tool`,
where the call pipeline (tools/pipeline.py) applies to it; a tool has nothing of that pipeline in its own code.
"""

from __future__ import annotations

import functools
import inspect
from collections.abc import Awaitable, Callable, Iterable, Mapping
from dataclasses import dataclass
from typing import Any

from mcp.server.mcpserver import MCPServer
from mcp.types import ToolAnnotations

from symphony_mcp.tools.arguments import refuse_combinations, state_in_schema, state_shared_rules
from symphony_mcp.tools.common import resource_errors
from symphony_mcp.tools.cores import Cores

ToolFunction = Callable[..., Awaitable[Any]]
# Bounds of arguments that the settings decide: {argument: {schema keyword: value}}.
SettingsBounds = Callable[[Cores], Mapping[str, Mapping[str, Any]]]


@dataclass(frozen=True)
class ToolDefinition:
    """One tool. `refused`: the argument combinations it refuses (arguments.refuse_combinations); `bounds`: the
    bounds of its arguments that the settings decide (arguments.state_in_schema)."""

    function: ToolFunction
    annotations: ToolAnnotations
    name: str
    description: str | None = None
    refused: tuple[dict[str, Any], ...] = ()
    bounds: SettingsBounds | None = None

    def register(self, server: MCPServer, cores: Cores) -> None:
        server.add_tool(
            _bound(self.function, cores), self.name, description=self.description, annotations=self.annotations
        )
        if self.refused:
            refuse_combinations(server, self.name, *self.refused)
        for argument, keywords in (self.bounds(cores) if self.bounds else {}).items():
            state_in_schema(server, self.name, argument, **keywords)
        state_shared_rules(server, [self.name])


@dataclass(frozen=True)
class ResourceDefinition:
    """One resource template; its reader's failures reach the caller as resource errors (common.resource_errors)."""

    function: ToolFunction
    uri: str
    name: str
    description: str
    mime_type: str

    def register(self, server: MCPServer, cores: Cores) -> None:
        reader = resource_errors(_bound(self.function, cores))
        server.resource(self.uri, name=self.name, description=self.description, mime_type=self.mime_type)(reader)


Definition = ToolDefinition | ResourceDefinition


def define_tool(
    annotations: ToolAnnotations,
    *,
    name: str | None = None,
    description: str | None = None,
    refused: Iterable[dict[str, Any]] = (),
    bounds: SettingsBounds | None = None,
) -> Callable[[ToolFunction], ToolDefinition]:
    """The record of the tool defined by the function below (its name, unless `name` is given)."""

    def define(function: ToolFunction) -> ToolDefinition:
        return ToolDefinition(function, annotations, name or function.__name__, description, tuple(refused), bounds)

    return define


def define_resource(
    uri: str, *, name: str, description: str, mime_type: str
) -> Callable[[ToolFunction], ResourceDefinition]:
    """The record of the resource template read by the function below."""

    def define(function: ToolFunction) -> ResourceDefinition:
        return ResourceDefinition(function, uri, name, description, mime_type)

    return define


def register(server: MCPServer, definitions: Iterable[Definition], cores: Cores) -> None:
    """Register every definition on `server`, in order (tools/list keeps it)."""
    for definition in definitions:
        definition.register(server, cores)


def _bound(function: ToolFunction, cores: Cores) -> ToolFunction:
    """`function` with `cores` given: it declares (and the SDK sees) the tool's arguments only."""

    @functools.wraps(function)
    async def with_cores(*args: Any, **kwargs: Any) -> Any:
        return await function(cores, *args, **kwargs)

    signature = inspect.signature(function, eval_str=True)
    with_cores.__signature__ = signature.replace(  # type: ignore[attr-defined]
        parameters=list(signature.parameters.values())[1:]
    )
    return with_cores
