"""Model endpoints per role (models/endpoints.py): role, default and built-in settings merged, keys, the environment."""

from __future__ import annotations

import pytest

from symphony_mcp.config import ModelsSettings, load_settings
from symphony_mcp.errors import ModelAuthError, ModelNotConfiguredError
from symphony_mcp.models.endpoints import resolve_endpoint


def test_endpoint_resolution_merges_role_default_and_built_ins(monkeypatch: pytest.MonkeyPatch) -> None:
    models = ModelsSettings.model_validate(
        {
            "default": {"base_url": "http://vllm:8000/v1", "model": "general", "timeout": 30},
            "grounder": {"model": "ui-tars", "api_key_env": "TEST_GROUNDER_KEY"},
        }
    )
    monkeypatch.setenv("TEST_GROUNDER_KEY", "secret")
    grounder = resolve_endpoint(models, "grounder")
    assert (grounder.base_url, grounder.model, grounder.timeout, grounder.api_key) == (
        "http://vllm:8000/v1",
        "ui-tars",
        30,
        "secret",
    )
    assert grounder.max_tokens == 256 and grounder.temperature == 0
    assert "secret" not in repr(grounder)
    orchestrator = resolve_endpoint(models, "orchestrator")
    assert (orchestrator.model, orchestrator.temperature, orchestrator.api_key) == ("general", 0.1, None)
    monkeypatch.delenv("TEST_GROUNDER_KEY")
    with pytest.raises(ModelAuthError, match="TEST_GROUNDER_KEY, which is not set"):
        resolve_endpoint(models, "grounder")
    # A role with its own endpoint does not get the default endpoint's key.
    keyed = ModelsSettings.model_validate(
        {
            "default": {"base_url": "https://api.example/v1", "model": "big", "api_key": "sk-default"},
            "grounder": {"base_url": "http://gpu:8000/v1", "model": "ui-tars"},
            "memoryer": {"model": "small"},
        }
    )
    assert resolve_endpoint(keyed, "grounder").api_key is None
    assert resolve_endpoint(keyed, "memoryer").api_key == "sk-default"
    with pytest.raises(ModelNotConfiguredError, match="SYMPHONY_MODELS__CODER__BASE_URL"):
        resolve_endpoint(ModelsSettings.model_validate({"coder": {"model": "m"}}), "coder")


def test_role_settings_come_from_the_environment(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("SYMPHONY_MODELS__GROUNDER__BASE_URL", "http://127.0.0.1:9/v1")
    monkeypatch.setenv("SYMPHONY_MODELS__GROUNDER__MODEL", "ui-tars-1.5-7b")
    monkeypatch.setenv("SYMPHONY_MODELS__GROUNDER__EXTRA_BODY", '{"top_k": 1}')
    monkeypatch.setenv("SYMPHONY_GROUNDING__FAMILY", "gta1")
    settings = load_settings()
    endpoint = resolve_endpoint(settings.models, "grounder")
    assert endpoint.model == "ui-tars-1.5-7b" and endpoint.extra_body == {"top_k": 1}
    assert settings.grounding.family == "gta1"
