"""The desktop's actions: pointer, keys, waits, windows and apps, each validated, paced and recorded.

Actions take screen pixels (`Target`) plus the caller's space (`CallerSpace`, frames.py), which
records and summaries describe points in.
"""

from __future__ import annotations

import asyncio
import sys
import time
from collections.abc import Callable, Sequence
from typing import Any

import anyio

from symphony_mcp.config import InputSettings
from symphony_mcp.desktop.frames import CallerSpace
from symphony_mcp.desktop.protocol import Desktop
from symphony_mcp.desktop.recorder import ActionRecorder
from symphony_mcp.desktop.records import ActionRecord, Target
from symphony_mcp.desktop.result_schemas import OpenResult
from symphony_mcp.desktop.thread import DesktopThread
from symphony_mcp.desktop.types import Launched, MouseButton, WindowInfo
from symphony_mcp.errors import InvalidInputError, clip
from symphony_mcp.limits import MAX_CLICKS, MAX_DURATION, MAX_SCROLL

DEFAULT_OPEN_WAIT_SECONDS = 4.0  # open's wait for a window when the caller gives none


class DesktopActions:
    def __init__(self, thread: DesktopThread, recorder: ActionRecorder, settings: InputSettings) -> None:
        self.thread = thread
        self.recorder = recorder
        self.settings = settings

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
            await self.thread.run(operation)
        except Exception as exc:
            error = str(exc) or type(exc).__name__
            raise
        finally:
            if settle and error is None:
                await asyncio.sleep(self.settings.settle_seconds)
            summary = summary if error is None else f"{summary} -> failed: {error}"
            record = await self.recorder.record(action, arguments, summary, started, error=error, targets=targets)
        return record

    async def _keys(self, keys: Sequence[str]) -> list[str]:
        return await self.thread.run(lambda d: d.normalize_keys(keys))

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
            target = Target(await self.thread.run(lambda d: d.cursor()))
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
        text = _check_text(text, self.settings.max_text_length, allow_empty=overwrite or enter)
        point = target.point if target is not None else None
        settle = self.settings.settle_seconds
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
        limit = self.settings.max_wait_seconds
        if not 0 <= seconds <= limit:
            raise InvalidInputError(f"seconds must be 0..{limit:g}, got {seconds:g}")
        await asyncio.sleep(seconds)
        return await self._perform("wait", {"seconds": seconds}, lambda d: None, f"waited {seconds:g} s", settle=False)

    async def list_windows(self) -> list[WindowInfo]:
        return await self.thread.run(lambda d: d.windows())

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
        limit = self.settings.max_wait_seconds
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
        await asyncio.sleep(self.settings.settle_seconds)
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
