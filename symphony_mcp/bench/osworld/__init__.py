"""OSWorld offline: its task JSONs run on the local desktop, scored by its own getters and metrics.

The adapter is imported on first use: what needs only the task account (`symphony-mcp doctor`) does not load the
orchestrator and the MCP client with it.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from symphony_mcp.bench.osworld.adapter import OSWorldAdapter

__all__ = ["OSWorldAdapter"]


def __getattr__(name: str) -> Any:
    if name == "OSWorldAdapter":
        from symphony_mcp.bench.osworld.adapter import OSWorldAdapter

        return OSWorldAdapter
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
