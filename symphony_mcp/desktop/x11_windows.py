"""Top-level windows on X11 through EWMH properties (any EWMH window manager: openbox, xfwm, mutter...)."""

from __future__ import annotations

import time
from typing import Any

from symphony_mcp.desktop.types import WindowInfo
from symphony_mcp.desktop.x11_display import open_display
from symphony_mcp.errors import DisplayUnavailableError, InvalidInputError, clip
from symphony_mcp.imaging.geometry import Rect

# The properties a listing reads: a change to any other (e.g. _NET_WM_USER_TIME, set on every click) keeps it.
LISTED_PROPERTIES = (
    "_NET_CLIENT_LIST",
    "_NET_CLIENT_LIST_STACKING",
    "_NET_ACTIVE_WINDOW",
    "_NET_WM_NAME",
    "WM_NAME",
    "WM_CLASS",
    "_NET_WM_PID",
    "_NET_WM_DESKTOP",
)


class X11WindowManager:
    """Reads and drives the window manager; used from the desktop thread only.

    The window list is kept and read again only when X reports a change that can alter it: a window created,
    mapped, unmapped, moved, resized, restacked or destroyed (SubstructureNotify on the root: the top-level
    windows, frames included) or a listed property changed (PropertyNotify on the root and on each listed
    window). Why: listing 5 windows takes ~35 X round trips, 9 ms on a quiet machine and up to ~105 ms under
    load, and the elements reader needs the list after every change of the screen's pixels (a page scrolled);
    checking for events costs one round trip."""

    def __init__(self, display_name: str | None = None) -> None:
        from Xlib import X

        self._display = open_display("window management", display_name)
        self._root = self._display.screen().root
        self._root.change_attributes(event_mask=X.PropertyChangeMask | X.SubstructureNotifyMask)
        self._listed_atoms = {self._atom(name) for name in LISTED_PROPERTIES}
        self._watched: set[int] = set()  # the client windows whose property changes we are told of
        self._listed: list[WindowInfo] | None = None

    def _atom(self, name: str) -> int:
        return int(self._display.intern_atom(name))

    def _property(self, window: Any, name: str, kind: int = 0) -> Any:
        from Xlib import X
        from Xlib.error import XError

        try:
            prop = window.get_full_property(self._atom(name), kind or X.AnyPropertyType)
        except XError:
            return None
        return None if prop is None else prop.value

    def _require_ewmh(self) -> list[int]:
        clients = self._property(self._root, "_NET_CLIENT_LIST")
        if clients is None:
            raise DisplayUnavailableError(
                "no EWMH window manager is running on this display, so windows cannot be listed or "
                "focused; start one (e.g. openbox) or let `symphony-mcp serve` start a virtual display"
            )
        return [int(w) for w in clients]

    def list_windows(self) -> list[WindowInfo]:
        """The top-level windows: the kept list when X reported nothing that changes it since it was read."""
        self._display.sync()  # one round trip: every event the server sent before it is now queued here
        self._forget_on_change()  # before reading: a change during the read is seen by the next call
        if self._listed is None:
            self._listed = self._read_windows()
        return list(self._listed)

    def _forget_on_change(self) -> None:
        """Consume the queued events; the kept list is dropped when one of them can change it. Also run after other
        requests, so that events do not pile up between listings."""
        from Xlib import X

        while self._display.pending_events():
            event = self._display.next_event()
            if event.type != X.PropertyNotify or event.atom in self._listed_atoms:
                self._listed = None

    def _read_windows(self) -> list[WindowInfo]:
        active = self._property(self._root, "_NET_ACTIVE_WINDOW")
        active_id = int(active[0]) if active is not None and len(active) else None
        clients = self._require_ewmh()
        self._watch(clients)
        windows = []
        for wid in clients:
            info = self._describe(wid, active_id)
            if info is not None:
                windows.append(info)
        return windows

    def _watch(self, clients: list[int]) -> None:
        """Be told of property changes (title, class, pid, desktop) of windows not yet watched, before reading them."""
        from Xlib import X
        from Xlib.error import XError

        for wid in set(clients) - self._watched:
            try:
                self._display.create_resource_object("window", wid).change_attributes(event_mask=X.PropertyChangeMask)
            except XError:
                continue  # closed since the list was read: the next listing will not name it
        self._watched = set(clients)

    def _describe(self, wid: int, active_id: int | None) -> WindowInfo | None:
        from Xlib.error import XError

        window = self._display.create_resource_object("window", wid)
        try:
            title = self._text(window)
            wm_class = window.get_wm_class() or ("", "")
            pid = self._property(window, "_NET_WM_PID")
            desktop = self._property(window, "_NET_WM_DESKTOP")
            rect = self._frame_rect(window)
        except XError:
            return None  # the window closed while we looked at it
        return WindowInfo(
            id=hex(wid),
            title=title,
            app=wm_class[1] or wm_class[0],
            pid=int(pid[0]) if pid is not None and len(pid) else None,
            rect=rect,
            active=wid == active_id,
            desktop=int(desktop[0]) if desktop is not None and len(desktop) else None,
        )

    def _text(self, window: Any) -> str:
        name = self._property(window, "_NET_WM_NAME", self._atom("UTF8_STRING"))
        if name is not None:
            return name.decode("utf-8", "replace") if isinstance(name, bytes) else str(name)
        legacy = window.get_wm_name()
        return legacy.decode("latin-1") if isinstance(legacy, bytes) else (legacy or "")

    def _frame_rect(self, window: Any) -> Rect:
        geometry = window.get_geometry()
        origin = window.translate_coords(self._root, 0, 0)
        return Rect(left=-origin.x, top=-origin.y, width=geometry.width, height=geometry.height)

    def active(self) -> WindowInfo | None:
        active_id = self._active_id()
        info = None if not active_id else self._describe(active_id, active_id)
        self._forget_on_change()  # asked after every action: the events its replies brought in are consumed here
        return info

    def activate(self, window_id: str, timeout: float = 2.0) -> WindowInfo:
        """Ask the window manager to raise and focus the window, and wait until it reports it active."""
        from Xlib import X
        from Xlib.protocol import event

        wid = self._parse_id(window_id)
        window = self._display.create_resource_object("window", wid)
        message = event.ClientMessage(
            window=window,
            client_type=self._atom("_NET_ACTIVE_WINDOW"),
            data=(32, [2, X.CurrentTime, 0, 0, 0]),  # source 2: a pager/tool acting for the user
        )
        self._root.send_event(message, event_mask=X.SubstructureRedirectMask | X.SubstructureNotifyMask)
        self._display.flush()
        deadline = time.monotonic() + timeout
        while True:
            info = self._describe(wid, self._active_id())
            if info is not None and info.active:
                return info
            if time.monotonic() > deadline:
                raise InvalidInputError(f"window {window_id} did not become active within {timeout:g} s")
            time.sleep(0.02)

    def request_close(self, window_id: str, timeout: float = 2.0) -> bool:
        """Ask the window manager to close the window politely (the app may ask to save); True when it went."""
        from Xlib import X
        from Xlib.protocol import event

        wid = self._parse_id(window_id)
        window = self._display.create_resource_object("window", wid)
        message = event.ClientMessage(
            window=window, client_type=self._atom("_NET_CLOSE_WINDOW"), data=(32, [X.CurrentTime, 2, 0, 0, 0])
        )
        self._root.send_event(message, event_mask=X.SubstructureRedirectMask | X.SubstructureNotifyMask)
        self._display.flush()
        deadline = time.monotonic() + timeout
        while wid in self._require_ewmh():
            if time.monotonic() > deadline:
                return False
            time.sleep(0.02)
        return True

    def _active_id(self) -> int | None:
        active = self._property(self._root, "_NET_ACTIVE_WINDOW")
        return int(active[0]) if active is not None and len(active) else None

    def _parse_id(self, window_id: str) -> int:
        known = self._require_ewmh()
        try:
            wid = int(window_id, 0)
        except ValueError:
            wid = -1
        if wid not in known:
            raise InvalidInputError(
                f"no window with id {clip(window_id)}; call list_windows for the ids of the open windows"
            )
        return wid

    def close(self) -> None:
        self._display.close()
