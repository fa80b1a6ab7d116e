"""Settings (config.py) and the command line that sets them (cli.py): precedence, flags into nested settings."""

from __future__ import annotations

import json
import os
from collections.abc import Callable
from pathlib import Path

import pytest
from pydantic import ValidationError

from symphony_mcp.cli import build_parser, settings_from_args
from symphony_mcp.config import Settings, load_settings


def test_settings_precedence_file_env_cli(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    config = tmp_path / "symphony.json"
    config.write_text(json.dumps({"screenshot": {"quality": 55, "format": "webp"}, "display": {"monitor": 0}}))
    monkeypatch.setenv("SYMPHONY_SCREENSHOT__FORMAT", "png")
    monkeypatch.setenv("SYMPHONY_DISPLAY__MONITOR", "2")
    monkeypatch.delenv("SYMPHONY_CONFIG_FILE", raising=False)
    args = build_parser().parse_args(["serve", "--config", str(config), "--monitor", "3", "--resolution", "1280x720"])
    settings = settings_from_args(args)
    assert settings.screenshot.quality == 55  # file
    assert settings.screenshot.format == "png"  # env beats file
    assert settings.display.monitor == 3  # flag beats env
    assert settings.display.size == (1280, 720)
    assert "SYMPHONY_CONFIG_FILE" not in os.environ  # nothing leaks to processes started later


def test_grounder_flags_reach_the_nested_settings() -> None:
    args = build_parser().parse_args(
        ["serve", "--grounder-url", "http://h:8000/v1", "--grounder-model", "gta1-7b", "--grounding-family", "gta1"]
    )
    settings = settings_from_args(args)
    assert (settings.models.grounder.base_url, settings.models.grounder.model) == ("http://h:8000/v1", "gta1-7b")
    assert settings.grounding.family == "gta1"


@pytest.mark.parametrize(
    ("variable", "value", "read"),
    [
        ("SYMPHONY_CODE__LANGUAGES", "python", lambda s: s.code.languages == ["python"]),
        ("SYMPHONY_CODE__LANGUAGES", '["bash"]', lambda s: s.code.languages == ["bash"]),
        (
            "SYMPHONY_CODE__WRITABLE_PATHS",
            "/srv/a, /srv/b",
            lambda s: s.code.writable_paths == [Path("/srv/a"), Path("/srv/b")],
        ),
        ("SYMPHONY_POLICY__DISABLED_TOOLS", "click,wait", lambda s: s.policy.disabled_tools == ["click", "wait"]),
        ("SYMPHONY_SERVER__ALLOWED_HOSTS", "a.example:*", lambda s: s.server.allowed_hosts == ["a.example:*"]),
    ],
)
def test_list_settings_from_the_environment_take_commas_or_json(
    variable: str, value: str, read: Callable[[Settings], bool], monkeypatch: pytest.MonkeyPatch
) -> None:
    """The README writes lists comma-separated; pydantic-settings alone stops the server on anything but JSON."""
    monkeypatch.setenv(variable, value)
    assert read(load_settings())


def test_a_bad_list_item_from_the_environment_is_a_clear_error(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("SYMPHONY_CODE__LANGUAGES", "python,ruby")
    with pytest.raises(ValidationError, match="'python' or 'bash'"):
        load_settings()
