"""Token and call accounting per role, so runs can report what each agent cost."""

from __future__ import annotations

import threading

from pydantic import BaseModel, Field


class TokenUsage(BaseModel):
    prompt_tokens: int = 0
    completion_tokens: int = 0
    total_tokens: int = 0


class RoleUsage(BaseModel):
    calls: int = Field(0, description="successful calls")
    failed_calls: int = 0
    retries: int = Field(0, description="extra attempts after 429/5xx/timeouts")
    refused_answers: int = Field(
        0, description="answers that could not be used (format, range), each re-asked or reported"
    )
    prompt_tokens: int = 0
    completion_tokens: int = 0
    total_tokens: int = 0
    model_ms: float = Field(0.0, description="total time spent waiting for the endpoint")


class UsageLedger:
    """Thread-safe running totals per role."""

    def __init__(self) -> None:
        self._roles: dict[str, RoleUsage] = {}
        self._lock = threading.Lock()

    def record(self, role: str, tokens: TokenUsage | None, retries: int, elapsed_ms: float, ok: bool) -> None:
        with self._lock:
            usage = self._roles.setdefault(role, RoleUsage())
            usage.retries += retries
            usage.model_ms = round(usage.model_ms + elapsed_ms, 2)
            if not ok:
                usage.failed_calls += 1
                return
            usage.calls += 1
            if tokens is not None:
                usage.prompt_tokens += tokens.prompt_tokens
                usage.completion_tokens += tokens.completion_tokens
                usage.total_tokens += tokens.total_tokens

    def refused(self, role: str) -> None:
        """One answer of `role`'s model could not be used (models/reask.py)."""
        with self._lock:
            self._roles.setdefault(role, RoleUsage()).refused_answers += 1

    def snapshot(self) -> dict[str, RoleUsage]:
        with self._lock:
            return {role: usage.model_copy() for role, usage in self._roles.items()}
