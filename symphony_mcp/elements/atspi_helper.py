"""The AT-SPI reader, run as its own process under the system Python (`/usr/bin/python3 -I`).

Why a process: the bindings (PyGObject and the Atspi typelib) come from Debian's packages (`python3-gi`,
`gir1.2-atspi-2.0`) for Debian's Python only; the server's venv cannot import them, and PyPI has no pyatspi.
So this file imports nothing but the standard library and `gi`, and speaks JSON, one object per line, on
stdin and stdout. The server side is `atspi_process.py`.

Requests and answers:
- `{"op": "read", "max_nodes", "max_depth", "seconds", "screen": [l, t, w, h], "tiles"}` walks every application's
  tree, pruning what is not showing or lies outside the screen, and answers the candidate nodes (`nodes`), the
  applications seen (`apps`), how many nodes were visited and, when the walk was cut, why (`cut`). Each node
  has a `ref`, valid together with the reading's number (`reading`) for `check` and `act`.
  An application's walk is kept and served again while no change event came from it and the screen's pixels under
  its windows (`tiles`, from `screen_tiles.py`) are those it was walked on and had already stood still at the read
  before: Chromium sends no event when a page scrolls.
- `{"op": "check", "reading", "ref"}`: whether that node is still there, showing, and its box now.
- `{"op": "act", "reading", "ref", "kind": "press" | "set_text" | "append_text", "text"}`: the accessibility action.
- `{"op": "tree", "max_depth", "max_width", "max_nodes", "seconds"}`: every application's whole tree, unfiltered, as
  nested nodes with what OSWorld's controller records of each (`raw_node`), for `osworld_tree.py` to write as XML.
"""

from __future__ import annotations

import json
import os
import sys
import time
import warnings
from collections import OrderedDict
from dataclasses import dataclass
from typing import Any

READINGS_KEPT = 16
TEXT_CHARS = 2000  # an element's text is cut here
# The events after which an application's cached tree is read again; a moved or added window is seen by comparing
# the top-level windows' boxes, which costs one call per window.
CHANGE_EVENTS = (
    "object:children-changed",
    "object:state-changed",
    "object:property-change",
    "object:bounds-changed",
    "object:text-changed",
    "object:value-changed",
    "object:visible-data-changed",
    "window:create",
    "window:destroy",
)
# Actions that press a control, in the order tried; toolkits name them differently.
PRESS_ACTIONS = ("click", "press", "activate", "jump", "toggle", "select")
_SKIP_TEXT = str.maketrans("", "", "\ufffc\ufffd")


def main() -> None:
    # The interface getters (get_text_iface...) are deprecated in later libatspi, not removed; bookworm's is 2.46.
    warnings.simplefilter("ignore", DeprecationWarning)
    try:
        import gi

        gi.require_version("Atspi", "2.0")
        from gi.repository import Atspi
    except (ImportError, ValueError) as exc:
        _answer({"ok": False, "error": f"the AT-SPI bindings cannot be loaded: {exc}", "missing": True})
        return
    from gi.repository import GLib

    helper = Helper(Atspi)
    pending = b""

    def on_input(fd: int, _condition: Any) -> bool:
        nonlocal pending
        data = os.read(fd, 1 << 16)
        if not data:
            Atspi.event_quit()
            return False
        *lines, pending = (pending + data).split(b"\n")
        for line in lines:
            respond(helper, line)
        return True

    GLib.io_add_watch(sys.stdin.fileno(), GLib.PRIORITY_DEFAULT, GLib.IOCondition.IN | GLib.IOCondition.HUP, on_input)
    _answer({"ok": True, "ready": True})
    Atspi.event_main()


def respond(helper: Helper, line: bytes) -> None:
    try:
        _answer({"ok": True, **helper.handle(json.loads(line))})
    except Exception as exc:  # one bad request or a dead application must not end the helper
        _answer({"ok": False, "error": f"{type(exc).__name__}: {exc}"})


def _answer(message: dict[str, Any]) -> None:
    sys.stdout.write(json.dumps(message, ensure_ascii=False) + "\n")
    sys.stdout.flush()


