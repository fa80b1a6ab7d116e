"""MacOSArena (OpenGVLab/ScaleCUA `evaluation/MacOSArena`) on the user's machines over SSH: its task JSONs, its setup
commands and its shell-level checks."""

from symphony_mcp.bench.macosarena.adapter import MacOSArenaAdapter

__all__ = ["MacOSArenaAdapter"]
