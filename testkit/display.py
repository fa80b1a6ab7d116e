"""The tests' desktop: a real Xvfb with openbox at a fixed size, programs rendered with the repository's fonts,
and waits for the window manager to catch up."""

from __future__ import annotations

import contextlib
import os
import tempfile
import time
from collections.abc import Iterator
from pathlib import Path

from symphony_mcp.config import DisplaySettings
from symphony_mcp.desktop.virtual_display import VirtualDisplay, start_virtual_display
from symphony_mcp.desktop.x11_windows import X11WindowManager
from testkit.paths import FONTS_CONF
from testkit.waiting import wait_for

SCREEN = (1920, 1080)
DEJAVU = Path("/usr/share/fonts/truetype/dejavu/DejaVuSans.ttf")


def isolate_environment() -> None:
    """Set before any program starts, inherited by each: the repository's fonts (other fonts change a page's layout
    and what is inside its viewport) and a fresh state directory (trajectories and the audit log never go to the
    user's own ~/.local/state)."""
    os.environ["FONTCONFIG_FILE"] = str(FONTS_CONF)
    os.environ["XDG_STATE_HOME"] = tempfile.mkdtemp(prefix="symphony-tests-state-")


@contextlib.contextmanager
def desktop() -> Iterator[VirtualDisplay]:
    """Xvfb + openbox at SCREEN, started by the package's own virtual-display code, as this process's DISPLAY."""
    if not DEJAVU.exists():
        raise RuntimeError(f"fonts-dejavu-core is not installed; the tests render with it only ({FONTS_CONF})")
    display = start_virtual_display(DisplaySettings(resolution=f"{SCREEN[0]}x{SCREEN[1]}", window_manager="openbox"))
    previous = os.environ.get("DISPLAY")
    os.environ["DISPLAY"] = display.name
    try:
        yield display
    finally:
        display.stop()
        if previous is None:
            os.environ.pop("DISPLAY", None)
        else:
            os.environ["DISPLAY"] = previous


def wait_for_active_window(title: str, timeout: float = 10.0) -> None:
    manager = X11WindowManager()
    try:
        wait_for(lambda: (active := manager.active()) is not None and active.title == title, timeout)
    finally:
        manager.close()


def wait_for_window_manager(timeout: float = 60.0) -> None:
    """Block until the window manager has handled every event sent before this call (an EWMH round trip).

    Typing characters the keymap lacks rebinds spare keycodes, and each rebinding makes openbox re-grab its keys:
    beside two busy loops it was measured 11.5 s behind after one test's typing, so the next test's window was not
    managed within that test's 10 s wait, or was clicked while openbox was still framing it. The request is sent
    again each second: one sent before openbox listens on a fresh display is never answered.
    """
    from Xlib import X, display, protocol

    connection = display.Display()
    try:
        root = connection.screen().root
        window = root.create_window(0, 0, 1, 1, 0, X.CopyFromParent)
        extents = connection.intern_atom("_NET_FRAME_EXTENTS")
        request = protocol.event.ClientMessage(
            window=window, client_type=connection.intern_atom("_NET_REQUEST_FRAME_EXTENTS"), data=(32, [0] * 5)
        )
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            root.send_event(request, event_mask=X.SubstructureRedirectMask | X.SubstructureNotifyMask)
            connection.flush()
            with contextlib.suppress(AssertionError):
                wait_for(lambda: window.get_full_property(extents, X.AnyPropertyType) is not None, timeout=1.0)
                return
        raise AssertionError(f"the window manager did not answer within {timeout} s")
    finally:
        connection.close()


def paint_root(display: str, rgb: tuple[int, int, int]) -> None:
    """Fill the root window (the desktop under every window) with one colour (24-bit TrueColor: the pixel value is
    0xRRGGBB)."""
    from Xlib import display as xlib_display

    connection = xlib_display.Display(display)
    try:
        root = connection.screen().root
        root.change_attributes(background_pixel=(rgb[0] << 16) | (rgb[1] << 8) | rgb[2])
        root.clear_area(0, 0, 0, 0)
        connection.sync()
    finally:
        connection.close()
