"""Opening an Xlib connection with an error the caller can act on."""

from __future__ import annotations

from typing import Any

from symphony_mcp.errors import DisplayUnavailableError


def open_display(purpose: str, display_name: str | None = None) -> Any:
    """An Xlib Display for `purpose` (named in the error), e.g. 'typing' or 'window management'."""
    from Xlib import display as xdisplay
    from Xlib.error import DisplayError

    try:
        return xdisplay.Display(display_name)
    except DisplayError as exc:
        raise DisplayUnavailableError(f"cannot open X display for {purpose}: {exc}") from exc