@dataclass
class AppTree:
    """One application's walk, kept until it changes: its nodes (refs into its own objects) and what it saw."""

    nodes: list[dict[str, Any]]
    objects: list[Any]
    windows: list[list[int] | None]  # its top-level windows' boxes when walked
    view: tuple[str, ...]  # the digests of the screen tiles under those windows when walked
    visited: int
    deeper: bool
    limits: tuple[Any, ...]


class Helper:
    def __init__(self, atspi: Any) -> None:
        self.atspi = atspi
        self.readings: OrderedDict[int, list[Any]] = OrderedDict()
        self.next_reading = 1
        self.trees: dict[tuple[str, int], AppTree] = {}
        self.changed_apps: set[tuple[str, int]] = set()
        self.last_views: dict[tuple[str, int], tuple[str, ...]] = {}
        self.listener: Any = None
        self.state_nicks = {int(s): atspi.StateType(s).value_nick for s in atspi.StateType.__enum_values__.values()}

    def listen(self) -> None:
        """Subscribe to change events, once, at the first read: that needs the accessibility bus (without it
        libatspi aborts the process), which loading the bindings does not. Events arrive through the main loop,
        which is also where requests are read: one thread touches libatspi."""
        if self.listener is None:
            self.listener = self.atspi.EventListener.new(self.changed)
            for event in CHANGE_EVENTS:
                self.listener.register(event)

    def changed(self, event: Any) -> None:
        """A change event: that application's cached tree is stale."""
        try:
            app = event.source.get_application()
            self.changed_apps.add((app.get_name() or "", app.get_process_id()))
        except Exception:  # the source is gone already: its application's windows will have changed too
            self.trees.clear()

    def handle(self, request: dict[str, Any]) -> dict[str, Any]:
        op = request.get("op")
        if op == "read":
            return self.read(
                int(request["max_nodes"]),
                int(request["max_depth"]),
                float(request["seconds"]),
                request["screen"],
                request.get("tiles"),
            )
        if op == "check":
            return self.check(self._node(request))
        if op == "act":
            return self.act(self._node(request), request["kind"], request.get("text", ""))
        if op == "tree":
            return self.tree(
                int(request["max_depth"]),
                int(request["max_width"]),
                int(request["max_nodes"]),
                float(request["seconds"]),
            )
        raise ValueError(f"unknown op {op!r}")

    def _node(self, request: dict[str, Any]) -> Any:
        objects = self.readings.get(int(request["reading"]))
        ref = int(request["ref"])
        if objects is None or not 0 <= ref < len(objects):
            raise LookupError("reading no longer kept")
        return objects[ref]

    # --- reading ----------------------------------------------------------------------------------
    def read(
        self, max_nodes: int, max_depth: int, seconds: float, screen: list[int], tiles: dict[str, Any] | None
    ) -> dict[str, Any]:
        atspi = self.atspi
        deadline = time.monotonic() + seconds
        self.listen()
        desktop = atspi.get_desktop(0)
        objects: list[Any] = []
        nodes: list[dict[str, Any]] = []
        apps: list[dict[str, Any]] = []
        walk: dict[str, Any] = {"visited": 0, "cut": None, "deeper": False, "cached": 0}
        limits = (max_nodes, max_depth, tuple(screen))
        seen_apps = set()
        for index in range(desktop.get_child_count()):
            app = desktop.get_child_at_index(index)
            if app is None:
                continue
            try:
                app_info = {
                    "name": app.get_name() or "",
                    "pid": app.get_process_id(),
                    "toolkit": app.get_toolkit_name() or "",
                    "nodes": 0,
                }
                windows = [app.get_child_at_index(i) for i in range(min(app.get_child_count(), max_nodes))]
                boxes = [_extents(w, atspi) if w is not None else None for w in windows]
            except Exception:  # an application that quit while we looked
                continue
            key = (app_info["name"], app_info["pid"])
            seen_apps.add(key)
            apps.append(app_info)
            view = _view(boxes, tiles)
            # Chromium updates its tree a moment after it paints: a tree walked on pixels that were still changing
            # at the read before may hold the old layout, so it is kept only once the pixels stood still between reads.
            settled = self.last_views.get(key) == view
            self.last_views[key] = view
            tree = self.trees.get(key)
            if (
                tree is None
                or key in self.changed_apps
                or (tree.windows, tree.view, tree.limits) != (boxes, view, limits)
            ):
                self.changed_apps.discard(key)
                # libatspi keeps each object's children while it gets change events, and Chromium replaces a page's
                # document on navigation without one that updates the parent's list: a walk on that cache missed the
                # new document (measured: MiniWoB's second task page read as no elements). A tree walked again is
                # read afresh, as on a cold read.
                app.clear_cache()
                tree = self._walk_app(windows, boxes, view, settled, limits, deadline, screen, app_info, walk)
            else:
                walk["cached"] += 1
            offset = len(objects)
            objects.extend(tree.objects)
            nodes.extend({**node, "ref": node["ref"] + offset} for node in tree.nodes)
            walk["visited"] += tree.visited
            walk["deeper"] = walk["deeper"] or tree.deeper
            app_info["nodes"] = len(tree.nodes)
            if len(nodes) >= max_nodes:
                walk["cut"] = walk["cut"] or "count"
                break
        for gone in set(self.trees) - seen_apps:
            del self.trees[gone]
        for gone in set(self.last_views) - seen_apps:
            del self.last_views[gone]
        reading = self.next_reading
        self.next_reading += 1
        self.readings[reading] = objects
        while len(self.readings) > READINGS_KEPT:
            self.readings.popitem(last=False)
        cut = walk["cut"] or ("depth" if walk["deeper"] else None)
        return {
            "reading": reading,
            "apps": apps,
            "nodes": nodes[:max_nodes],
            "visited": walk["visited"],
            "cut": cut,
            "cached_apps": walk["cached"],
        }

    def _walk_app(
        self,
        windows: list[Any],
        boxes: list[list[int] | None],
        view: tuple[str, ...],
        settled: bool,
        limits: tuple[Any, ...],
        deadline: float,
        screen: list[int],
        app: dict[str, Any],
        walk: dict[str, Any],
    ) -> AppTree:
        """Walk one application's windows; the tree is kept for the next read if the walk was not cut and the
        application's pixels had `settled`."""
        max_nodes, max_depth, _ = limits
        objects: list[Any] = []
        nodes: list[dict[str, Any]] = []
        own: dict[str, Any] = {"visited": 0, "cut": walk["cut"], "deeper": False}
        for window in windows:
            if window is not None:
                self._walk(window, 1, max_depth, max_nodes, deadline, screen, app, window, objects, nodes, own)
        walk["cut"] = own["cut"]
        tree = AppTree(nodes, objects, boxes, view, own["visited"], own["deeper"], limits)
        key = (app["name"], app["pid"])
        if own["cut"] is None and settled:
            self.trees[key] = tree
        else:
            self.trees.pop(key, None)
        return tree

    def _walk(
        self,
        node: Any,
        depth: int,
        max_depth: int,
        max_nodes: int,
        deadline: float,
        screen: list[int],
        app: dict[str, Any],
        window: Any,
        objects: list[Any],
        nodes: list[dict[str, Any]],
        walk: dict[str, Any],
    ) -> None:
        if walk["cut"] is not None:
            return
        if time.monotonic() > deadline:
            walk["cut"] = "time"
            return
        if len(nodes) >= max_nodes:
            walk["cut"] = "count"
            return
        walk["visited"] += 1
        try:
            states = node.get_state_set()
            if not states.contains(self.atspi.StateType.SHOWING):
                return  # nothing under a node that is not showing is showing either
            box = _extents(node, self.atspi)
            count = node.get_child_count()
        except Exception:  # defunct: it went away during the walk
            return
        if box is not None and not _overlaps(box, screen):
            return
        if box is not None and box[2] > 0 and box[3] > 0:
            described = self._describe(node, states, box, app, window)
            if described is not None:
                described["ref"] = len(objects)
                described["depth"] = depth
                objects.append(node)
                nodes.append(described)
        if depth >= max_depth:
            walk["deeper"] = walk["deeper"] or count > 0
            return
        for index in range(count):
            child = node.get_child_at_index(index)
            if child is not None:
                self._walk(child, depth + 1, max_depth, max_nodes, deadline, screen, app, window, objects, nodes, walk)

    def _describe(
        self, node: Any, states: Any, box: list[int], app: dict[str, Any], window: Any
    ) -> dict[str, Any] | None:
        atspi = self.atspi
        try:
            role = node.get_role_name() or ""
            name = node.get_name() or ""
            state_names = [self.state_nicks[int(s)] for s in states.get_states()]
            text = ""
            if node.get_text_iface() is not None:  # -1: to the end, one round trip instead of counting first
                text = (atspi.Text.get_text(node, 0, -1) or "")[:TEXT_CHARS].translate(_SKIP_TEXT)
            value = None
            value_iface = node.get_value_iface()
            if value_iface is not None:
                value = atspi.Value.get_current_value(node)
            actions = []
            action_iface = node.get_action_iface()
            if action_iface is not None:
                actions = [atspi.Action.get_action_name(node, i) for i in range(atspi.Action.get_n_actions(node))]
            editable = node.get_editable_text_iface() is not None
        except Exception:
            return None
        return {
            "role": role,
            "name": name,
            "text": text,
            "value": value,
            "states": state_names,
            "actions": [a for a in actions if a],
            "editable_text": editable,
            "box": box,
            "app": app["name"],
            "pid": app["pid"],
            "window": (window.get_name() or "") if window is not None else "",
        }

    def tree(self, max_depth: int, max_width: int, max_nodes: int, seconds: float) -> dict[str, Any]:
        desktop = self.atspi.get_desktop(0)
        walk = RawTree(self.atspi, max_depth, max_width, max_nodes, seconds)
        apps = []
        for index in range(min(desktop.get_child_count(), max_width)):
            app = desktop.get_child_at_index(index)
            walked = walk.walk(app, 1) if app is not None else None
            if walked is not None:
                apps.append(walked)
        return {"applications": apps, "nodes": walk.count, "cut": walk.cut}

    # --- acting -----------------------------------------------------------------------------------
    def check(self, node: Any) -> dict[str, Any]:
        try:
            states = node.get_state_set()
            showing = states.contains(self.atspi.StateType.SHOWING)
            return {
                "present": not states.contains(self.atspi.StateType.DEFUNCT),
                "showing": showing,
                "box": _extents(node, self.atspi),
            }
        except Exception:
            return {"present": False, "showing": False, "box": None}

    def act(self, node: Any, kind: str, text: str) -> dict[str, Any]:
        atspi = self.atspi
        if kind == "press":
            if node.get_action_iface() is None:
                return {"done": False, "why": "the element offers no accessibility action"}
            names = [atspi.Action.get_action_name(node, i) for i in range(atspi.Action.get_n_actions(node))]
            lowered = [name.lower() for name in names]  # Qt says "Press", GTK "click"
            for wanted in PRESS_ACTIONS:
                if wanted in lowered:
                    index = lowered.index(wanted)
                    done = bool(atspi.Action.do_action(node, index))
                    return {
                        "done": done,
                        "action": names[index],
                        "why": "" if done else f"the application refused its {names[index]!r} action",
                    }
            return {"done": False, "why": f"its actions ({', '.join(names) or 'none'}) include no press"}
        if kind in ("set_text", "append_text"):
            if node.get_editable_text_iface() is None or node.get_text_iface() is None:
                return {"done": False, "why": "the element's text is not editable through accessibility"}
            before = atspi.Text.get_text(node, 0, atspi.Text.get_character_count(node)) or ""
            if kind == "append_text":
                text = before + text
            done = bool(atspi.EditableText.set_text_contents(node, text))
            if done:  # some toolkits accept and ignore it: read it back
                length = atspi.Text.get_character_count(node)
                now = atspi.Text.get_text(node, 0, length) or ""
                if now != text:
                    return {"done": False, "why": "the application accepted the text but shows other text"}
            return {"done": done, "action": kind, "why": "" if done else "the application refused to set its text"}
        raise ValueError(f"unknown action kind {kind!r}")


