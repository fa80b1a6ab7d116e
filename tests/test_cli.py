"""The command line a newcomer meets: every command and flag explains itself, and exit statuses follow one scheme."""

from __future__ import annotations

import argparse
import subprocess
from collections.abc import Iterator
from pathlib import Path

import pytest

from symphony_mcp.cli import EPILOG, EXIT_MEANINGS, ExitCode, build_parser
from symphony_mcp.config import SearchSettings
from symphony_mcp.desktop.virtual_display import VirtualDisplay
from testkit.server_process import base_env, serve_command


def parsers(
    parser: argparse.ArgumentParser, name: str = "symphony-mcp"
) -> Iterator[tuple[str, argparse.ArgumentParser]]:
    """Every parser of the command line with its full command, subcommands included."""
    yield name, parser
    for action in parser._actions:
        if isinstance(action, argparse._SubParsersAction):
            for sub_name, sub in action.choices.items():
                yield from parsers(sub, f"{name} {sub_name}")


def test_every_command_describes_itself_and_every_flag_has_help() -> None:
    missing = []
    for name, parser in parsers(build_parser()):
        if not parser.description:
            missing.append(f"{name}: no description")
        if parser.epilog != EPILOG:
            missing.append(f"{name}: no exit statuses")
        missing += [
            f"{name} {action.option_strings or action.dest}: no help"
            for action in parser._actions
            if not action.help and not isinstance(action, argparse._SubParsersAction)
        ]
    assert missing == []


def test_docs_help_shows_the_index_path() -> None:
    helps = {name: " ".join(parser.format_help().split()) for name, parser in parsers(build_parser())}
    for command in ("symphony-mcp docs index", "symphony-mcp docs search"):
        assert f"the index file (default {SearchSettings().docs_index}, " in helps[command].replace("- ", "-")
        assert "search.docs_index" not in helps[command]


def test_the_epilog_lists_every_exit_status() -> None:
    assert set(EXIT_MEANINGS) == set(ExitCode)
    for code in ExitCode:
        assert f"\n  {int(code):<4} " in EPILOG


def run_cli(*args: str, display: str | None = None) -> subprocess.CompletedProcess[str]:
    env = base_env(DISPLAY=display) if display else base_env()
    return subprocess.run(
        [*serve_command(), *args], env=env, capture_output=True, text=True, timeout=60, stdin=subprocess.DEVNULL
    )


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["serve", "--disabled-tools", "clik"], "did you mean 'click'?"),
        (["serve", "--enabled-groups", "read-olny"], "did you mean 'read-only'?"),
        (["serve", "--confirm-tools", "screenshto,click"], "did you mean 'screenshot'?"),
        (["serve", "--resolution", "12x"], "resolution must look like 1920x1080"),
        (["serve", "--transport", "http", "--host", "0.0.0.0"], "requires a token"),
        (["serve", "--no-such-flag"], "unrecognized arguments: --no-such-flag"),
    ],
    ids=lambda value: " ".join(value) if isinstance(value, list) else None,
)
def test_usage_errors_exit_2_and_say_what_is_allowed(args: list[str], message: str, xdisplay: VirtualDisplay) -> None:
    result = run_cli(*args, display=xdisplay.name)
    assert result.returncode == ExitCode.USAGE == 2, result.stderr[-2000:]
    assert message in result.stderr
    assert "Traceback" not in result.stderr


def test_an_unknown_name_far_from_every_tool_lists_them_without_a_guess(xdisplay: VirtualDisplay) -> None:
    result = run_cli("serve", "--disabled-tools", "zzzzzz", display=xdisplay.name)
    assert result.returncode == ExitCode.USAGE
    assert "did you mean" not in result.stderr and "The tools are: action_history, " in result.stderr


def test_a_missing_model_exits_3_naming_the_setting(tmp_path: Path) -> None:
    result = run_cli("run", "say hi", "--results", str(tmp_path))
    assert result.returncode == ExitCode.UNAVAILABLE == 3, result.stderr[-2000:]
    assert "SYMPHONY_MODELS__ORCHESTRATOR__BASE_URL" in result.stderr
