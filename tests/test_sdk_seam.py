"""The MCP SDK's private names are used in one module, symphony_mcp/sdk_internals.py, so an SDK upgrade
touches that file only: no other module imports a private SDK module or touches a private member of
MCPServer (its attributes and methods, read from the installed SDK itself)."""

from __future__ import annotations

import ast
from pathlib import Path

from mcp.server.mcpserver import MCPServer

PACKAGE = Path(__file__).resolve().parent.parent / "symphony_mcp"
SEAM = PACKAGE / "sdk_internals.py"


def _private(name: str) -> bool:
    return name.startswith("_") and not name.startswith("__")


def _server_private_names() -> set[str]:
    names = {name for cls in MCPServer.__mro__ for name in vars(cls) if _private(name)}
    return names | {name for name in vars(MCPServer()) if _private(name)}


def _uses(path: Path, server_private: set[str]) -> list[str]:
    """Where `path` imports a private SDK module or names a private member of MCPServer."""
    found = []
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        modules: list[str] = []
        if isinstance(node, ast.ImportFrom) and node.module:
            modules = [node.module]
        elif isinstance(node, ast.Import):
            modules = [alias.name for alias in node.names]
        for module in modules:
            parts = module.split(".")
            if parts[0] == "mcp" and any(_private(part) for part in parts):
                found.append(f"{path.name}:{node.lineno}: imports {module}")
        named = node.attr if isinstance(node, ast.Attribute) else None
        if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef):
            named = node.name
        if named in server_private:
            found.append(f"{path.name}:{node.lineno}: MCPServer.{named}")
    return found


def test_private_sdk_names_are_used_in_the_seam_only() -> None:
    server_private = _server_private_names()
    outside = [use for path in sorted(PACKAGE.rglob("*.py")) if path != SEAM for use in _uses(path, server_private)]
    assert outside == [], "private MCP SDK names outside sdk_internals.py:\n" + "\n".join(outside)


def test_the_check_sees_what_the_seam_uses() -> None:
    """The control: the seam's own uses are found, so an empty list above means none elsewhere."""
    uses = _uses(SEAM, _server_private_names())
    assert any("mcp.shared._stream_protocols" in use for use in uses)
    assert any("MCPServer._lowlevel_server" in use for use in uses)
    assert any("MCPServer._tool_manager" in use for use in uses)
