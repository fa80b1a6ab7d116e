"""Opening an Xlib connection with an error the caller can act on."""

from __future__ import annotations

import os
from typing import Any

from symphony_mcp.errors import DisplayUnavailableError


def open_display(purpose: str, display_name: str | None = None) -> Any:
    """An Xlib Display for `purpose` (named in the error), e.g. 'typing' or 'window management'."""
    if display_name is None and not os.environ.get("DISPLAY"):
        raise DisplayUnavailableError(
            "no display: DISPLAY is not set. Start the server with a virtual display "
            "(`symphony-mcp serve --virtual-display always`) or pass DISPLAY to it"
        )
    check_xlib()
    from Xlib import display as xdisplay
    from Xlib.error import DisplayError

    try:
        return xdisplay.Display(display_name)
    except DisplayError as exc:
        raise DisplayUnavailableError(f"cannot open X display for {purpose}: {exc}") from exc


# python-xlib's first release with the XTest, RandR and keymap calls used here.
_XLIB_NEEDED = (0, 33)


def check_xlib() -> None:
    """Refuse the `Xlib` of python3-xlib 0.15 (pulled in by pyautogui, e.g. through the `osworld` extra), which
    shares python-xlib's package name and, installed after it, replaces it: it then fails on every display without
    ~/.Xauthority. The message names the clash and the fix."""
    import Xlib

    version = tuple(getattr(Xlib, "__version__", (0, 0)))
    if version < _XLIB_NEEDED:
        raise DisplayUnavailableError(
            f"the installed Xlib package is {'.'.join(map(str, version))}, from python3-xlib (a dependency of "
            "pyautogui), which has overwritten python-xlib's; symphony-mcp needs python-xlib >= 0.33. Fix: "
            "`pip uninstall -y python3-xlib && pip install --force-reinstall --no-deps 'python-xlib>=0.33'`, or "
            "install from the lock (pip install --no-deps --require-hashes -r locks/server.txt)"
        )
