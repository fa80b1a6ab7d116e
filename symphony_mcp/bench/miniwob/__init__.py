"""MiniWoB++ (the `miniwob` package's HTML tasks) in a real Chromium window per environment."""

from symphony_mcp.bench.miniwob.adapter import DEFAULT_ZOOM, MiniWobAdapter
from symphony_mcp.bench.miniwob.tasks import DEFAULT_SUBSET, MiniWobMissingError

__all__ = ["DEFAULT_SUBSET", "DEFAULT_ZOOM", "MiniWobAdapter", "MiniWobMissingError"]