class RawTree:
    """One walk of the whole tree for the `accessibility_tree` observation: no pruning, within OSWorld's depth and
    width limits, plus a node count and a time bound of ours (`cut` says which stopped it)."""

    def __init__(self, atspi: Any, max_depth: int, max_width: int, max_nodes: int, seconds: float) -> None:
        self.atspi = atspi
        self.max_depth, self.max_width, self.max_nodes = max_depth, max_width, max_nodes
        self.deadline = time.monotonic() + seconds
        self.count = 0
        self.cut: str | None = None

    def walk(self, node: Any, depth: int) -> dict[str, Any] | None:
        if self.cut is None and time.monotonic() > self.deadline:
            self.cut = "time"
        if self.cut is None and self.count >= self.max_nodes:
            self.cut = "count"
        if self.cut is not None:
            return None
        self.count += 1
        try:
            described = raw_node(node, self.atspi)
            count = node.get_child_count()
        except Exception:  # defunct: it went away during the walk
            return None
        children = []
        if depth < self.max_depth:
            for index in range(min(count, self.max_width)):
                try:
                    child = node.get_child_at_index(index)
                except Exception:
                    continue
                walked = self.walk(child, depth + 1) if child is not None else None
                if walked is not None:
                    children.append(walked)
        described["children"] = children
        return described


