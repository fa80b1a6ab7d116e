"""Read the screen's elements, number them for the frame they were read on, and resolve an id to act on it.

Ids are valid for the frame they were read on (the caller's frame, or the marked image `elements` returns):
a reading is kept per frame, and acting by id first checks, in the application, that the element is still
there and where it was read; otherwise the call fails and says to read the elements again.
"""

from __future__ import annotations

import time
from collections import OrderedDict
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any, Protocol

import anyio

from symphony_mcp.desktop.actions import DesktopActions
from symphony_mcp.desktop.capture import Frame
from symphony_mcp.desktop.frames import FRAMES_KEPT, CallerSpace
from symphony_mcp.desktop.screen import Screen
from symphony_mcp.desktop.types import WindowInfo
from symphony_mcp.elements import osworld_tree
from symphony_mcp.elements.atspi_process import AtspiProcess
from symphony_mcp.elements.filters import kept, role_key
from symphony_mcp.elements.screen_tiles import ScreenTiles
from symphony_mcp.elements.types import Element, ElementsResult, UnreadWindow
from symphony_mcp.errors import DisplayUnavailableError, InvalidInputError, SymphonyError, clip
from symphony_mcp.imaging.geometry import Point, Rect

MAX_NODES = 4000  # the walk's cap on candidate nodes
MAX_DEPTH = 60  # OSWorld walks 50 deep; web pages nest deeper
WALK_SECONDS = 2.0  # the walk's time box; the result says when it was cut
MOVED_PIXELS = 2  # an element whose box moved more than this since it was read is stale
NO_TREE = (
    "its application exposes no accessibility tree: its toolkit has none (e.g. Tk), or it started before the "
    "accessibility bus"
)


@dataclass(frozen=True)
class Resolved:
    """An element id checked live: the helper's handle on it and the element as read (screen pixels)."""

    helper_reading: int
    ref: int
    element: Element


@dataclass(frozen=True)
class Reading:
    """One numbered reading: the helper's reading number and, per element id, its node and element."""

    helper_reading: int
    frame: str
    elements: dict[int, tuple[int, Element]]  # id -> (the helper's ref, the element in screen pixels)


class TreeSource(Protocol):
    """Where the nodes come from: this display's AT-SPI helper, or a remote machine's tree (osworld_source.py).
    Both answer the helper's requests (atspi_helper.py); `tree` may answer OSWorld's XML itself as `xml`."""

    def request(self, message: dict[str, Any], timeout: float) -> dict[str, Any]: ...

    def close(self) -> None: ...


