"""Each setting is written once: its flag, help and parsing come from the Settings model (config.py).

The flags every command had before they were derived still set the same settings; each flag's help is its
setting's description; lists are parsed by one rule (JSON or comma-separated text, a list as it is) and sizes
by another (WIDTHxHEIGHT), wherever the value comes from.
"""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

import pytest
from pydantic import SecretStr, ValidationError

from symphony_mcp.cli import build_parser, setting_flags, settings_from_args
from symphony_mcp.config import DisplaySettings, SearchSettings, Settings, flag_settings, load_settings, parse_geometry

# The flags of run and bench before they were derived from the settings, and those added since.
AGENT_FLAGS: list[tuple[list[str], tuple[str, ...], Any]] = [
    (["--results", "/tmp/r"], ("orchestrator", "results_dir"), Path("/tmp/r")),
    (["--max-steps", "7"], ("orchestrator", "max_steps"), 7),
    (["--task-timeout", "90"], ("orchestrator", "task_timeout_seconds"), 90.0),
    (["--no-reflection"], ("orchestrator", "reflection"), False),
    (["--enabled-tools", "click,type"], ("orchestrator", "enabled_tools"), ["click", "type"]),
    (["--reset"], ("orchestrator", "reset"), True),
    (["--function-calling"], ("orchestrator", "function_calling"), True),
    (["--orchestrator-url", "http://o/v1"], ("models", "orchestrator", "base_url"), "http://o/v1"),
    (["--orchestrator-model", "planner"], ("models", "orchestrator", "model"), "planner"),
    (["--memoryer-url", "http://m/v1"], ("models", "memoryer", "base_url"), "http://m/v1"),
    (["--memoryer-model", "mem"], ("models", "memoryer", "model"), "mem"),
    (["--grounder-url", "http://g/v1"], ("models", "grounder", "base_url"), "http://g/v1"),
    (["--grounder-model", "gta1-7b"], ("models", "grounder", "model"), "gta1-7b"),
    (["--grounding-family", "qwen3-vl"], ("grounding", "family"), "qwen3-vl"),
    (["--log-level", "INFO"], ("log_level",), "INFO"),
    # Added since, from the settings' Flags alone:
    (["--dual-grounding"], ("orchestrator", "dual_grounding"), True),
]
# The flags of each command before they were derived from the settings: (flags, the setting's path, its value).
HISTORICAL_FLAGS: dict[str, list[tuple[list[str], tuple[str, ...], Any]]] = {
    "serve": [
        (["--transport", "http"], ("server", "transport"), "http"),
        (["--host", "::1"], ("server", "host"), "::1"),
        (["--port", "9000"], ("server", "port"), 9000),
        (["--path", "/x"], ("server", "path"), "/x"),
        (["--token", "s3cret"], ("server", "token"), "s3cret"),
        (["--allowed-host", "a:*", "--allowed-host", "b:*"], ("server", "allowed_hosts"), ["a:*", "b:*"]),
        (["--schema-rules"], ("server", "schema_rules"), True),
        (["--display", ":5"], ("display", "display"), ":5"),
        (["--virtual-display", "always"], ("display", "virtual"), "always"),
        (["--resolution", "1280x720"], ("display", "resolution"), "1280x720"),
        (["--window-manager", ""], ("display", "window_manager"), ""),
        (["--monitor", "0"], ("display", "monitor"), 0),
        (["--view"], ("view", "enabled"), True),
        (["--image-format", "png"], ("screenshot", "format"), "png"),
        (["--quality", "55"], ("screenshot", "quality"), 55),
        (["--max-width", "640"], ("screenshot", "max_width"), 640),
        (["--max-height", "480"], ("screenshot", "max_height"), 480),
        (["--max-bytes", "300000"], ("screenshot", "max_bytes"), 300_000),
        (["--grounder-url", "http://g/v1"], ("models", "grounder", "base_url"), "http://g/v1"),
        (["--grounder-model", "gta1-7b"], ("models", "grounder", "model"), "gta1-7b"),
        (["--grounding-family", "gta1"], ("grounding", "family"), "gta1"),
        (["--trajectory-dir", "/tmp/t"], ("memory", "trajectory_dir"), Path("/tmp/t")),
        (["--enabled-tools", "click,wait"], ("policy", "enabled_tools"), ["click", "wait"]),
        (["--enabled-groups", "read-only,ocr"], ("policy", "enabled_groups"), ["read-only", "ocr"]),
        (["--disabled-tools", "wait"], ("policy", "disabled_tools"), ["wait"]),
        (["--disabled-groups", "destructive"], ("policy", "disabled_groups"), ["destructive"]),
        (["--read-only"], ("policy", "read_only"), True),
        (["--open-app-allow", "xterm,/srv/docs"], ("policy", "open_app_allow"), ["xterm", "/srv/docs"]),
        (["--confirm-tools", "click"], ("policy", "confirm_tools"), ["click"]),
        (["--confirm-groups", "destructive"], ("policy", "confirm_groups"), ["destructive"]),
        (["--timeout-seconds", "30"], ("policy", "timeout_seconds"), 30.0),
        (["--audit-file", "/tmp/a.jsonl"], ("policy", "audit_file"), Path("/tmp/a.jsonl")),
        (["--no-audit"], ("policy", "audit"), False),
        (["--log-level", "DEBUG"], ("log_level",), "DEBUG"),
        # Added since, from the settings' Flags alone (a remote backend needs its URL):
        (["--desktop-backend", "osworld", "--desktop-url", "http://vm:5000"], ("desktop", "backend"), "osworld"),
        (["--desktop-url", "http://vm:5000"], ("desktop", "url"), "http://vm:5000"),
    ],
    "run": AGENT_FLAGS,
    "bench": [
        *AGENT_FLAGS,
        (["--resolution", "1024x768"], ("display", "resolution"), "1024x768"),
        (["--view"], ("view", "enabled"), True),
    ],
    "docs index": [(["--index", "/tmp/d.sqlite"], ("search", "docs_index"), Path("/tmp/d.sqlite"))],
    "docs search": [(["--index", "/tmp/d.sqlite"], ("search", "docs_index"), Path("/tmp/d.sqlite"))],
}
POSITIONALS = {"serve": [], "run": ["a task"], "bench": ["miniwob"], "docs index": ["/tmp"], "docs search": ["q"]}


