"""The accessibility bus on a display the server owns, and the environment that makes applications join it.

AT-SPI applications and readers find the accessibility bus through the display (at-spi-bus-launcher puts its
address on the X root window, property AT_SPI_BUS), so one bus per display serves every process on it. The
launcher needs a D-Bus session bus to run under: a private `dbus-daemon --session` is started first. On a user's
own desktop both are usually running already and nothing is started.
"""

from __future__ import annotations

import logging
import os
import shutil
import subprocess
from dataclasses import dataclass, field
from pathlib import Path

from symphony_mcp.errors import DisplayUnavailableError

log = logging.getLogger(__name__)
BUS_LAUNCHER = Path("/usr/libexec/at-spi-bus-launcher")
ACCESSIBILITY_FIX = "apt-get install -y at-spi2-core dbus (the accessibility bus; elements reads the tree over it)"
# What makes each toolkit register with the bus: Chromium and Electron (with the flag below), Qt 5/6, GTK 2
# (GTK 3 and 4 always do); and no toolkit told to stay off it.
APP_ENVIRONMENT = {
    "ACCESSIBILITY_ENABLED": "1",
    "QT_LINUX_ACCESSIBILITY_ALWAYS_ON": "1",
    "QT_ACCESSIBILITY": "1",
    "GTK_MODULES": "gail:atk-bridge",
}
CHROMIUM_PROGRAMS = frozenset({"chromium", "chromium-browser", "google-chrome", "google-chrome-stable", "chrome"})
CHROMIUM_FLAG = "--force-renderer-accessibility"


@dataclass
class AccessibilityBus:
    session_address: str
    processes: list[subprocess.Popen[bytes]] = field(default_factory=list)


def start_accessibility_bus(
    display: str,
    prefix: list[str],
    timeout: float = 10.0,
    *,
    env: dict[str, str] | None = None,
    listen: str | None = None,
) -> AccessibilityBus | None:
    """A session bus and the AT-SPI bus launcher for `display`; None (with a warning) when they are not installed,
    as the server still works without them, only elements has nothing to read. `env` is the buses' environment
    (ours by default; the services the session bus starts on demand, e.g. dconf's, inherit it) and `listen` the
    session bus's address (its configuration's by default)."""
    daemon = shutil.which("dbus-daemon")
    if daemon is None or not BUS_LAUNCHER.exists():
        log.warning("no accessibility bus on %s (elements will read nothing): %s", display, ACCESSIBILITY_FIX)
        return None
    base = os.environ if env is None else env
    session = subprocess.Popen(
        [*prefix, daemon, "--session", "--nofork", "--print-address=1", *([f"--address={listen}"] if listen else [])],
        env=base,
        stdin=subprocess.DEVNULL,
        stdout=subprocess.PIPE,
        stderr=subprocess.DEVNULL,
    )
    assert session.stdout is not None
    address = session.stdout.readline().decode().strip()  # printed once the bus listens
    session.stdout.close()
    if not address:
        session.wait()
        raise DisplayUnavailableError(f"dbus-daemon exited (status {session.returncode}) before giving its address")
    launcher = subprocess.Popen(
        [*prefix, str(BUS_LAUNCHER), "--launch-immediately"],
        env={**base, "DISPLAY": display, "DBUS_SESSION_BUS_ADDRESS": address, **APP_ENVIRONMENT},
        stdin=subprocess.DEVNULL,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    return AccessibilityBus(session_address=address, processes=[launcher, session])


def app_environment(env: dict[str, str]) -> dict[str, str]:
    """`env` with the variables that make applications expose their accessibility trees and find the display's
    bus (a user's own settings of them win).

    Qt 6 finds the bus only through the session bus (org.a11y.Bus) or AT_SPI_BUS_ADDRESS, never through the root
    window property GTK and Chromium read: measured, a Qt window started with no session bus in its environment
    exposed nothing, and with AT_SPI_BUS_ADDRESS from the root window its whole tree."""
    address = None if "AT_SPI_BUS_ADDRESS" in env else display_bus_address(env.get("DISPLAY"))
    return {**APP_ENVIRONMENT, **({"AT_SPI_BUS_ADDRESS": address} if address else {}), **env}


def display_bus_address(display: str | None) -> str | None:
    """The address of the accessibility bus `display` serves (its root window's AT_SPI_BUS), None when it has none
    or cannot be reached."""
    if not display:
        return None
    from Xlib import X
    from Xlib import display as xlib_display
    from Xlib import error as xlib_error

    try:
        connection = xlib_display.Display(display)
    except (xlib_error.DisplayError, OSError):
        return None
    try:
        atom = connection.intern_atom("AT_SPI_BUS", only_if_exists=True)
        found = connection.screen().root.get_full_property(atom, X.AnyPropertyType) if atom else None
    finally:
        connection.close()
    if found is None:
        return None
    value = found.value
    return (value.decode() if isinstance(value, bytes) else str(value)).strip() or None


def app_arguments(argv: list[str]) -> list[str]:
    """`argv` with Chromium's renderer accessibility turned on, which it needs to expose web content."""
    if Path(argv[0]).name in CHROMIUM_PROGRAMS and CHROMIUM_FLAG not in argv:
        return [argv[0], CHROMIUM_FLAG, *argv[1:]]
    return argv