class ElementReader:
    def __init__(
        self,
        screen: Screen,
        actions: DesktopActions,
        process: TreeSource | None = None,
        unavailable: str | None = None,
    ) -> None:
        """`process`: the tree source (this display's AT-SPI helper when None); `unavailable`: why this desktop's
        tree cannot be read (a remote machine without one), every read then refuses."""
        self.screen = screen
        self.unavailable = unavailable
        self.actions = actions
        self.process: TreeSource = process or AtspiProcess()
        self._readings: OrderedDict[str, Reading] = OrderedDict()
        self._tiles = ScreenTiles()
        # The window list and the screen's tile digests it was read with: while every pixel stays the same, no window
        # was opened, closed, moved or retitled (its title bar would show it), and the list is not read again.
        self._windows: tuple[list[Any], list[WindowInfo]] | None = None
        self._nodes: tuple[int, list[dict[str, Any]]] | None = None  # the helper's last reading and its nodes
        self._last_matched: tuple[list[dict[str, Any]], tuple[Any, ...], list[tuple[int, Element]]] | None = None

    async def _request(self, message: dict[str, Any], timeout: float = 10.0) -> dict[str, Any]:
        if self.unavailable is not None:
            raise DisplayUnavailableError(self.unavailable)
        return await anyio.to_thread.run_sync(self.process.request, message, timeout)

    async def read(
        self,
        view: CallerSpace,
        region: Rect | None = None,
        window: str | None = None,
        roles: list[str] | None = None,
        max_count: int = 200,
        frame: Frame | None = None,
    ) -> ElementsResult:
        """The elements inside the caller's area (and `region`, in screen pixels), numbered from 1, in tree order.
        `frame`: the whole screen captured just now, when the caller has one (else it is captured here): its tiles
        tell which kept trees still hold."""
        if self.unavailable is not None:  # before the screen is captured for nothing
            raise DisplayUnavailableError(self.unavailable)
        area = view.area if region is None else region.intersect(view.area)
        if area is None:
            raise InvalidInputError(f"region {region and region.describe()} is outside the frame looked at")
        screen = await self.screen.screen_rect()
        started = time.monotonic()
        if frame is None or frame.area != screen:
            frame = await self.screen.capture(screen)
        tiles = await anyio.to_thread.run_sync(self._tiles.digests, frame)
        windows = self._windows[1] if self._windows is not None and self._windows[0] == tiles["digests"] else None

        async def list_windows() -> None:
            nonlocal windows
            try:
                windows = await self.actions.list_windows()
            except Exception:  # no window manager: nothing to compare with
                windows = []
            self._windows = (tiles["digests"], windows)

        try:
            async with anyio.create_task_group() as group:
                if windows is None:  # the window list (on X kept until X reports a change) while the helper reads
                    group.start_soon(list_windows)
                answer = await self._request(
                    {
                        "op": "read",
                        "max_nodes": MAX_NODES,
                        "max_depth": MAX_DEPTH,
                        "seconds": WALK_SECONDS,
                        "screen": [screen.left, screen.top, screen.width, screen.height],
                        "tiles": tiles,
                        "known": self._nodes[0] if self._nodes is not None else None,
                    },
                    timeout=WALK_SECONDS + 10,
                )
        except* SymphonyError as failed:  # the source's own error, as it said it (the window listing catches its own)
            raise failed.exceptions[0] from None
        nodes: list[dict[str, Any]] | None = answer["nodes"]
        if nodes is None:  # the same as the helper's last reading's, which the helper knows we have
            assert self._nodes is not None
            nodes = self._nodes[1]
        self._nodes = (answer["reading"], nodes)
        matched = self._matched(nodes, area, window, roles or [])
        reading = Reading(answer["reading"], _frame_key(view), dict((e.id, (ref, e)) for ref, e in matched))
        self._remember(reading)
        apps = answer["apps"]
        return ElementsResult(
            elements=[element for _, element in matched[:max_count]],
            total=len(matched),
            applications=sorted({app["name"] for app in apps if app["nodes"]}),
            windows_without_tree=_windows_without_tree(windows or [], apps, nodes, area),
            cut=answer["cut"],
            visited=answer["visited"],
            unchanged_applications=answer["cached_apps"],
            read_ms=round((time.monotonic() - started) * 1000, 1),
        )

    def _matched(
        self, nodes: list[dict[str, Any]], area: Rect, window: str | None, roles: list[str]
    ) -> list[tuple[int, Element]]:
        """The nodes kept as elements, each with the helper's ref; those of the last call again when its nodes and
        filter are the same (nothing changed: about 10 ms of filtering and building 450 elements saved)."""
        key = (area, window, tuple(roles))
        if self._last_matched is not None and self._last_matched[0] is nodes and self._last_matched[1] == key:
            return self._last_matched[2]
        wanted_roles = {role_key(r) for r in roles}
        matched: list[tuple[int, Element]] = []
        for node in nodes:
            box = kept(node, area)
            if box is None or (wanted_roles and role_key(node["role"]) not in wanted_roles):
                continue
            if window is not None and window.casefold() not in node["window"].casefold():
                continue
            matched.append((node["ref"], _element(len(matched) + 1, node, box, area)))
        self._last_matched = (nodes, key, matched)
        return matched

    def _remember(self, reading: Reading) -> None:
        self._readings[reading.frame] = reading
        self._readings.move_to_end(reading.frame)
        while len(self._readings) > FRAMES_KEPT:
            self._readings.popitem(last=False)

    def share(self, view: CallerSpace, new_frame: str) -> None:
        """The caller's last reading holds for `new_frame` too (the marked image published for it)."""
        reading = self._readings[_frame_key(view)]
        self._remember(Reading(reading.helper_reading, new_frame, reading.elements))

    async def resolve(self, view: CallerSpace, element_id: int) -> Resolved:
        """The live element an id names in the caller's frame; a clear error when it is unknown or stale."""
        frame = _frame_key(view)
        reading = self._readings.get(frame)
        where = "the screen" if frame == "screen" else f"frame {frame}"
        if reading is None:
            raise InvalidInputError(
                f"no elements were read on {where}: element ids are valid only for the frame they were read on. "
                "Call elements again (or find_element) and use its ids with its frame_id"
            )
        if element_id not in reading.elements:
            raise InvalidInputError(
                f"{where} has no element {element_id} (its elements are 1..{len(reading.elements)}); "
                "call elements again to read the screen as it is now"
            )
        ref, element = reading.elements[element_id]
        state = await self._request({"op": "check", "reading": reading.helper_reading, "ref": ref})
        if not _still_there(state, element.box):
            raise InvalidInputError(
                f"element {element_id} ({element.role} {clip(element.name or element.text)}) read on {where} is no "
                "longer there as it was read (it was closed, hidden or moved): call elements again to read the "
                "screen as it is now"
            )
        return Resolved(reading.helper_reading, ref, element)

    async def act(self, resolved: Resolved, kind: str, text: str = "", names: Sequence[str] = ()) -> dict[str, Any]:
        """Do an accessibility action ('press': the first of the action `names` the element has; 'set_text',
        'append_text': `text`) on an element: {'done', 'action', 'why'}."""
        return await self._request(
            {
                "op": "act",
                "reading": resolved.helper_reading,
                "ref": resolved.ref,
                "kind": kind,
                "text": text,
                "names": list(names),
            }
        )

    async def osworld_tree(self) -> str:
        """The whole tree as OSWorld's controller returns it (XML; osworld_tree.py says what it holds)."""
        answer = await self._request(
            {
                "op": "tree",
                "max_depth": osworld_tree.MAX_DEPTH,
                "max_width": osworld_tree.MAX_WIDTH,
                "max_nodes": osworld_tree.MAX_NODES,
                "seconds": osworld_tree.WALK_SECONDS,
            },
            timeout=osworld_tree.WALK_SECONDS + 10,
        )
        return answer["xml"] if "xml" in answer else osworld_tree.tree_xml(answer)  # a remote source's own XML

    def close(self) -> None:
        self.process.close()


