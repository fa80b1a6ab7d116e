"""The desktop core the MCP tools call: the caller's coordinate space, validation, pacing and action records.

Actions take screen pixels (`Target`) plus the caller's space (`CallerSpace`, frames.py), which
records and summaries describe points in. Before any screenshot, screenshot space means the image
a default screenshot would have; that space gets a frame id of its own so results can name it.
"""

from __future__ import annotations

import asyncio
import logging
import os
import sys
import time
from collections.abc import Awaitable, Callable, Sequence
from dataclasses import dataclass
from typing import Any

import anyio
from PIL import Image

from symphony_mcp.config import Settings
from symphony_mcp.desktop.capture import Frame, select_monitor
from symphony_mcp.desktop.frames import CallerSpace, FrameRegistry, new_frame_id
from symphony_mcp.desktop.protocol import Desktop
from symphony_mcp.desktop.records import ActionLog, ActionRecord, Grounding
from symphony_mcp.desktop.results import OpenResult, ScreenInfo, ScreenshotInfo
from symphony_mcp.desktop.runner import DesktopRunner
from symphony_mcp.desktop.types import Launched, MouseButton, WindowInfo
from symphony_mcp.errors import InvalidInputError, clip
from symphony_mcp.imaging.encoding import EncodedImage, EncodeOptions, encode_image, target_size
from symphony_mcp.imaging.geometry import CoordinateSpace, ImageMapping, Point, Rect, Region
from symphony_mcp.limits import MAX_CLICKS, MAX_DURATION, MAX_SCROLL

log = logging.getLogger(__name__)
DEFAULT_OPEN_WAIT_SECONDS = 4.0  # open's wait for a window when the caller gives none


@dataclass(frozen=True)
class Target:
    """Where an action acts, in screen pixels, and how the caller named it (for the record)."""

    point: Point
    given: tuple[float, float] | None = None  # the caller's x, y in its space; None when found by OCR or a model
    grounding: tuple[Grounding, ...] = ()


