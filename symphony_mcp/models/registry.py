"""The models of one process: a client per role over one shared HTTP connection pool, and their usage."""

from __future__ import annotations

import httpx
from pydantic import BaseModel, Field

from symphony_mcp.config import MODEL_ROLES, ModelRole, ModelsSettings
from symphony_mcp.errors import SymphonyError
from symphony_mcp.models.client import ChatClient
from symphony_mcp.models.endpoints import is_configured, resolve_endpoint
from symphony_mcp.models.usage import RoleUsage, UsageLedger


class RoleStatus(BaseModel):
    role: ModelRole
    configured: bool
    model: str | None = None
    base_url: str | None = None
    problem: str | None = Field(None, description="why calls would fail, e.g. a missing API key variable")
    usage: RoleUsage = Field(default_factory=RoleUsage)


class ModelStatus(BaseModel):
    """What model_status returns: each role's endpoint and usage, and the grounding family in use."""

    roles: list[RoleStatus]
    grounding_family: str


class ModelRegistry:
    """Hands out role clients; settings are read on each call, so a role can be configured late."""

    def __init__(self, settings: ModelsSettings) -> None:
        self.settings = settings
        self.usage = UsageLedger()
        self._http: httpx.AsyncClient | None = None

    def client(self, role: ModelRole) -> ChatClient:
        """The role's client, or ModelNotConfiguredError naming the settings to give."""
        endpoint = resolve_endpoint(self.settings, role)
        if self._http is None:
            # Timeouts are per request (per role); the pool is shared.
            self._http = httpx.AsyncClient(timeout=None, follow_redirects=True)
        return ChatClient(endpoint, self._http, self.usage)

    def is_configured(self, role: ModelRole) -> bool:
        return is_configured(self.settings, role)

    def status(self) -> list[RoleStatus]:
        usage = self.usage.snapshot()
        statuses = []
        for role in MODEL_ROLES:
            status = RoleStatus(role=role, configured=self.is_configured(role), usage=usage.get(role, RoleUsage()))
            if status.configured:
                try:
                    endpoint = resolve_endpoint(self.settings, role)
                    status.model, status.base_url = endpoint.model, endpoint.base_url
                except SymphonyError as exc:
                    status.problem = str(exc)
            statuses.append(status)
        return statuses

    async def aclose(self) -> None:
        if self._http is not None:
            await self._http.aclose()
            self._http = None
