"""What every example takes: the model endpoint, the symphony-mcp server to use, the phrase to click.

Each value comes from a flag or, when the flag is not given, from the environment, so the same command line
works against OpenAI, a local vLLM or the tests' stand-in model, and against a server the example starts
over stdio or one already running over streamable HTTP.
"""

from __future__ import annotations

import argparse
import os
import shlex

# A call can run long (OCR warm-up, `wait`, `open_app`, grounding): a client that gives up first loses the result.
DEFAULT_TOOL_TIMEOUT = 120.0
# Starting the server (and its own Xvfb when there is no display) takes seconds on a busy machine.
START_TIMEOUT = 60.0


def build_parser(description: str) -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(description=description)
    env = os.environ.get
    parser.add_argument(
        "--model-url",
        default=env("OPENAI_BASE_URL", "https://api.openai.com/v1"),
        help="OpenAI-compatible base URL (default $OPENAI_BASE_URL, else OpenAI's)",
    )
    parser.add_argument(
        "--model", default=env("OPENAI_MODEL", "gpt-5-mini"), help="model name (default $OPENAI_MODEL, else gpt-5-mini)"
    )
    parser.add_argument(
        "--api-key-env",
        default="OPENAI_API_KEY",
        help="environment variable holding the model's API key (default OPENAI_API_KEY; unset: no key)",
    )
    parser.add_argument(
        "--server-url",
        default=env("SYMPHONY_MCP_URL"),
        help="a running server's streamable HTTP endpoint, e.g. http://127.0.0.1:8765/mcp (default $SYMPHONY_MCP_URL;"
        " without one the example starts --server-command over stdio)",
    )
    parser.add_argument(
        "--token-env",
        default="SYMPHONY_MCP_TOKEN",
        help="environment variable holding the HTTP server's bearer token (default SYMPHONY_MCP_TOKEN)",
    )
    parser.add_argument(
        "--server-command",
        default=env("SYMPHONY_MCP_COMMAND", "symphony-mcp serve"),
        help="the stdio server's command line (default $SYMPHONY_MCP_COMMAND, else 'symphony-mcp serve'); it gets "
        "this process's environment, DISPLAY included",
    )
    parser.add_argument("--phrase", default="OK", help="the text on screen to click (default OK)")
    parser.add_argument(
        "--tool-timeout",
        type=float,
        default=DEFAULT_TOOL_TIMEOUT,
        help=f"seconds the client waits for one tool call (default {DEFAULT_TOOL_TIMEOUT:g})",
    )
    return parser


def task(args: argparse.Namespace) -> str:
    return (
        f"Take a screenshot, find the text {args.phrase!r} on the screen with find_text, then click it with "
        "click_text. Say what you clicked."
    )


def model_key(args: argparse.Namespace) -> str:
    """The API key, or a placeholder: OpenAI's client insists on one even for servers that need none."""
    return os.environ.get(args.api_key_env) or "none"


def server_command(args: argparse.Namespace) -> list[str]:
    return shlex.split(args.server_command)


def server_headers(args: argparse.Namespace) -> dict[str, str]:
    token = os.environ.get(args.token_env)
    return {"Authorization": f"Bearer {token}"} if token else {}
