"""The desktop core the MCP tools call: coordinate mapping, validation, pacing and action records.

Coordinates from callers are in the pixel space of a screenshot image ("screenshot" space: the
latest screenshot, or the one named by frame_id) or in absolute screen pixels ("screen" space).
Before any screenshot, screenshot space means the image a default screenshot would have.
"""

from __future__ import annotations

import asyncio
import logging
import os
import sys
import time
from collections import OrderedDict
from collections.abc import Awaitable, Callable, Sequence
from typing import Any, Literal

from PIL import Image
from pydantic import BaseModel, Field

from symphony_mcp.config import Settings
from symphony_mcp.desktop.capture import Frame, select_monitor
from symphony_mcp.desktop.geometry import ImageMapping, Point, Rect
from symphony_mcp.desktop.models import MonitorInfo, MouseButton, WindowInfo
from symphony_mcp.desktop.protocol import Desktop
from symphony_mcp.desktop.runner import DesktopRunner
from symphony_mcp.errors import InvalidInputError
from symphony_mcp.memory.actions import ActionLog, ActionRecord, Grounding
from symphony_mcp.vision.encoding import EncodedImage, EncodeOptions, encode_image, target_size

log = logging.getLogger(__name__)
CoordinateSpace = Literal["screenshot", "screen"]
_FRAMES_KEPT = 64
_MAX_CLICKS = 10
_MAX_SCROLL = 200


class ScreenshotInfo(BaseModel):
    """Metadata of one screenshot; click coordinates are in this image's pixel space."""

    frame_id: str = Field(description="pass as frame_id to act in this image's coordinates")
    monitor: int
    area: Rect = Field(description="screen area shown, in screen pixels")
    screen_width: int = Field(description="width of the whole screen (all monitors) in pixels")
    screen_height: int
    image_width: int
    image_height: int
    scale: float = Field(description="image pixels per screen pixel (1.0 = full resolution)")
    format: str
    bytes: int
    cursor: Point | None = Field(None, description="pointer position in this image's pixels, if inside it")
    cursor_screen: Point | None = Field(None, description="pointer position in screen pixels")


class ScreenInfo(BaseModel):
    platform: str
    display: str | None
    monitors: list[MonitorInfo] = Field(description="0 is all monitors together, 1.. the physical ones")
    default_monitor: int
    screen: Rect = Field(description="the whole screen in screen pixels")
    screenshot_size: tuple[int, int] = Field(description="image size a default screenshot has")
    screenshot_scale: float
    cursor: Point


class OpenResult(BaseModel):
    target: str
    pid: int
    new_windows: list[WindowInfo] = Field(description="windows that appeared after launching")
    record: ActionRecord


