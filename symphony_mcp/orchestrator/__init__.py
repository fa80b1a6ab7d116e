"""The bundled OS-Symphony client: the orchestrator loop over MCP, its CLI, results and report."""