class DesktopController:
    def __init__(self, settings: Settings, runner: DesktopRunner, actions: ActionLog) -> None:
        self.settings = settings
        self.runner = runner
        self.actions = actions
        self.frames = FrameRegistry()
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

    def _default_mapping(self, area: Rect) -> ImageMapping:
        """How a default screenshot of `area` maps to the screen."""
        width, height = target_size(area.width, area.height, self._encode_options())
        return ImageMapping(area=area, image_width=width, image_height=height)

    async def caller_space(
        self, space: CoordinateSpace = "screenshot", frame_id: str | None = None, monitor: int | None = None
    ) -> CallerSpace:
        """The space a call's coordinates are in: frame_id's frame, else the latest screenshot.

        With `monitor`, the call looks at that monitor instead: a new frame of it at the default
        screenshot size becomes the latest, as a screenshot of that monitor would.
        """
        if space == "screen" and frame_id is not None:
            raise InvalidInputError("frame_id only applies to space='screenshot'")
        if monitor is not None and frame_id is not None:
            raise InvalidInputError("give monitor or frame_id, not both: a frame already shows one area")
        reference = None if monitor is not None else self.frames.reference(frame_id)
        screen = None
        if reference is None or space == "screen":  # the common case needs no trip to the desktop thread
            monitors = await self.runner.run(lambda d: d.monitors())
            screen = monitors[0].screen_rect
            if reference is None:
                index = self.settings.display.monitor if monitor is None else monitor
                reference = new_frame_id(), self._default_mapping(select_monitor(monitors, index))
                self.frames.remember(*reference)
        used, mapping = reference
        named = used if space == "screenshot" else None
        return CallerSpace(space=space, frame_id=named, mapping=mapping, screen=screen)

    # --- screen --------------------------------------------------------------------------------
    async def screen_info(self) -> ScreenInfo:
        monitors, cursor = await self.runner.run(lambda d: (d.monitors(), d.cursor()))
        default = self.settings.display.monitor
        if default >= len(monitors):
            default = 1
        mapping = self._default_mapping(monitors[default].screen_rect)
        return ScreenInfo(
            platform=sys.platform,
            display=os.environ.get("DISPLAY"),
            monitors=monitors,
            default_monitor=default,
            screen_rect=monitors[0].screen_rect,
            screenshot_size=(mapping.image_width, mapping.image_height),
            screenshot_scale=round(mapping.scale_x, 6),
            cursor=cursor,
            screen_cursor=cursor,
        )

    async def capture(self, area: Rect | None = None) -> Frame:
        """Grab a full-resolution frame of a screen area (clipped to the screen), or of the default monitor."""
        return await self.runner.run(lambda d: self._grab(d, None if area is None else 0, area))

    async def screen_for_agent(self, agent: str) -> Image.Image | None:
        """The screen for a tool agent's first prompt (the Coder's, the searcher's), or None when it cannot be
        captured: the agent can work without it, so that is logged, not raised."""
        try:
            return (await self.capture()).image
        except Exception as exc:
            log.warning("%s: no screenshot for its first prompt: %s", agent, exc)
            return None

    async def screen_rect(self) -> Rect:
        """The whole screen (all monitors) in screen pixels."""
        return await self.runner.run(lambda d: _monitor_rect(d, 0))

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
        view: CallerSpace,
        monitor: int | None = None,
        region: Region | None = None,
        draw_cursor: bool | None = None,
        format: str | None = None,
        quality: int | None = None,
        max_width: int | None = None,
        max_height: int | None = None,
    ) -> tuple[EncodedImage, ScreenshotInfo]:
        """Capture a monitor, or a region given in the caller's space; the image becomes the latest frame."""
        options = self._encode_options(format, quality, max_width, max_height)
        region_rect = view.region_to_screen(region) if region is not None else None
        want_marker = self.settings.screenshot.draw_cursor if draw_cursor is None else draw_cursor

        def grab_and_encode(desktop: Desktop) -> tuple[Frame, Rect, EncodedImage]:
            # One trip to the desktop thread: a screenshot is latency-bound.
            frame = self._grab(desktop, 0 if region_rect is not None and monitor is None else monitor, region_rect)
            cursor = frame.cursor
            marker = None
            if want_marker and cursor is not None and frame.area.contains(cursor.x, cursor.y):
                marker = (cursor.x - frame.area.left, cursor.y - frame.area.top)
            return frame, _monitor_rect(desktop, 0), encode_image(frame.image, options, marker)

        frame, screen, encoded = await self.runner.run(grab_and_encode)
        return encoded, self._describe(frame, screen, encoded)

    async def publish(self, frame: Frame, image: Image.Image) -> tuple[EncodedImage, ScreenshotInfo]:
        """Encode an image drawn over `frame` (e.g. annotated); it becomes the latest frame, like a screenshot."""
        encoded = await asyncio.to_thread(encode_image, image, self._encode_options())
        return encoded, self._describe(frame, await self.screen_rect(), encoded)

    def _describe(self, frame: Frame, screen: Rect, encoded: EncodedImage) -> ScreenshotInfo:
        """Remember the image's mapping (it becomes the latest frame) and describe it."""
        mapping = ImageMapping(area=frame.area, image_width=encoded.width, image_height=encoded.height)
        self.frames.remember(frame.id, mapping)
        cursor_image = None
        if frame.cursor is not None and frame.area.contains(frame.cursor.x, frame.cursor.y):
            cursor_image = mapping.point_to_image(frame.cursor)
        return ScreenshotInfo(
            space="screenshot",
            frame_id=frame.id,
            monitor=frame.monitor,
            screen_area=frame.area,
            screen_width=screen.width,
            screen_height=screen.height,
            image_width=encoded.width,
            image_height=encoded.height,
            scale=round(mapping.scale_x, 6),
            format=encoded.format,
            bytes=len(encoded.data),
            cursor=cursor_image,
            screen_cursor=frame.cursor,
        )

    # --- actions -------------------------------------------------------------------------------
    async def _perform(
        self,
        action: str,
        arguments: dict[str, Any],
        operation: Callable[[Desktop], object],
        summary: str,
        targets: Sequence[Target] = (),
        settle: bool = True,
    ) -> ActionRecord:
        """Run one action on the desktop thread, let the UI settle, and record what happened (in screen pixels).

        Shielded from cancellation (a tool's time bound, a cancelled request): the desktop thread finishes
        an action once started whatever its caller does, so the caller waits for it and records it; a
        cancellation takes effect after, between actions, with no key or button left pressed.
        """
        with anyio.CancelScope(shield=True):
            record = await self._perform_shielded(action, arguments, operation, summary, targets, settle)
        return record

    async def _perform_shielded(
        self,
        action: str,
        arguments: dict[str, Any],
        operation: Callable[[Desktop], object],
        summary: str,
        targets: Sequence[Target],
        settle: bool,
    ) -> ActionRecord:
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
            points = [t.point for t in targets]
            record = ActionRecord(
                id=self.actions.next_id(),
                action=action,
                arguments=arguments,
                points=points,
                screen_points=points,
                ok=error is None,
                error=error,
                started_at=started,
                duration_ms=round((time.time() - started) * 1000, 2),
                cursor_after=cursor,
                active_window_after=window,
                summary=summary if error is None else f"{summary} -> failed: {error}",
                grounding=[g for t in targets for g in t.grounding],
            )
            await self._publish(record)
        return record

    async def note(
        self,
        action: str,
        arguments: dict[str, Any],
        summary: str,
        started_at: float,
        error: str | None = None,
        targets: Sequence[Target] = (),
    ) -> ActionRecord:
        """Record an action done without the pointer and keys (a Coder run, an accessibility action on `targets`)
        as the desktop's own are, so the session's trajectory gets it as a step; the screen after it is captured
        by the recorder as usual."""
        cursor, window = await self._post_state()
        points = [t.point for t in targets]
        record = ActionRecord(
            points=points,
            screen_points=points,
            grounding=[g for t in targets for g in t.grounding],
            id=self.actions.next_id(),
            action=action,
            arguments=arguments,
            ok=error is None,
            error=error,
            started_at=started_at,
            duration_ms=round((time.time() - started_at) * 1000, 2),
            cursor_after=cursor,
            active_window_after=window,
            summary=summary,
        )
        with anyio.CancelScope(shield=True):
            await self._publish(record)
        return record

    async def _publish(self, record: ActionRecord) -> None:
        self.actions.append(record)
        for listener in self._listeners:
            try:
                await listener(record)
            except Exception:  # recording must never fail the action itself
                log.exception("action listener failed for %s", record.summary)

    async def _post_state(self) -> tuple[Point | None, WindowInfo | None]:
        try:
            return await self.runner.run(lambda d: (d.cursor(), d.active_window()))
        except Exception:
            return None, None  # the display went away; the action's own outcome is what matters

    async def _keys(self, keys: Sequence[str]) -> list[str]:
        return await self.runner.run(lambda d: d.normalize_keys(keys))

    async def click(
        self,
        target: Target,
        view: CallerSpace,
        *,
        button: MouseButton = "left",
        count: int = 1,
        hold_keys: Sequence[str] = (),
    ) -> ActionRecord:
        if not 1 <= count <= MAX_CLICKS:
            raise InvalidInputError(f"count must be 1..{MAX_CLICKS} (2 = double click), got {count}")
        held = await self._keys(hold_keys) if hold_keys else []
        point = target.point
        kind = {1: "click", 2: "double-click", 3: "triple-click"}.get(count, f"{count}x click")
        mods = f" with {'+'.join(held)} held" if held else ""
        return await self._perform(
            "click",
            {**_given(target, view), "button": button, "count": count, "hold_keys": list(hold_keys)},
            lambda d: d.click(point, button, count, held),
            f"{button} {kind} {_where(target, view)}{mods}",
            [target],
        )

    async def move(self, target: Target, view: CallerSpace, *, duration: float = 0.0) -> ActionRecord:
        _check_duration(duration)
        point = target.point
        return await self._perform(
            "move_pointer",
            {**_given(target, view), "duration": duration},
            lambda d: d.move(point, duration),
            f"moved pointer {_where(target, view)}",
            [target],
        )

    async def drag(
        self,
        start: Target,
        end: Target,
        view: CallerSpace,
        *,
        button: MouseButton = "left",
        hold_keys: Sequence[str] = (),
        duration: float = 0.3,
    ) -> ActionRecord:
        _check_duration(duration)
        held = await self._keys(hold_keys) if hold_keys else []
        a, b = start.point, end.point
        return await self._perform(
            "drag_and_drop",
            {
                **_given(start, view, "start_"),
                **_given(end, view, "end_"),
                "button": button,
                "hold_keys": list(hold_keys),
                "duration": duration,
            },
            lambda d: d.drag(a, b, button, held, duration),
            f"dragged from {_where(start, view, 'from')} to {_where(end, view, 'to')}",
            [start, end],
        )

    async def scroll(
        self,
        view: CallerSpace,
        *,
        vertical: int = 0,
        horizontal: int = 0,
        target: Target | None = None,
        hold_keys: Sequence[str] = (),
    ) -> ActionRecord:
        """Scroll over a target, or where the pointer is when there is none."""
        if vertical == 0 and horizontal == 0:
            raise InvalidInputError("give a non-zero vertical (positive = up) or horizontal (positive = right) amount")
        if max(abs(vertical), abs(horizontal)) > MAX_SCROLL:
            raise InvalidInputError(f"scroll amounts must be within -{MAX_SCROLL}..{MAX_SCROLL} clicks")
        held = await self._keys(hold_keys) if hold_keys else []
        if target is None:
            target = Target(await self.runner.run(lambda d: d.cursor()))
        point = target.point
        return await self._perform(
            "scroll",
            {**_given(target, view), "vertical": vertical, "horizontal": horizontal, "hold_keys": list(hold_keys)},
            lambda d: d.scroll(point, vertical, horizontal, held),
            f"scrolled {vertical:+d} vertical, {horizontal:+d} horizontal {_where(target, view)}",
            [target],
        )

    async def type_text(
        self,
        text: str,
        view: CallerSpace,
        *,
        overwrite: bool = False,
        enter: bool = False,
        target: Target | None = None,
    ) -> ActionRecord:
        """Type into the focused element, or first click the field at `target` to focus it."""
        text = _check_text(text, self.settings.input.max_text_length, allow_empty=overwrite or enter)
        point = target.point if target is not None else None
        settle = self.settings.input.settle_seconds
        # Ctrl+End then Ctrl+Shift+Home selects a whole field in GTK, Qt, Chromium, Windows and Tk
        # (Tk binds Ctrl+A to "line start", so the usual Ctrl+A would prepend instead of replace).
        select_all = [["command", "a"]] if sys.platform == "darwin" else [["ctrl", "end"], ["ctrl", "shift", "home"]]

        def operation(desktop: Desktop) -> None:
            if point is not None:
                desktop.click(point, "left", 1, [])
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
        where = f" into the field {_where(target, view)}" if target is not None else ""
        extras = "".join([" (replacing the field's text)" if overwrite else "", " then Enter" if enter else ""])
        given = _given(target, view) if target is not None else {}
        return await self._perform(
            "type",
            {"text": text, "overwrite": overwrite, "enter": enter, **given},
            operation,
            f"typed {preview!r}{where}{extras}",
            [target] if target is not None else [],
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
            raise InvalidInputError(f"no window with id {clip(window_id)}; open windows: {listing}")
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

    async def open(self, target: str, wait_seconds: float | None = None) -> OpenResult:
        """Launch, then wait until a new window appears (or the wait runs out).

        The default wait is short (clients with a 5 s timeout must get the answer) and never above the
        server's max_wait_seconds, so a call that leaves it out is always valid."""
        limit = self.settings.input.max_wait_seconds
        wait_seconds = min(DEFAULT_OPEN_WAIT_SECONDS, limit) if wait_seconds is None else wait_seconds
        if not 0 <= wait_seconds <= limit:
            raise InvalidInputError(f"wait_seconds must be 0..{limit:g}")
        before = {w.id for w in await self._windows_or_empty()}
        launched: list[Launched] = []
        record = await self._perform(
            "open", {"target": target}, lambda d: launched.append(d.open(target)), f"opened {target!r}", settle=False
        )
        deadline = time.monotonic() + wait_seconds
        new_windows: list[WindowInfo] = []
        while time.monotonic() < deadline:
            new_windows = [w for w in await self._windows_or_empty() if w.id not in before]
            if new_windows:
                break
            await asyncio.sleep(0.1)
        await asyncio.sleep(self.settings.input.settle_seconds)
        started = launched[0]
        return OpenResult(
            target=target,
            pid=started.pid,
            command=started.command,
            opened_with=started.opened_with,
            new_windows=new_windows,
            record=record,
        )

    async def _windows_or_empty(self) -> list[WindowInfo]:
        try:
            return await self.list_windows()
        except Exception:
            return []


def _given(target: Target, view: CallerSpace, prefix: str = "") -> dict[str, Any]:
    """The record's arguments for a target: the caller's x, y and their space, when the caller gave them."""
    if target.given is None:
        return {}
    x, y = target.given
    return {f"{prefix}x": x, f"{prefix}y": y, "space": view.space, "frame_id": view.frame_id}


def _where(target: Target | None, view: CallerSpace, preposition: str = "at") -> str:
    """A target for a summary, in the caller's space (summaries are read by models: no other numbers)."""
    if target is None:
        return ""
    if target.grounding:
        named = f"{preposition} {target.grounding[0].query!r}"
        return f"{named} ({target.grounding[0].method})"
    point = view.point(target.point)
    where = "screen" if view.space == "screen" else f"frame {view.frame_id}"
    return f"{preposition} ({point.x}, {point.y}) of {where}"


def _monitor_rect(desktop: Desktop, index: int) -> Rect:
    return select_monitor(desktop.monitors(), index)


def _check_duration(duration: float) -> None:
    if not 0 <= duration <= MAX_DURATION:
        raise InvalidInputError(f"duration must be 0..{MAX_DURATION:g} seconds, got {duration:g}")


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