def raw_node(node: Any, atspi: Any) -> dict[str, Any]:
    """What OSWorld's `_create_atspi_node` records of a node: role, name, states, attributes, the box when visible and
    showing, text (U+FFFC/U+FFFD removed), whether it has the image and selection interfaces, its value's
    current/min/max/step, and each action's description and key binding."""
    states = [atspi.StateType(s).value_nick.replace("-", "_") for s in node.get_state_set().get_states()]
    described: dict[str, Any] = {
        "role": (node.get_role_name() or "").strip(),
        "name": node.get_name() or "",
        "states": states,
        "attributes": dict(node.get_attributes() or {}),
        "box": _extents(node, atspi) if "visible" in states and "showing" in states else None,
        "text": "",
        "image": node.get_image_iface() is not None,
        "selection": node.get_selection_iface() is not None,
        "value": None,
        "actions": [],
    }
    if node.get_text_iface() is not None:
        length = atspi.Text.get_character_count(node)
        described["text"] = (atspi.Text.get_text(node, 0, length) or "").translate(_SKIP_TEXT)
    if node.get_value_iface() is not None:
        described["value"] = {
            "value": atspi.Value.get_current_value(node),
            "min": atspi.Value.get_minimum_value(node),
            "max": atspi.Value.get_maximum_value(node),
            "step": atspi.Value.get_minimum_increment(node),
        }
    if node.get_action_iface() is not None:
        described["actions"] = [
            {
                "name": atspi.Action.get_action_name(node, i) or "",
                "description": atspi.Action.get_action_description(node, i) or "",
                "key_binding": atspi.Action.get_key_binding(node, i) or "",
            }
            for i in range(atspi.Action.get_n_actions(node))
        ]
    return described


