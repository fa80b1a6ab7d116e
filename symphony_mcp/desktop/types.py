"""Typed values the desktop backend exchanges with its callers."""

from __future__ import annotations

from typing import Literal

from pydantic import BaseModel, Field

from symphony_mcp.imaging.geometry import Rect

MouseButton = Literal["left", "middle", "right"]


class MonitorInfo(BaseModel):
    """One capture target as mss numbers them: 0 is the union of all monitors, 1.. are physical."""

    index: int
    screen_rect: Rect = Field(description="the monitor's area in absolute screen pixels")
    primary: bool = False


class MachineInfo(BaseModel):
    """Which machine a desktop is: the backend that reaches it, its address, its platform and its X display."""

    backend: Literal["local", "osworld", "waa", "ssh"]
    url: str | None = Field(description="the remote machine's address; None for this host's display")
    platform: str = Field(description="the machine's sys.platform name: linux, darwin, win32")
    display: str | None = Field(description="the machine's X display, when known")


class Launched(BaseModel):
    """A program open_app started: its process, its command line, and for a file the application chosen."""

    pid: int
    command: list[str] = Field(description="what was started, programs as absolute paths")
    opened_with: str | None = Field(
        None, description="for a file: the application it was opened with and why (its default for the file's type)"
    )


class WindowInfo(BaseModel):
    """A top-level window as the window manager reports it."""

    id: str = Field(description="window id (hex on X11); pass it to focus_window")
    title: str
    app: str = Field(description="application class (WM_CLASS on X11)")
    pid: int | None = None
    rect: Rect | None = Field(None, description="the window's frame, in the result's space")
    active: bool = False
    desktop: int | None = None
