"""`python -m symphony_mcp serve`: the form many MCP host configs use, same as the `symphony-mcp` script."""

import sys

from symphony_mcp.cli import main

sys.exit(main())
