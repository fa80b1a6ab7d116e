"""Errors a caller can act on.

Cores raise these; the MCP layer turns them into tool errors whose text reaches the model,
so every message says what was wrong and what is allowed.
"""


class SymphonyError(Exception):
    """Base of every error whose message is meant for the caller."""


class InvalidInputError(SymphonyError, ValueError):
    """The request was malformed or out of range; nothing was changed."""


class DisplayUnavailableError(SymphonyError, RuntimeError):
    """No display can be reached (no DISPLAY, X server gone, or capture failed)."""


class ModelNotConfiguredError(SymphonyError, RuntimeError):
    """A tool needs a model endpoint for a role that has none configured."""
