"""symphony-mcp: computer-use tools (eyes, hands, memory) served over MCP."""

__version__ = "0.1.0"