def value_at(settings: Settings, path: tuple[str, ...]) -> Any:
    node: Any = settings
    for name in path:
        node = getattr(node, name)
    return node.get_secret_value() if isinstance(node, SecretStr) else node


@pytest.mark.parametrize("command", list(HISTORICAL_FLAGS))
def test_every_flag_of_before_sets_the_same_setting(command: str, monkeypatch: pytest.MonkeyPatch) -> None:
    for variable in ("SYMPHONY_CONFIG_FILE", "SYMPHONY_POLICY__AUDIT"):
        monkeypatch.delenv(variable, raising=False)
    for flags, path, expected in HISTORICAL_FLAGS[command]:
        args = build_parser().parse_args([*command.split(), *POSITIONALS[command], *flags])
        assert value_at(settings_from_args(args), path) == expected, (command, flags)


def help_of(command: str) -> str:
    parser = build_parser()
    for word in command.split():
        commands = next(action.choices for action in parser._actions if isinstance(action.choices, dict))
        parser = commands[word]
    return " ".join(parser.format_help().split())


def test_each_command_offers_exactly_its_settings_flags_and_shows_their_descriptions() -> None:
    for command, historical in HISTORICAL_FLAGS.items():
        settings = setting_flags(command.split()[0])
        offered = {setting.path for setting in settings}
        assert {path for _, path, _ in historical} == offered, command  # every setting that should have a flag
        shown = help_of(command)
        for setting in settings:
            assert setting.field.description
            description = " ".join(setting.field.description.split())
            assert f"{description} (" in shown and setting.flag in shown, (command, setting.flag)
            assert setting.variable in shown


def test_the_readme_settings_table_names_each_flag() -> None:
    """The table is written by hand: each setting's row names the flag derived for it (a switch by either form);
    the model roles' flags are named under the table, beside SYMPHONY_MODELS__<ROLE>__*."""
    readme = (Path(__file__).parents[1] / "README.md").read_text()
    rows = {match[1]: match[0] for match in re.finditer(r"^\| `(SYMPHONY_[A-Z_]+)` \|[^\n]*$", readme, re.M)}
    for setting in flag_settings():
        if setting.path[0] == "models":
            assert f"`{setting.flag}`" in readme, setting.flag
            continue
        flag_cell = rows[setting.variable].split("|")[2]
        assert setting.flag in flag_cell or f"--no-{setting.flag[2:]}" in flag_cell, (setting.variable, flag_cell)


def test_flags_are_on_the_settings_model_only_once_each() -> None:
    """A flag name means one setting per command; a setting names its flag once, on its field."""
    for command in ("serve", "run", "bench", "docs"):
        names = [setting.flag for setting in setting_flags(command)]
        assert len(names) == len(set(names)), command
    assert all(setting.commands for setting in flag_settings())


@pytest.mark.parametrize(
    ("flags", "expected"),
    [(["--disabled-tools", "wait, type", "--disabled-tools", "hotkey"], ["wait", "type", "hotkey"])],
)
def test_a_list_flag_is_repeatable_and_comma_separated(flags: list[str], expected: list[str]) -> None:
    settings = settings_from_args(build_parser().parse_args(["serve", *flags]))
    assert settings.policy.disabled_tools == expected


def test_a_list_is_read_by_one_rule_wherever_it_comes_from(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("SYMPHONY_SEARCH__DENY_URLS", "https://a.example/*, https://b.example/*")
    monkeypatch.setenv("SYMPHONY_DISPLAY__MONITORS", '["1920x1080+0+0", "1920x1080+1920+0"]')
    config = tmp_path / "settings.json"
    config.write_text(json.dumps({"policy": {"open_app_allow": ["/srv/a,b", "xterm"]}}))
    settings = load_settings(config)
    assert settings.search.deny_urls == ["https://a.example/*", "https://b.example/*"]
    assert settings.display.monitors == ["1920x1080+0+0", "1920x1080+1920+0"]
    assert settings.policy.open_app_allow == ["/srv/a,b", "xterm"]  # a list stays as written: no comma splitting
    monkeypatch.setenv("SYMPHONY_SEARCH__DENY_URLS", '["unclosed')
    with pytest.raises(ValidationError, match="deny_urls"):
        load_settings()


def test_sizes_are_read_by_one_rule() -> None:
    assert DisplaySettings(resolution=" 1280X720 ").size == (1280, 720)
    assert SearchSettings(viewport="800x600").viewport_size == (800, 600)
    assert parse_geometry("1280x720+1920+0") == (1920, 0, 1280, 720)
    with pytest.raises(ValidationError, match=r"resolution must look like 1920x1080 .*between 64x64 and 16384x16384"):
        DisplaySettings(resolution="12x")
    with pytest.raises(ValidationError, match=r"viewport must look like 1920x1080 .*between 320x240 and 4096x4096"):
        SearchSettings(viewport="100x100")
    with pytest.raises(ValidationError, match="a monitor must look like 1920x1080"):
        DisplaySettings(monitors=["1920x1080"])
