"""Resolve a role's endpoint: the role's own settings, then the `default` role's, then built-ins."""

from __future__ import annotations

import os
from dataclasses import dataclass, field
from typing import Any

from symphony_mcp.config import ModelEndpoint, ModelRole, ModelsSettings
from symphony_mcp.errors import ModelAuthError, ModelNotConfiguredError

_BUILT_IN: dict[str, Any] = {
    "temperature": 0.0,
    "max_tokens": 1024,
    "timeout": 120.0,
    "max_retries": 3,
    "backoff_seconds": 0.5,
    "image_format": "jpeg",
    "image_quality": 90,
    "image_max_side": 3840,
    "image_max_bytes": 5_000_000,
    "extra_body": {},
}
# OS-Symphony's orchestrator plans at temperature 0.1 (the paper's setting); a grounder answers with one short point.
_ROLE_BUILT_IN: dict[str, dict[str, Any]] = {
    "orchestrator": {"temperature": 0.1, "max_tokens": 2048},
    "grounder": {"max_tokens": 256},
}


def setting_name(role: str, field_name: str) -> str:
    """The environment variable that sets one field of one role, for messages."""
    return f"SYMPHONY_MODELS__{role.upper()}__{field_name.upper()}"


@dataclass(frozen=True)
class ResolvedEndpoint:
    """Everything needed to call one role's model; no field is left unset."""

    role: ModelRole
    base_url: str
    model: str
    api_key: str | None = field(repr=False)
    temperature: float
    max_tokens: int
    timeout: float
    max_retries: int
    backoff_seconds: float
    image_format: str
    image_quality: int
    image_max_side: int
    image_max_bytes: int
    extra_body: dict[str, Any]

    @property
    def chat_url(self) -> str:
        return self.base_url.rstrip("/") + "/chat/completions"

    def describe(self) -> str:
        return f"{self.role} model {self.model!r} at {self.base_url}"


def is_configured(models: ModelsSettings, role: ModelRole) -> bool:
    merged = _merge(models, role)
    return bool(merged.get("base_url") and merged.get("model"))


def resolve_endpoint(models: ModelsSettings, role: ModelRole) -> ResolvedEndpoint:
    """The role's complete endpoint, or an error naming the settings to give."""
    merged = _merge(models, role)
    missing = [name for name in ("base_url", "model") if not merged.get(name)]
    if missing:
        wanted = " and ".join(setting_name(role, name) for name in missing)
        raise ModelNotConfiguredError(
            f"no {role} model is configured: set {wanted} (or the same under SYMPHONY_MODELS__DEFAULT__, "
            f"or [models.{role}] in the config file)"
        )
    api_key_env = merged.pop("api_key_env", None)
    secret = merged.pop("api_key", None)
    api_key = secret.get_secret_value() if secret is not None else None
    if api_key is None and api_key_env:
        api_key = os.environ.get(api_key_env)
        if not api_key:
            raise ModelAuthError(
                f"{setting_name(role, 'api_key_env')} names the environment variable {api_key_env}, which is not set"
            )
    return ResolvedEndpoint(role=role, api_key=api_key, **{**_BUILT_IN, **_ROLE_BUILT_IN.get(role, {}), **merged})


def _merge(models: ModelsSettings, role: ModelRole) -> dict[str, Any]:
    own: ModelEndpoint = getattr(models, role)
    values = {name: value for name, value in models.default if value is not None}
    if own.base_url is not None and own.base_url != models.default.base_url:
        # The default's key belongs to the default's endpoint: never send it to another host.
        values.pop("api_key", None)
        values.pop("api_key_env", None)
    values.update({name: value for name, value in own if value is not None})
    return values
