"""The `symphony-mcp` command line. Flags override the environment and the config file."""

from __future__ import annotations

import argparse
import logging
import sys
from pathlib import Path
from typing import Any, get_args

from pydantic import ValidationError

from symphony_mcp import __version__
from symphony_mcp.config import GroundingFamilyName, Settings, load_settings
from symphony_mcp.errors import SymphonyError

# flag -> path of the setting (group, [role,] field)
_SERVE_FLAGS: dict[str, tuple[str, ...]] = {
    "transport": ("server", "transport"),
    "host": ("server", "host"),
    "port": ("server", "port"),
    "path": ("server", "path"),
    "token": ("server", "token"),
    "allowed_host": ("server", "allowed_hosts"),
    "display": ("display", "display"),
    "virtual_display": ("display", "virtual"),
    "resolution": ("display", "resolution"),
    "window_manager": ("display", "window_manager"),
    "monitor": ("display", "monitor"),
    "image_format": ("screenshot", "format"),
    "quality": ("screenshot", "quality"),
    "max_width": ("screenshot", "max_width"),
    "max_height": ("screenshot", "max_height"),
    "max_bytes": ("screenshot", "max_bytes"),
    "grounder_url": ("models", "grounder", "base_url"),
    "grounder_model": ("models", "grounder", "model"),
    "grounding_family": ("grounding", "family"),
    "trajectory_dir": ("memory", "trajectory_dir"),
}


def _parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="symphony-mcp", description="Computer-use tools over MCP.")
    parser.add_argument("--version", action="version", version=f"symphony-mcp {__version__}")
    commands = parser.add_subparsers(dest="command", required=True)
    serve = commands.add_parser("serve", help="run the MCP server (stdio by default)")
    serve.add_argument("--config", type=Path, help="TOML or JSON settings file")
    serve.add_argument("--transport", choices=["stdio", "http"])
    serve.add_argument("--host", help="HTTP bind address (default 127.0.0.1)")
    serve.add_argument("--port", type=int, help="HTTP port (default 8765)")
    serve.add_argument("--path", help="HTTP endpoint path (default /mcp)")
    serve.add_argument("--token", help="bearer token for HTTP (required off loopback)")
    serve.add_argument("--allowed-host", action="append", help="extra accepted Host header, repeatable")
    serve.add_argument("--display", help="X display to use (default $DISPLAY)")
    serve.add_argument("--virtual-display", choices=["auto", "always", "never"])
    serve.add_argument("--resolution", help="virtual display size, e.g. 1920x1080")
    serve.add_argument("--window-manager", help="window manager for the virtual display ('' for none)")
    serve.add_argument("--monitor", type=int, help="default monitor for screenshots (0 = all)")
    serve.add_argument("--image-format", choices=["jpeg", "png", "webp"])
    serve.add_argument("--quality", type=int)
    serve.add_argument("--max-width", type=int)
    serve.add_argument("--max-height", type=int)
    serve.add_argument("--max-bytes", type=int)
    serve.add_argument("--grounder-url", help="grounding model endpoint, e.g. http://localhost:8000/v1")
    serve.add_argument("--grounder-model", help="grounding model name, e.g. ui-tars-1.5-7b")
    serve.add_argument("--grounding-family", choices=list(get_args(GroundingFamilyName)))
    serve.add_argument("--trajectory-dir", type=Path, help="where task trajectories are written")
    serve.add_argument("--log-level", choices=["DEBUG", "INFO", "WARNING", "ERROR"])
    return parser


def settings_from_args(args: argparse.Namespace) -> Settings:
    overrides: dict[str, Any] = {}
    for flag, (*groups, field) in _SERVE_FLAGS.items():
        value = getattr(args, flag, None)
        if value is not None:
            node = overrides
            for group in groups:
                node = node.setdefault(group, {})
            node[field] = value
    if args.log_level:
        overrides["log_level"] = args.log_level
    return load_settings(args.config, **overrides)


def main(argv: list[str] | None = None) -> int:
    args = _parser().parse_args(argv)
    try:
        settings = settings_from_args(args)
    except (ValidationError, ValueError) as exc:
        print(f"symphony-mcp: invalid settings: {exc}", file=sys.stderr)
        return 2
    # Logs go to stderr: stdout carries the stdio transport.
    logging.basicConfig(
        level=settings.log_level, stream=sys.stderr, format="%(asctime)s %(levelname)s %(name)s: %(message)s"
    )
    if args.command == "serve":
        return _serve(settings)
    return 2


def _serve(settings: Settings) -> int:
    from symphony_mcp.desktop.virtual_display import display_for
    from symphony_mcp.server import build_server, check_http_security, run

    try:
        if settings.server.transport == "http":
            check_http_security(settings.server)
        with display_for(settings.display) as display:
            logging.getLogger(__name__).info("serving on display %s over %s", display, settings.server.transport)
            run(build_server(settings), settings)
    except (SymphonyError, ValueError) as exc:
        print(f"symphony-mcp: {exc}", file=sys.stderr)
        return 1
    except KeyboardInterrupt:
        pass
    return 0


if __name__ == "__main__":
    sys.exit(main())