class DesktopController:
    def __init__(self, settings: Settings, runner: DesktopRunner, actions: ActionLog) -> None:
        self.settings = settings
        self.runner = runner
        self.actions = actions
        self._mappings: OrderedDict[str, ImageMapping] = OrderedDict()
        self._latest_frame_id: str | None = None
        self._listeners: list[Callable[[ActionRecord], Awaitable[None]]] = []

    def add_action_listener(self, listener: Callable[[ActionRecord], Awaitable[None]]) -> None:
        """Call `listener` with every action record, after the action (e.g. to record trajectories)."""
        self._listeners.append(listener)

    # --- coordinates ---------------------------------------------------------------------------
    def _encode_options(
        self,
        format: str | None = None,
        quality: int | None = None,
        max_width: int | None = None,
        max_height: int | None = None,
    ) -> EncodeOptions:
        """The configured encoding, with per-call overrides where given."""
        shot = self.settings.screenshot
        return EncodeOptions(
            format=format or shot.format,
            quality=quality or shot.quality,
            max_width=max_width or shot.max_width,
            max_height=max_height or shot.max_height,
            max_bytes=shot.max_bytes,
        )

    async def _mapping(self, frame_id: str | None) -> tuple[ImageMapping, str | None]:
        if frame_id is not None:
            if frame_id not in self._mappings:
                raise InvalidInputError(
                    f"unknown frame_id {frame_id!r}: only the last {_FRAMES_KEPT} screenshots are kept "
                    f"(latest: {self._latest_frame_id or 'none yet'}); take a new screenshot"
                )
            return self._mappings[frame_id], frame_id
        if self._latest_frame_id is not None:
            return self._mappings[self._latest_frame_id], self._latest_frame_id
        area = await self.runner.run(lambda d: _monitor_rect(d, self.settings.display.monitor))
        return self._default_mapping(area), None

    def _default_mapping(self, area: Rect) -> ImageMapping:
        """How a default screenshot of `area` maps to the screen."""
        width, height = target_size(area.width, area.height, self._encode_options())
        return ImageMapping(area=area, image_width=width, image_height=height)

    async def to_screen(
        self, x: float, y: float, space: CoordinateSpace, frame_id: str | None
    ) -> tuple[Point, str | None]:
        """Map a caller's point to a screen pixel, refusing points outside the image or screen."""
        if space == "screen":
            if frame_id is not None:
                raise InvalidInputError("frame_id only applies to space='screenshot'")
            screen = await self.screen_rect()
            if not screen.contains(round(x), round(y)):
                raise InvalidInputError(
                    f"screen point ({x:g}, {y:g}) is off screen; the screen spans {screen.describe()}"
                )
            return Point(x=round(x), y=round(y)), None
        mapping, used = await self._mapping(frame_id)
        mapping.check_image_point(x, y)
        return mapping.to_screen(x, y), used

    # --- screen --------------------------------------------------------------------------------
    async def screen_info(self) -> ScreenInfo:
        monitors, cursor = await self.runner.run(lambda d: (d.monitors(), d.cursor()))
        default = self.settings.display.monitor
        if default >= len(monitors):
            default = 1
        mapping = self._default_mapping(monitors[default].rect)
        return ScreenInfo(
            platform=sys.platform,
            display=os.environ.get("DISPLAY"),
            monitors=monitors,
            default_monitor=default,
            screen=monitors[0].rect,
            screenshot_size=(mapping.image_width, mapping.image_height),
            screenshot_scale=round(mapping.scale_x, 6),
            cursor=cursor,
        )

    async def screen_rect(self) -> Rect:
        """The whole screen (all monitors) in screen pixels."""
        return await self.runner.run(lambda d: _monitor_rect(d, 0))

    async def capture(self, monitor: int | None = None, region: Rect | None = None) -> Frame:
        """Grab a full-resolution frame of a monitor or of a screen region."""
        return await self.runner.run(lambda d: self._grab(d, monitor, region))

    def _grab(self, desktop: Desktop, monitor: int | None, region: Rect | None) -> Frame:
        monitor_index = self.settings.display.monitor if monitor is None else monitor
        area = _monitor_rect(desktop, monitor_index)
        if region is not None:
            clipped = region.intersect(area)
            if clipped is None:
                raise InvalidInputError(
                    f"region {region.describe()} does not overlap monitor {monitor_index} ({area.describe()})"
                )
            area = clipped
        cursor = desktop.cursor()
        return Frame(image=desktop.grab(area), area=area, monitor=monitor_index, cursor=cursor)

    async def screenshot(
        self,
        monitor: int | None = None,
        region: tuple[float, float, float, float] | None = None,
        space: CoordinateSpace = "screenshot",
        frame_id: str | None = None,
        draw_cursor: bool | None = None,
        format: str | None = None,
        quality: int | None = None,
        max_width: int | None = None,
        max_height: int | None = None,
    ) -> tuple[EncodedImage, ScreenshotInfo]:
        options = self._encode_options(format, quality, max_width, max_height)
        region_rect = await self.region_to_screen(region, space, frame_id) if region else None
        want_marker = self.settings.screenshot.draw_cursor if draw_cursor is None else draw_cursor

        def grab_and_encode(desktop: Desktop) -> tuple[Frame, Rect, EncodedImage]:
            # One trip to the desktop thread: a screenshot is latency-bound.
            frame = self._grab(desktop, monitor, region_rect)
            cursor = frame.cursor
            marker = None
            if want_marker and cursor is not None and frame.area.contains(cursor.x, cursor.y):
                marker = (cursor.x - frame.area.left, cursor.y - frame.area.top)
            return frame, _monitor_rect(desktop, 0), encode_image(frame.image, options, marker)

        frame, screen, encoded = await self.runner.run(grab_and_encode)
        return encoded, self._describe(frame, screen, encoded)

    async def publish(self, frame: Frame, image: Image.Image) -> tuple[EncodedImage, ScreenshotInfo]:
        """Encode an image drawn over `frame` (e.g. annotated) so callers can act in its coordinates."""
        encoded = await asyncio.to_thread(encode_image, image, self._encode_options())
        screen = await self.screen_rect()
        return encoded, self._describe(frame, screen, encoded)

    def _describe(self, frame: Frame, screen: Rect, encoded: EncodedImage) -> ScreenshotInfo:
        """Remember the image's mapping (it becomes the latest frame) and describe it."""
        mapping = ImageMapping(area=frame.area, image_width=encoded.width, image_height=encoded.height)
        self._remember(frame.id, mapping)
        cursor_image = None
        if frame.cursor is not None and frame.area.contains(frame.cursor.x, frame.cursor.y):
            cx, cy = mapping.to_image(frame.cursor)
            cursor_image = Point(x=round(cx), y=round(cy))
        return ScreenshotInfo(
            frame_id=frame.id,
            monitor=frame.monitor,
            area=frame.area,
            screen_width=screen.width,
            screen_height=screen.height,
            image_width=encoded.width,
            image_height=encoded.height,
            scale=round(mapping.scale_x, 6),
            format=encoded.format,
            bytes=len(encoded.data),
            cursor=cursor_image,
            cursor_screen=frame.cursor,
        )

    async def image_points(self, points: Sequence[Point]) -> list[Point]:
        """Where screen pixels are in the latest screenshot (the default space of pointer tools)."""
        mapping, _ = await self._mapping(None)
        return [Point(x=round(x), y=round(y)) for x, y in map(mapping.to_image, points)]

    async def region_to_screen(
        self, region: tuple[float, float, float, float], space: CoordinateSpace, frame_id: str | None
    ) -> Rect:
        left, top, width, height = region
        if width <= 0 or height <= 0:
            raise InvalidInputError(f"region width and height must be positive, got {width:g}x{height:g}")
        if space == "screen":
            return Rect(left=round(left), top=round(top), width=round(width), height=round(height))
        mapping, _ = await self._mapping(frame_id)
        mapping.check_image_point(left, top)
        mapping.check_image_point(left + width - 1, top + height - 1)
        a = mapping.to_screen(left, top)
        b = mapping.to_screen(left + width - 1, top + height - 1)
        return Rect(left=a.x, top=a.y, width=b.x - a.x + 1, height=b.y - a.y + 1)

    def register_frame(self, frame: Frame) -> ImageMapping:
        """Make `frame` addressable by frame_id at the default screenshot size, without making it the latest.

        Used for frames a caller never saw as an image (e.g. the one a description was located on).
        """
        mapping = self._default_mapping(frame.area)
        self._remember(frame.id, mapping, latest=False)
        return mapping

    def _remember(self, frame_id: str, mapping: ImageMapping, latest: bool = True) -> None:
        self._mappings[frame_id] = mapping
        if latest:
            self._latest_frame_id = frame_id
        while len(self._mappings) > _FRAMES_KEPT:
            oldest = next(k for k in self._mappings if k != self._latest_frame_id)  # the latest always stays
            del self._mappings[oldest]

    # --- actions -------------------------------------------------------------------------------
    async def _perform(
        self,
        action: str,
        arguments: dict[str, Any],
        operation: Callable[[Desktop], object],
        summary: str,
        points: Sequence[Point] = (),
        frame_id: str | None = None,
        settle: bool = True,
        grounding: Sequence[Grounding] = (),
    ) -> ActionRecord:
        """Run one action on the desktop thread, let the UI settle, and record what happened."""
        started = time.time()
        error: str | None = None
        try:
            await self.runner.run(operation)
        except Exception as exc:
            error = str(exc) or type(exc).__name__
            raise
        finally:
            if settle and error is None:
                await asyncio.sleep(self.settings.input.settle_seconds)
            cursor, window = await self._post_state()
            record = ActionRecord(
                id=self.actions.next_id(),
                action=action,
                arguments=arguments,
                screen_points=list(points),
                frame_id=frame_id,
                ok=error is None,
                error=error,
                started_at=started,
                duration_ms=round((time.time() - started) * 1000, 2),
                cursor_after=cursor,
                active_window_after=window,
                summary=summary if error is None else f"{summary} -> failed: {error}",
                grounding=list(grounding),
            )
            self.actions.append(record)
            for listener in self._listeners:
                try:
                    await listener(record)
                except Exception:  # recording must never fail the action itself
                    log.exception("action listener failed for %s", record.summary)
        return record

    async def _post_state(self) -> tuple[Point | None, WindowInfo | None]:
        try:
            return await self.runner.run(lambda d: (d.cursor(), d.active_window()))
        except Exception:
            return None, None  # the display went away; the action's own outcome is what matters

    async def _keys(self, keys: Sequence[str]) -> list[str]:
        return await self.runner.run(lambda d: d.normalize_keys(keys))

    async def click(
        self,
        x: float,
        y: float,
        *,
        button: MouseButton = "left",
        count: int = 1,
        hold_keys: Sequence[str] = (),
        space: CoordinateSpace = "screenshot",
        frame_id: str | None = None,
        grounding: Sequence[Grounding] = (),
    ) -> ActionRecord:
        if not 1 <= count <= _MAX_CLICKS:
            raise InvalidInputError(f"count must be 1..{_MAX_CLICKS} (2 = double click), got {count}")
        held = await self._keys(hold_keys) if hold_keys else []
        point, used = await self.to_screen(x, y, space, frame_id)
        kind = {1: "click", 2: "double-click", 3: "triple-click"}.get(count, f"{count}x click")
        mods = f" with {'+'.join(held)} held" if held else ""
        return await self._perform(
            "click",
            {"x": x, "y": y, "button": button, "count": count, "hold_keys": list(hold_keys), "space": space},
            lambda d: d.click(point, button, count, held),
            f"{button} {kind} at screen ({point.x}, {point.y}){mods}",
            [point],
            used,
            grounding=grounding,
        )

    async def move(
        self,
        x: float,
        y: float,
        *,
        duration: float = 0.0,
        space: CoordinateSpace = "screenshot",
        frame_id: str | None = None,
    ) -> ActionRecord:
        _check_duration(duration)
        point, used = await self.to_screen(x, y, space, frame_id)
        return await self._perform(
            "move_pointer",
            {"x": x, "y": y, "duration": duration, "space": space},
            lambda d: d.move(point, duration),
            f"moved pointer to screen ({point.x}, {point.y})",
            [point],
            used,
        )

    async def drag(
        self,
        start: tuple[float, float],
        end: tuple[float, float],
        *,
        button: MouseButton = "left",
        hold_keys: Sequence[str] = (),
        duration: float = 0.3,
        space: CoordinateSpace = "screenshot",
        frame_id: str | None = None,
        grounding: Sequence[Grounding] = (),
    ) -> ActionRecord:
        _check_duration(duration)
        held = await self._keys(hold_keys) if hold_keys else []
        a, used = await self.to_screen(*start, space, frame_id)
        b, _ = await self.to_screen(*end, space, frame_id)
        return await self._perform(
            "drag_and_drop",
            {
                "start": list(start),
                "end": list(end),
                "button": button,
                "hold_keys": list(hold_keys),
                "duration": duration,
                "space": space,
            },
            lambda d: d.drag(a, b, button, held, duration),
            f"dragged from screen ({a.x}, {a.y}) to ({b.x}, {b.y})",
            [a, b],
            used,
            grounding=grounding,
        )

    async def scroll(
        self,
        *,
        vertical: int = 0,
        horizontal: int = 0,
        x: float | None = None,
        y: float | None = None,
        hold_keys: Sequence[str] = (),
        space: CoordinateSpace = "screenshot",
        frame_id: str | None = None,
        grounding: Sequence[Grounding] = (),
    ) -> ActionRecord:
        if vertical == 0 and horizontal == 0:
            raise InvalidInputError("give a non-zero vertical (positive = up) or horizontal (positive = right) amount")
        if max(abs(vertical), abs(horizontal)) > _MAX_SCROLL:
            raise InvalidInputError(f"scroll amounts must be within -{_MAX_SCROLL}..{_MAX_SCROLL} clicks")
        if (x is None) != (y is None):
            raise InvalidInputError("give both x and y to scroll at a point, or neither to scroll at the pointer")
        held = await self._keys(hold_keys) if hold_keys else []
        if x is not None and y is not None:
            point, used = await self.to_screen(x, y, space, frame_id)
        else:
            point, used = await self.runner.run(lambda d: d.cursor()), None
        return await self._perform(
            "scroll",
            {
                "vertical": vertical,
                "horizontal": horizontal,
                "x": x,
                "y": y,
                "hold_keys": list(hold_keys),
                "space": space,
            },
            lambda d: d.scroll(point, vertical, horizontal, held),
            f"scrolled {vertical:+d} vertical, {horizontal:+d} horizontal at screen ({point.x}, {point.y})",
            [point],
            used,
            grounding=grounding,
        )

    async def type_text(
        self,
        text: str,
        *,
        overwrite: bool = False,
        enter: bool = False,
        x: float | None = None,
        y: float | None = None,
        space: CoordinateSpace = "screenshot",
        frame_id: str | None = None,
        grounding: Sequence[Grounding] = (),
    ) -> ActionRecord:
        """Type into the focused element, or first click the field at (x, y) to focus it."""
        text = _check_text(text, self.settings.input.max_text_length, allow_empty=overwrite or enter)
        if (x is None) != (y is None):
            raise InvalidInputError("give both x and y to click the field first, or neither to type where focus is")
        target, used = (None, None) if x is None or y is None else await self.to_screen(x, y, space, frame_id)
        settle = self.settings.input.settle_seconds
        # Ctrl+End then Ctrl+Shift+Home selects a whole field in GTK, Qt, Chromium, Windows and Tk
        # (Tk binds Ctrl+A to "line start", so the usual Ctrl+A would prepend instead of replace).
        select_all = [["command", "a"]] if sys.platform == "darwin" else [["ctrl", "end"], ["ctrl", "shift", "home"]]

        def operation(desktop: Desktop) -> None:
            if target is not None:
                desktop.click(target, "left", 1, [])
                time.sleep(settle)  # keys sent right after a click into a browser can be lost
            if overwrite:
                for combo in select_all:
                    desktop.press(combo)
                desktop.press(["backspace"])
            if text:
                desktop.type_text(text)
            if enter:
                desktop.press(["enter"])

        preview = text if len(text) <= 60 else text[:57] + "..."
        where = f" into the field at screen ({target.x}, {target.y})" if target is not None else ""
        extras = "".join([" (replacing the field's text)" if overwrite else "", " then Enter" if enter else ""])
        return await self._perform(
            "type",
            {"text": text, "overwrite": overwrite, "enter": enter, "x": x, "y": y, "space": space},
            operation,
            f"typed {preview!r}{where}{extras}",
            [target] if target is not None else [],
            used,
            grounding=grounding,
        )

    async def hotkey(self, keys: Sequence[str]) -> ActionRecord:
        names = await self._keys(keys)
        return await self._perform(
            "hotkey", {"keys": list(keys)}, lambda d: d.press(names), f"pressed {'+'.join(names)}"
        )

    async def hold_and_press(self, hold_keys: Sequence[str], press_keys: Sequence[str]) -> ActionRecord:
        held, pressed = await self._keys(hold_keys), await self._keys(press_keys)
        return await self._perform(
            "hold_and_press",
            {"hold_keys": list(hold_keys), "press_keys": list(press_keys)},
            lambda d: d.hold_and_press(held, pressed),
            f"held {'+'.join(held)} and pressed {', '.join(pressed)}",
        )

    async def key_transition(self, key: str, down: bool) -> ActionRecord:
        (name,) = await self._keys([key])
        verb = "key_down" if down else "key_up"
        return await self._perform(
            verb,
            {"key": key},
            (lambda d: d.key_down(name)) if down else (lambda d: d.key_up(name)),
            f"{'pressed and held' if down else 'released'} {name}",
        )

    async def wait(self, seconds: float) -> ActionRecord:
        limit = self.settings.input.max_wait_seconds
        if not 0 <= seconds <= limit:
            raise InvalidInputError(f"seconds must be 0..{limit:g}, got {seconds:g}")
        await asyncio.sleep(seconds)
        return await self._perform("wait", {"seconds": seconds}, lambda d: None, f"waited {seconds:g} s", settle=False)

    # --- windows and apps ----------------------------------------------------------------------
    async def list_windows(self) -> list[WindowInfo]:
        return await self.runner.run(lambda d: d.windows())

    async def focus_window(self, window_id: str) -> ActionRecord:
        windows = await self.list_windows()
        if window_id not in {w.id for w in windows}:
            listing = ", ".join(f"{w.id} ({w.title!r})" for w in windows) or "none"
            raise InvalidInputError(f"no window with id {window_id!r}; open windows: {listing}")
        return await self._perform(
            "focus_window",
            {"window_id": window_id},
            lambda d: d.activate_window(window_id),
            f"focused window {window_id}",
        )

    async def close_window(self, window_id: str) -> ActionRecord:
        """Ask a window to close, as its close button would; the record says whether it went."""
        outcome: list[bool] = []
        record = await self._perform(
            "close_window",
            {"window_id": window_id},
            lambda d: outcome.append(d.close_window(window_id)),
            f"asked window {window_id} to close",
        )
        if outcome and not outcome[0]:
            record.summary += " (still open: it may be asking something, e.g. to save)"
        return record

    async def open(self, target: str, wait_seconds: float = 10.0) -> OpenResult:
        """Launch, then wait until a new window appears (or the wait runs out)."""
        if not 0 <= wait_seconds <= self.settings.input.max_wait_seconds:
            raise InvalidInputError(f"wait_seconds must be 0..{self.settings.input.max_wait_seconds:g}")
        before = {w.id for w in await self._windows_or_empty()}
        pids: list[int] = []
        record = await self._perform(
            "open", {"target": target}, lambda d: pids.append(d.open(target)), f"opened {target!r}", settle=False
        )
        deadline = time.monotonic() + wait_seconds
        new_windows: list[WindowInfo] = []
        while time.monotonic() < deadline:
            new_windows = [w for w in await self._windows_or_empty() if w.id not in before]
            if new_windows:
                break
            await asyncio.sleep(0.1)
        await asyncio.sleep(self.settings.input.settle_seconds)
        return OpenResult(target=target, pid=pids[0], new_windows=new_windows, record=record)

    async def _windows_or_empty(self) -> list[WindowInfo]:
        try:
            return await self.list_windows()
        except Exception:
            return []


def _monitor_rect(desktop: Desktop, index: int) -> Rect:
    return select_monitor(desktop.monitors(), index)


def _check_duration(duration: float) -> None:
    if not 0 <= duration <= 10:
        raise InvalidInputError(f"duration must be 0..10 seconds, got {duration:g}")


def _check_text(text: str, max_length: int, allow_empty: bool) -> str:
    text = text.replace("\r\n", "\n").replace("\r", "\n")
    if not text and not allow_empty:
        raise InvalidInputError("text is empty; give the characters to type (use hotkey for single keys)")
    if len(text) > max_length:
        raise InvalidInputError(
            f"text is {len(text)} characters; one call types at most {max_length} "
            "(split it, or raise SYMPHONY_INPUT__MAX_TEXT_LENGTH)"
        )
    bad = sorted({f"U+{ord(c):04X}" for c in text if (ord(c) < 0x20 and c not in "\n\t") or 0x7F <= ord(c) < 0xA0})
    if bad:
        raise InvalidInputError(
            f"text contains control characters {', '.join(bad)}; only printable text, newline and tab can be "
            "typed (use hotkey for keys like escape)"
        )
    return text
