"""MCP-facing tool modules, one per capability. Thin: validate, call the core, shape the result."""
