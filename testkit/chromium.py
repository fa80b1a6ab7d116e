"""How to run the system Chromium offline: which binary, and the flags that keep it quiet.

Debian's /usr/bin/chromium is a shell wrapper; the real binary sits in /usr/lib/chromium. Without
the background-networking flags Chromium floods a closed network with refused connections.
"""

from __future__ import annotations

import shutil
from pathlib import Path

_CANDIDATES = ("/usr/lib/chromium/chromium", "/usr/lib/chromium-browser/chromium-browser")
QUIET_ARGS = (
    "--no-sandbox",
    "--disable-gpu",
    "--no-first-run",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
    "--disable-quic",
)
# Kiosk, unscaled: the page fills the screen and CSS pixels are screen pixels.
KIOSK_ARGS = ("--kiosk", "--force-device-scale-factor=1", *QUIET_ARGS)


def chromium_executable() -> str | None:
    for candidate in _CANDIDATES:
        if Path(candidate).exists():
            return candidate
    return shutil.which("chromium") or shutil.which("chromium-browser")
