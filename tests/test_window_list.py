"""The window list is kept while X reports no change to it, and read again when a window moves, is retitled, is
raised or closes (x11_windows.py), on Xvfb with openbox and real Tk and xterm windows."""

from __future__ import annotations

import subprocess
from collections.abc import Iterator

import pytest
from Xlib import Xatom
from Xlib import display as xdisplay_module

from symphony_mcp.desktop.types import WindowInfo
from symphony_mcp.desktop.virtual_display import VirtualDisplay
from symphony_mcp.desktop.x11_windows import X11WindowManager
from testkit.tk_probe import TkProbe
from testkit.waiting import wait_for


@pytest.fixture
def manager(xdisplay: VirtualDisplay) -> Iterator[X11WindowManager]:
    manager = X11WindowManager()
    yield manager
    manager.close()


@pytest.fixture
def other_client(xdisplay: VirtualDisplay) -> Iterator[xdisplay_module.Display]:
    """Another X client (as a user's or an application's requests would come)."""
    connection = xdisplay_module.Display()
    yield connection
    connection.close()


def titled(manager: X11WindowManager, title: str) -> WindowInfo | None:
    return next((w for w in manager.list_windows() if w.title == title), None)


def fresh_reading(title: str) -> WindowInfo | None:
    manager = X11WindowManager()
    try:
        return titled(manager, title)
    finally:
        manager.close()


def test_window_list_is_kept_until_x_reports_a_change(
    manager: X11WindowManager, other_client: xdisplay_module.Display, tk_probe: TkProbe
) -> None:
    probe = wait_for(lambda: titled(manager, "Symphony Probe"))
    window = other_client.create_resource_object("window", int(probe.id, 16))

    # Nothing changed: the same list (the very objects read before), not read again.
    assert all(a is b for a, b in zip(manager.list_windows(), manager.list_windows(), strict=True))
    # A property the list does not show (set on every click) keeps it too.
    user_time = other_client.intern_atom("_NET_WM_USER_TIME")
    window.change_property(user_time, Xatom.CARDINAL, 32, [12345])
    other_client.sync()
    kept = manager.list_windows()
    assert any(w is probe for w in kept)

    # Moved (the window manager moves its frame): the list says where it is now.
    assert probe.rect is not None
    window.configure(x=probe.rect.left + 40, y=probe.rect.top + 30)
    other_client.sync()
    moved = wait_for(lambda: (w := titled(manager, "Symphony Probe")) and w.rect != probe.rect and w)
    assert moved == fresh_reading("Symphony Probe")  # where a manager that keeps nothing sees it

    # Retitled: the new title.
    net_wm_name = other_client.intern_atom("_NET_WM_NAME")
    window.change_property(net_wm_name, other_client.intern_atom("UTF8_STRING"), 8, b"Renamed Probe")
    other_client.sync()
    renamed = wait_for(lambda: titled(manager, "Renamed Probe"))
    assert renamed.id == probe.id

    # Another window opened, raised and closed: in the list, active, then gone.
    xterm = subprocess.Popen(["xterm", "-T", "Raised Xterm", "-geometry", "40x5+60+60", "-e", "cat"])
    try:
        opened = wait_for(lambda: titled(manager, "Raised Xterm"), timeout=30)
        manager.activate(opened.id)
        assert wait_for(lambda: (w := titled(manager, "Raised Xterm")) and w.active)
        assert not wait_for(lambda: titled(manager, "Renamed Probe")).active
        manager.activate(probe.id)
        assert wait_for(lambda: (w := titled(manager, "Renamed Probe")) and w.active)
    finally:
        xterm.terminate()
        xterm.wait(timeout=5)
    wait_for(lambda: titled(manager, "Raised Xterm") is None)
