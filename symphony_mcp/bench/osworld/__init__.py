"""OSWorld offline: its task JSONs run on the local desktop, scored by its own getters and metrics."""

from symphony_mcp.bench.osworld.adapter import OSWorldAdapter

__all__ = ["OSWorldAdapter"]
