"""Errors a caller can act on.

Cores raise these; the MCP layer turns them into tool errors whose text reaches the model,
so every message says what was wrong and what is allowed.
"""

from __future__ import annotations

from symphony_mcp.limits import MAX_ECHO, MAX_ERROR_MESSAGE


class SymphonyError(Exception):
    """Base of every error whose message is meant for the caller."""


class InvalidInputError(SymphonyError, ValueError):
    """The request was malformed or out of range; nothing was changed."""


class SettingsError(SymphonyError, ValueError):
    """A flag or setting is wrong (a name that matches nothing, a combination refused); the message says what is
    allowed. The command line exits with its usage status for it, as for a flag argparse refuses."""


class DisplayUnavailableError(SymphonyError, RuntimeError):
    """No display can be reached (no DISPLAY, X server gone, or capture failed)."""


class RemoteActionError(SymphonyError, RuntimeError):
    """A remote machine's controller ran the action and it failed, or refused it; its exit status and error say why."""


class ModelNotConfiguredError(SymphonyError, RuntimeError):
    """A tool needs a model endpoint for a role that has none configured."""


class ModelError(SymphonyError, RuntimeError):
    """A model endpoint call failed; the message names the role, the endpoint and the setting to check."""


class ModelAuthError(ModelError):
    """The endpoint refused the credentials (HTTP 401/403)."""


class ModelNotFoundError(ModelError):
    """Wrong base URL or model name (HTTP 404)."""


class ModelContextLengthError(ModelError):
    """The request is longer than the model's context window."""


class ModelUnavailableError(ModelError):
    """Rate limits, server errors, timeouts or an unreachable endpoint outlasted the retries."""


class ModelAnswerError(ModelError):
    """The model answered, but not in a form that can be used, also after being re-asked (models/reask.py).

    `answers` are what it wrote, the last one last; `reasons` why each was refused; `model_ms` the wait for them all.
    """

    def __init__(
        self, message: str, answers: tuple[str, ...] = (), reasons: tuple[str, ...] = (), model_ms: float = 0.0
    ) -> None:
        super().__init__(message)
        self.answers = answers
        self.reasons = reasons
        self.model_ms = model_ms


class PolicyError(SymphonyError, PermissionError):
    """The user's policy (settings group `policy`) does not allow this; nothing was done."""


def clip(value: object, limit: int = MAX_ECHO) -> str:
    """`value` as repr() for a message, at most about `limit` characters: callers must not get their input back
    in bulk (a 10 MB phrase used to come back as a 10 MB error) and logs must not fill with it."""
    text = repr(value)
    if len(text) <= limit:
        return text
    return f"{text[:limit]}... ({len(text) - limit} more characters)"


def clip_message(message: str, limit: int = MAX_ERROR_MESSAGE) -> str:
    """A whole message cut to `limit` characters: the last guard on whatever an error or log line repeats."""
    if len(message) <= limit:
        return message
    return f"{message[:limit]}... ({len(message) - limit} more characters)"
