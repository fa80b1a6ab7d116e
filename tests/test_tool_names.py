"""A name that matches no tool or group is a usage error before anything starts: no display, server or model call.

The command line checks every setting that names tools (flags, SYMPHONY_* variables, the config file) against
the registry of tool names (policy/tool_names.py) before `serve` starts its display, before `run` spawns a server
or calls its model, before `bench` starts an environment; the server checks the same names against the same
registry as it builds, and refuses to build if its tools and the registry differ.
"""

from __future__ import annotations

import os
import stat
import subprocess
from pathlib import Path

import pytest

from symphony_mcp.cli import ExitCode
from symphony_mcp.config import load_settings
from symphony_mcp.errors import SettingsError
from symphony_mcp.policy.tool_names import TOOL_NAMES
from symphony_mcp.policy.tools import ToolFacts, check_registered
from symphony_mcp.server import build_server
from testkit.model_server import StandInModel
from testkit.server_process import base_env, serve_command


class XvfbWatch:
    """PATH with an `Xvfb` that leaves a mark and then runs the real one: whether any display was started."""

    def __init__(self, folder: Path) -> None:
        real = subprocess.run(["sh", "-c", "command -v Xvfb"], capture_output=True, text=True, check=True).stdout
        self.mark = folder / "xvfb-started"
        self.bin = folder / "bin"
        self.bin.mkdir()
        script = self.bin / "Xvfb"
        script.write_text(f'#!/bin/sh\ntouch "{self.mark}"\nexec "{real.strip()}" "$@"\n')
        script.chmod(script.stat().st_mode | stat.S_IXUSR)

    def env(self, **extra: str) -> dict[str, str]:
        """A client's environment without a display, so a server would start its own Xvfb (ours)."""
        env = base_env(**extra)
        env["PATH"] = f"{self.bin}{os.pathsep}{env['PATH']}"
        return env

    @property
    def started(self) -> bool:
        return self.mark.exists()


@pytest.fixture
def xvfb(tmp_path: Path) -> XvfbWatch:
    return XvfbWatch(tmp_path)


def cli(env: dict[str, str], *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [*serve_command(), *args], env=env, capture_output=True, text=True, timeout=120, stdin=subprocess.DEVNULL
    )


def assert_refused(result: subprocess.CompletedProcess[str], setting: str, guess: str, kind: str = "tools") -> None:
    assert result.returncode == ExitCode.USAGE, result.stderr[-3000:]
    assert setting in result.stderr and f"(did you mean {guess!r}?)" in result.stderr, result.stderr[-3000:]
    assert f"The {kind} are: " in result.stderr and "Traceback" not in result.stderr


def test_serve_check_the_tool_names_before_its_display_starts(xvfb: XvfbWatch, tmp_path: Path) -> None:
    config = tmp_path / "symphony.toml"
    config.write_text('[policy]\nconfirm_tools = ["screenshto"]\n')
    cases = [
        (xvfb.env(), ["--enabled-tools", "clik"], "policy.enabled_tools", "click"),
        (xvfb.env(), ["--disabled-tools", "wait,clik"], "policy.disabled_tools", "click"),
        (xvfb.env(SYMPHONY_POLICY__DISABLED_TOOLS="type,hotkye"), [], "SYMPHONY_POLICY__DISABLED_TOOLS", "hotkey"),
        (xvfb.env(), ["--config", str(config)], "policy.confirm_tools", "screenshot"),
        (xvfb.env(SYMPHONY_POLICY__TIMEOUTS='{"reflct": 5}'), [], "policy.timeouts", "reflect"),
    ]
    for env, args, setting, guess in cases:
        assert_refused(cli(env, "serve", *args), setting, guess)
        assert not xvfb.started, f"serve {args} started a display before refusing the name"


def test_run_checks_the_planner_and_server_tool_names_before_it_starts_anything(
    xvfb: XvfbWatch, tmp_path: Path, stand_in: StandInModel
) -> None:
    stand_in.script(default="```python\ndone()\n```")
    results = tmp_path / "results"
    model = ["--orchestrator-url", stand_in.url, "--orchestrator-model", "m", "--results", str(results)]
    cases = [
        (xvfb.env(), ["--enabled-tools", "clik"], "orchestrator.enabled_tools", "click", "action tools"),
        (xvfb.env(), ["--enabled-tools", "click,screenshot"], "orchestrator.enabled_tools", None, "action tools"),
        (xvfb.env(SYMPHONY_POLICY__ENABLED_GROUPS="read-olny"), [], "policy.enabled_groups", "read-only", "groups"),
    ]
    for env, args, setting, guess, kind in cases:
        result = cli(env, "run", "open the editor", *model, *args)
        if guess is None:  # a real tool, but one the planner never plans with: no guess, the list of action tools
            assert result.returncode == ExitCode.USAGE and "'screenshot', which is not one of" in result.stderr
            assert f"The {kind} are: click, click_text, " in result.stderr, result.stderr[-3000:]
        else:
            assert_refused(result, setting, guess, kind)
        assert not xvfb.started, f"run {args} started a server (and its display) before refusing the name"
    assert stand_in.requests == [] and not results.exists()


def test_run_with_a_planner_tool_the_server_does_not_offer_ends_in_a_clear_error(
    xvfb: XvfbWatch, tmp_path: Path, stand_in: StandInModel
) -> None:
    """A known tool the server's policy turns off is only seen once the server lists its tools: the run ends in
    Error saying so, with no traceback (the task never started on the server, so there is no trajectory to copy)."""
    results = tmp_path / "results"
    model = ["--orchestrator-url", stand_in.url, "--orchestrator-model", "m", "--results", str(results)]
    env = xvfb.env(SYMPHONY_POLICY__DISABLED_TOOLS="click")
    result = cli(env, "run", "open the editor", *model, "--enabled-tools", "click")
    assert result.returncode == ExitCode.UNAVAILABLE, result.stderr[-3000:]
    assert "names 'click', which is not one of this server's action tools on offer" in result.stdout
    assert "Traceback" not in result.stderr, result.stderr[-3000:]
    assert stand_in.requests == []


def test_bench_checks_the_tool_names_before_an_environment_starts(xvfb: XvfbWatch, tmp_path: Path) -> None:
    result = cli(xvfb.env(), "bench", "miniwob", "--enabled-tools", "scrol", "--results", str(tmp_path / "r"))
    assert_refused(result, "orchestrator.enabled_tools", "scroll", "action tools")
    assert not xvfb.started and not (tmp_path / "r").exists()


def test_the_server_refuses_the_names_as_it_builds() -> None:
    with pytest.raises(SettingsError, match=r"policy.disabled_groups .* names 'destrutive'.*'destructive'"):
        build_server(load_settings(policy={"disabled_groups": ["destrutive"]}))


def test_the_server_builds_only_with_the_registry_tools() -> None:
    server = build_server(load_settings())
    tools = server.mcp.policy.tools
    server.close()
    assert set(tools) == TOOL_NAMES
    check_registered(tools)
    extra = ToolFacts(name="zoom", module="symphony_mcp.tools.screen")
    with pytest.raises(RuntimeError, match="differ in zoom"):
        check_registered({**tools, "zoom": extra})
    moved = ToolFacts(name="click", module="symphony_mcp.tools.windows")
    with pytest.raises(RuntimeError, match="differ in click"):
        check_registered({**tools, "click": moved})
    without = {name: facts for name, facts in tools.items() if name != "wait"}
    with pytest.raises(RuntimeError, match="differ in wait"):
        check_registered(without)