def _extents(node: Any, atspi: Any) -> list[int] | None:
    if node.get_component_iface() is None:
        return None
    rect = atspi.Component.get_extents(node, atspi.CoordType.SCREEN)
    return [rect.x, rect.y, rect.width, rect.height]


def _view(boxes: list[list[int] | None], tiles: dict[str, Any] | None) -> tuple[str, ...]:
    """The digests of the screen tiles under these window boxes; without tiles a unique value (never reused)."""
    if not tiles:
        return (str(time.monotonic()),)
    size, columns, digests = tiles["tile"], tiles["columns"], tiles["digests"]
    left0, top0 = tiles["origin"]
    rows = len(digests) // columns
    wanted: set[int] = set()
    for box in boxes:
        if box is None:
            continue
        x, y, w, h = box
        first_col, last_col = max(0, (x - left0) // size), min(columns - 1, (x + w - 1 - left0) // size)
        first_row, last_row = max(0, (y - top0) // size), min(rows - 1, (y + h - 1 - top0) // size)
        wanted.update(r * columns + c for r in range(first_row, last_row + 1) for c in range(first_col, last_col + 1))
    return tuple(digests[i] for i in sorted(wanted))


def _overlaps(box: list[int], screen: list[int]) -> bool:
    x, y, w, h = box
    left, top, width, height = screen
    if w <= 0 or h <= 0:
        return True  # containers without a size of their own (e.g. some panels) can hold visible children
    return x < left + width and y < top + height and x + w > left and y + h > top


if __name__ == "__main__":
    main()
