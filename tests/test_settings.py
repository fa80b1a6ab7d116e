"""Settings (config.py) and the command line that sets them (cli.py): precedence, flags into nested settings."""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest

from symphony_mcp.cli import build_parser, settings_from_args


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