def _windows_without_tree(
    windows: list[WindowInfo], apps: list[dict[str, Any]], nodes: list[dict[str, Any]], area: Rect
) -> list[UnreadWindow]:
    """Windows in the area that no application's tree accounts for (by process or by window title)."""
    pids = {app["pid"] for app in apps if app["pid"] is not None}  # a remote machine's tree names no processes
    titles = {node["window"] for node in nodes}
    return [
        UnreadWindow(title=w.title, app=w.app, pid=w.pid, reason=NO_TREE)
        for w in windows
        if w.pid not in pids and w.title not in titles and (w.rect is None or w.rect.intersect(area) is not None)
    ]


def _frame_key(view: CallerSpace) -> str:
    return view.frame_id or "screen"


def _still_there(state: dict[str, Any], box: Rect) -> bool:
    if not state.get("present") or not state.get("showing") or state.get("box") is None:
        return False
    x, y, width, height = state["box"]
    return max(abs(x - box.left), abs(y - box.top), abs(width - box.width), abs(height - box.height)) <= MOVED_PIXELS


def _element(element_id: int, node: dict[str, Any], box: Rect, area: Rect) -> Element:
    """An element from a node the helper read (its fields have the types Element declares: built without checks,
    which cost about 30 us an element, hundreds a read)."""
    left, top = max(box.left, area.left), max(box.top, area.top)  # the part inside the area (kept: they overlap)
    right = min(box.left + box.width, area.left + area.width)
    bottom = min(box.top + box.height, area.top + area.height)
    center = Point.model_construct(x=left + (right - left) // 2, y=top + (bottom - top) // 2)
    return Element.model_construct(
        id=element_id,
        role=node["role"],
        name=node["name"],
        text=node["text"],
        value=node["value"],
        states=node["states"],
        actions=node["actions"],
        box=box,
        center=center,
        app=node["app"],
        window=node["window"],
    )
