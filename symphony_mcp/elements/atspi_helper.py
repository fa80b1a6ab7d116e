"""The AT-SPI reader, run as its own process under the system Python (`/usr/bin/python3 -I`).

Why a process: the bindings (PyGObject and the Atspi typelib) come from Debian's packages (`python3-gi`,
`gir1.2-atspi-2.0`) for Debian's Python only; the server's venv cannot import them, and PyPI has no pyatspi.
So this file imports nothing but the standard library and `gi`, and speaks JSON, one object per line, on
stdin and stdout. The server side is `atspi_process.py`.

Requests and answers:
- `{"op": "read", "max_nodes", "max_depth", "seconds", "screen": [l, t, w, h], "tiles", "known"}` walks every
  application's tree, pruning what is not showing or lies outside the screen, and answers the candidate nodes
  (`nodes`; null when they are those of reading `known`, the caller's last, as nothing changed since), the
  applications seen (`apps`), how many nodes were visited and, when the walk was cut, why (`cut`). Each node
  has a `ref`, valid together with the reading's number (`reading`) for `check` and `act`.
  An application's walk is kept and served again while no change event came from it and the screen's pixels under
  its windows (`tiles`, from `screen_tiles.py`) are those it was walked on and had already stood still at the read
  before: Chromium sends no event when a page scrolls. When every tile of the screen is as at the caller's last
  reading, no change event came and every tree it served is kept, that reading is answered again, no application
  asked.
- `{"op": "check", "reading", "ref"}`: whether that node is still there, showing, and its box now.
- `{"op": "act", "reading", "ref", "kind": "press" | "set_text" | "append_text", "text", "names"}`: the accessibility
  action; a press does the first of the action `names` (the server's list, in its order) the node offers.
- `{"op": "tree", "max_depth", "max_width", "max_nodes", "seconds"}`: every application's whole tree, unfiltered, as
  nested nodes with what OSWorld's controller records of each (`raw_node`), for `osworld_tree.py` to write as XML.
"""

from __future__ import annotations

import importlib.util
import json
import os
import sys
import time
import warnings
from collections import OrderedDict
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from symphony_mcp.elements import atspi_wire as wire
else:  # run as a script under Debian's Python (-I): the package is not importable there, its sibling file is

    def _sibling(name: str) -> Any:
        spec = importlib.util.spec_from_file_location(name, Path(__file__).with_name(f"{name}.py"))
        module = importlib.util.module_from_spec(spec)
        spec.loader.exec_module(module)
        return module

    wire = _sibling("atspi_wire")

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
_SKIP_TEXT = str.maketrans("", "", "\ufffc\ufffd")
# A walk is kept only once the pixels under the application's windows have stood still this long: Chromium moves its
# accessibility boxes a moment after it paints (a walk 0.1 s after a smooth scroll's last frame had boxes 8 px off).
SETTLE_SECONDS = 0.5
# An application's facts are kept for every node seen since its last change event (a page scrolled back and forth
# is not asked them again), up to this many nodes; past it, only the last walk's.
FACTS_KEPT = 50_000
CALL_SECONDS = 5.0  # one call's limit outside a walk (a hung application must not hang the helper)
ACCESSIBLE = "org.a11y.atspi.Accessible"
ACTION = "org.a11y.atspi.Action"
TEXT = "org.a11y.atspi.Text"
EDITABLE_TEXT = "org.a11y.atspi.EditableText"
VALUE = "org.a11y.atspi.Value"
PROPERTIES = "org.freedesktop.DBus.Properties"
REGISTRY, REGISTRY_ROOT = "org.a11y.atspi.Registry", "/org/a11y/atspi/accessible/root"
APP_ROOT = "/org/a11y/atspi/accessible/root"
DBUS_DAEMON = ("/org/freedesktop/DBus", "org.freedesktop.DBus")
DEFUNCT, SHOWING = 6, 25  # AtspiStateType: bit numbers in a state set
SCREEN_COORDINATES = 0  # AtspiCoordType


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
    """One application's walk, kept until it changes: its nodes (refs into its objects: bus name and path) and what it
    saw."""

    nodes: list[dict[str, Any]]
    objects: list[Any]
    windows: list[list[int] | None]  # its top-level windows' boxes when walked
    view: tuple[object, ...]  # the digests of the screen tiles under those windows when walked
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
        self.last_views: dict[tuple[str, int], tuple[tuple[object, ...], float]] = {}  # and since when it looks so
        # Each application's facts of the nodes seen since its last change event, and the paths its last walk kept.
        self.facts: dict[tuple[str, int], dict[str, Facts]] = {}
        self.walked: dict[tuple[str, int], list[str]] = {}
        self.listener: Any = None
        self.state_nicks = {int(s): atspi.StateType(s).value_nick for s in atspi.StateType.__enum_values__.values()}
        self.role_names = {int(r): atspi.role_get_name(r) or "" for r in atspi.Role.__enum_values__.values()}
        self.peers = Peers()
        self.served: tuple[int, list[AppTree]] = (0, [])  # the last reading and the trees it served
        self.last_read: tuple[dict[str, Any], tuple[Any, ...], dict[str, Any]] | None = None  # tiles, limits, answer

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
                request.get("known"),
            )
        if op == "check":
            return self.check(self._node(request))
        if op == "act":
            return self.act(self._node(request), request["kind"], request.get("text", ""), request.get("names", []))
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
        self,
        max_nodes: int,
        max_depth: int,
        seconds: float,
        screen: list[int],
        tiles: dict[str, Any] | None,
        known_reading: int | None = None,
    ) -> dict[str, Any]:
        deadline = time.monotonic() + seconds
        self.listen()  # first: without the accessibility bus libatspi ends the process, which the server reports
        limits = (max_nodes, max_depth, tuple(screen))
        if self._nothing_changed(tiles, limits, known_reading):
            assert self.last_read is not None
            return self.last_read[2]
        served: list[AppTree] = []
        objects: list[Any] = []
        nodes: list[dict[str, Any]] = []
        apps: list[dict[str, Any]] = []
        walk: dict[str, Any] = {"visited": 0, "cut": None, "deeper": False, "cached": 0}
        seen_apps = set()
        for bus_name, root in self.peers.applications():
            try:
                app = self._application(bus_name, root, max_nodes)
            except (OSError, ValueError, wire.CallError):  # an application that quit while we looked
                self.peers.forget(bus_name)
                continue
            if app is None:
                continue
            app_info, windows, boxes, titles = app
            key = (app_info["name"], app_info["pid"])
            seen_apps.add(key)
            apps.append(app_info)
            view = _view(boxes, tiles)
            # Chromium updates its tree a moment after it paints: a tree walked on pixels that were still changing
            # may hold the old layout, so it is kept only once the pixels have stood still for SETTLE_SECONDS.
            seen = self.last_views.get(key)
            since = seen[1] if seen is not None and seen[0] == view else time.monotonic()
            settled = time.monotonic() - since >= SETTLE_SECONDS
            self.last_views[key] = (view, since)
            tree = self.trees.get(key)
            changed = key in self.changed_apps
            if tree is None or changed or (tree.windows, tree.view, tree.limits) != (boxes, view, limits):
                self.changed_apps.discard(key)
                known = {} if changed else self.facts.get(key, {})
                expected = [] if changed else self.walked.get(key, [])
                connection = self.peers.connection(bus_name)
                walker = Walker(connection, bus_name, self.state_nicks, self.role_names, known, expected)
                try:
                    tree = walker.walk(windows, titles, boxes, view, limits, deadline, screen, app_info["name"], walk)
                except (OSError, ValueError) as exc:  # the application went away or garbled its answers
                    self.peers.forget(bus_name)
                    walk["cut"] = walk["cut"] or f"error: {exc}"
                    continue
                self.facts[key] = {**known, **walker.facts} if len(known) < FACTS_KEPT else walker.facts
                self.walked[key] = list(walker.facts)
                if walker.cut is None and settled:
                    self.trees[key] = tree
                else:
                    self.trees.pop(key, None)
            else:
                walk["cached"] += 1
            served.append(tree)
            offset = len(objects)
            objects.extend(tree.objects)
            nodes.extend({**node, "ref": node["ref"] + offset, "pid": app_info["pid"]} for node in tree.nodes)
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
        for gone in set(self.facts) - seen_apps:
            del self.facts[gone]
            self.walked.pop(gone, None)
        reading = self.next_reading
        self.next_reading += 1
        # The caller still has the nodes of its last reading: when every tree served then is served again, unchanged,
        # they are not sent again (about 190 KB of JSON for the Python docs page).
        last_reading, last_served = self.served
        same = known_reading == last_reading and len(served) == len(last_served)
        same = same and all(now is then for now, then in zip(served, last_served, strict=True))
        self.served = (reading, served)
        self.readings[reading] = objects
        while len(self.readings) > READINGS_KEPT:
            self.readings.popitem(last=False)
        cut = walk["cut"] or ("depth" if walk["deeper"] else None)
        answer = {"reading": reading, "apps": apps, "visited": walk["visited"], "cut": cut}
        self.last_read = (tiles or {}, limits, {**answer, "nodes": None, "cached_apps": len(served)})
        return {**answer, "nodes": None if same else nodes[:max_nodes], "cached_apps": walk["cached"]}

    def _nothing_changed(self, tiles: dict[str, Any] | None, limits: tuple[Any, ...], known: int | None) -> bool:
        """Whether the last reading holds as it is, without asking any application (the registry and each one's
        windows: 3-4 ms on a quiet machine, more under load): every pixel of the screen is as it was then, no change
        event came since, the caller has that reading, and each tree it served is kept (walked whole on pixels that
        had stood still). A window that opened, closed or moved, or a page that scrolled, changed pixels."""
        if self.last_read is None or not tiles or self.changed_apps:
            return False
        last_tiles, last_limits, answer = self.last_read
        kept = {id(tree) for tree in self.trees.values()}
        return (
            (tiles, limits) == (last_tiles, last_limits)
            and known == answer["reading"] == self.served[0]
            and answer["cut"] is None
            and all(id(tree) in kept for tree in self.served[1])
        )

    def _application(
        self, bus_name: str, root: str, max_nodes: int
    ) -> tuple[dict[str, Any], list[str], list[list[int] | None], list[str]] | None:
        """An application's name, process, toolkit and top-level windows (paths, boxes, titles): two batches."""
        connection = self.peers.connection(bus_name)
        deadline = time.monotonic() + CALL_SECONDS
        name, toolkit, children = connection.calls(
            [
                _property(bus_name, root, ACCESSIBLE, "Name"),
                _property(bus_name, root, "org.a11y.atspi.Application", "ToolkitName"),
                wire.Call(root, ACCESSIBLE, "GetChildren", destination=bus_name),
            ],
            deadline,
        )
        if not isinstance(children, list):
            return None
        windows = [path for _, path in children[0][:max_nodes]]
        answers = connection.calls(
            [
                call
                for path in windows
                for call in (_extents_call(bus_name, path), _property(bus_name, path, ACCESSIBLE, "Name"))
            ],
            deadline,
        )
        boxes = [_box(answer) for answer in answers[0::2]]
        titles = [_text(answer) for answer in answers[1::2]]
        app_info = {"name": _text(name), "pid": self.peers.pid(bus_name), "toolkit": _text(toolkit), "nodes": 0}
        return app_info, windows, boxes, titles

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
    def check(self, node: tuple[str, str]) -> dict[str, Any]:
        bus_name, path = node
        try:
            states, box = self.peers.connection(bus_name).calls(
                [wire.Call(path, ACCESSIBLE, "GetState", destination=bus_name), _extents_call(bus_name, path)],
                time.monotonic() + CALL_SECONDS,
            )
        except (OSError, ValueError):
            self.peers.forget(bus_name)
            return {"present": False, "showing": False, "box": None}
        if not isinstance(states, list):
            return {"present": False, "showing": False, "box": None}
        bits = _bits(states[0])
        return {"present": DEFUNCT not in bits, "showing": SHOWING in bits, "box": _box(box)}

    def act(self, node: tuple[str, str], kind: str, text: str, press_names: list[str]) -> dict[str, Any]:
        bus_name, path = node
        connection = self.peers.connection(bus_name)

        def call(interface: str, member: str, signature: str = "", *args: Any) -> Any:
            return connection.call(wire.Call(path, interface, member, signature, args, bus_name), CALL_SECONDS)[0]

        interfaces = set(call(ACCESSIBLE, "GetInterfaces"))
        if kind == "press":
            if ACTION not in interfaces:
                return {"done": False, "why": "the element offers no accessibility action"}
            count = call(PROPERTIES, "Get", "ss", ACTION, "NActions")
            names = [call(ACTION, "GetName", "i", index) for index in range(count)]  # GetActions' are localized
            lowered = [name.lower() for name in names]  # Qt says "Press", GTK "click"
            for wanted in press_names:
                if wanted in lowered:
                    index = lowered.index(wanted)
                    done = bool(call(ACTION, "DoAction", "i", index))
                    return {
                        "done": done,
                        "action": names[index],
                        "why": "" if done else f"the application refused its {names[index]!r} action",
                    }
            return {"done": False, "why": f"its actions ({', '.join(names) or 'none'}) include no press"}
        if kind in ("set_text", "append_text"):
            if EDITABLE_TEXT not in interfaces or TEXT not in interfaces:
                return {"done": False, "why": "the element's text is not editable through accessibility"}
            if kind == "append_text":
                text = call(TEXT, "GetText", "ii", 0, -1) + text
            done = bool(call(EDITABLE_TEXT, "SetTextContents", "s", text))
            if done and call(TEXT, "GetText", "ii", 0, -1) != text:  # some toolkits accept and ignore it: read back
                return {"done": False, "why": "the application accepted the text but shows other text"}
            return {"done": done, "action": kind, "why": "" if done else "the application refused to set its text"}
        raise ValueError(f"unknown action kind {kind!r}")


class Peers:
    """The connections: to the accessibility bus (the registry, process ids) and to each application, over its own
    socket when it offers one (at-spi2-atk does: it skips the bus daemon), else through the bus."""

    def __init__(self) -> None:
        self.bus: Any = None
        self.apps: dict[str, Any] = {}
        self.pids: dict[str, int] = {}

    def _bus(self) -> Any:
        if self.bus is None:
            self.bus = wire.Connection(wire.accessibility_bus_address(), message_bus=True)
        return self.bus

    def applications(self) -> list[tuple[str, str]]:
        """The registered applications' (bus name, root path)."""
        try:
            (children,) = self._bus().call(wire.Call(REGISTRY_ROOT, ACCESSIBLE, "GetChildren", destination=REGISTRY))
        except (OSError, ValueError):
            self.bus = None  # the bus went away: connect again at the next read
            raise
        alive = {name for name, _ in children}
        for gone in set(self.apps) - alive:
            self.forget(gone)
        return [(name, path) for name, path in children]

    def connection(self, bus_name: str) -> Any:
        if bus_name not in self.apps:
            try:
                (address,) = self._bus().call(
                    wire.Call(APP_ROOT, "org.a11y.atspi.Application", "GetApplicationBusAddress", destination=bus_name),
                    CALL_SECONDS,
                )
                self.apps[bus_name] = wire.Connection(address, message_bus=False) if address else self.bus
            except (OSError, ValueError, wire.CallError):  # no socket of its own (e.g. GTK 4, Qt): through the bus
                self.apps[bus_name] = self._bus()
        return self.apps[bus_name]

    def pid(self, bus_name: str) -> int:
        if bus_name not in self.pids:
            (pid,) = self._bus().call(
                wire.Call(*DBUS_DAEMON, "GetConnectionUnixProcessID", "s", (bus_name,), "org.freedesktop.DBus")
            )
            self.pids[bus_name] = int(pid)
        return self.pids[bus_name]

    def forget(self, bus_name: str) -> None:
        connection = self.apps.pop(bus_name, None)
        self.pids.pop(bus_name, None)
        if connection is not None and connection is not self.bus:
            connection.close()


@dataclass
class Facts:
    """What a node's walk read that stays the same until the application sends a change event (a scroll sends none
    and changes only states and boxes): role, name, interfaces, children and, once it was described, its text,
    value and action names."""

    role: str
    name: str
    interfaces: set[str]
    children: list[str]
    details: dict[str, Any] | None = None


class Walker:
    """One application's walk, a tree level at a time: each level's calls are written at once and their answers read
    as they come (one round trip a level instead of about ten a node). Nodes not showing, or whose box lies outside
    the screen, are not gone into. Nodes in `known` (the facts of the nodes seen since the application's last change
    event) are asked only their states and box; those of `expected` (the nodes its last walk kept) are asked them
    all in one batch before the walk, so that a walk of a tree seen before (a scrolled page) waits for one round trip
    rather than one a level (38 on the Python docs page)."""

    def __init__(
        self,
        connection: Any,
        bus_name: str,
        state_nicks: dict[int, str],
        role_names: dict[int, str],
        known: dict[str, Facts],
        expected: Sequence[str] = (),
    ) -> None:
        self.connection, self.bus_name = connection, bus_name
        self.state_nicks, self.role_names = state_nicks, role_names
        self.known = known
        self.expected = [path for path in expected if path in known]
        self.facts: dict[str, Facts] = {}  # this walk's, for the next
        self.cut: str | None = None

    def walk(
        self,
        windows: list[str],
        titles: list[str],
        boxes: list[list[int] | None],
        view: tuple[object, ...],
        limits: tuple[Any, ...],
        deadline: float,
        screen: list[int],
        app_name: str,
        walk: dict[str, Any],
    ) -> AppTree:
        max_nodes, max_depth, _ = limits
        self.cut = walk["cut"]
        described: dict[str, dict[str, Any]] = {}
        visited, deeper = 0, False
        level = [(path, index) for index, path in enumerate(windows)]
        depth = 1
        asked = self._state_and_box(self.expected, deadline)
        while level and self.cut is None:
            if time.monotonic() > deadline:
                self.cut = "time"
                break
            visited += len(level)
            calls = [call for path, _ in level if path not in asked for call in self._node_calls(path)]
            answers = self._calls(calls, deadline)
            if answers is None:
                break
            answers.reverse()  # taken from the end, in the order asked
            undetailed: list[tuple[str, Facts]] = []
            following: list[tuple[str, int]] = []
            for path, window in level:
                facts: Facts | None
                if path in asked:
                    (states, box), facts = asked[path], self.known[path]
                else:
                    states, box = _states(answers.pop()), _box(answers.pop())
                    facts = self.known.get(path) or self._facts(path, [answers.pop() for _ in range(4)])
                if states is None or facts is None:
                    continue  # defunct: it went away during the walk
                if SHOWING not in states or (box is not None and not _overlaps(box, screen)):
                    continue  # nothing under a node that is not showing is showing either
                self.facts[path] = facts
                if depth >= max_depth:
                    deeper = deeper or bool(facts.children)
                else:
                    following.extend((child, window) for child in facts.children)
                if box is None or box[2] <= 0 or box[3] <= 0:
                    continue
                if facts.details is None:
                    undetailed.append((path, facts))
                described[path] = {
                    "role": facts.role,
                    "name": facts.name,
                    "states": [self.state_nicks[bit] for bit in sorted(states) if bit in self.state_nicks],
                    "editable_text": EDITABLE_TEXT in facts.interfaces,
                    "box": box,
                    "app": app_name,
                    "window": titles[window],
                    "depth": depth,
                }
            self._details(undetailed, deadline)  # a level at a time: a walk cut by time lists the levels before
            if self.cut is None and len(described) >= max_nodes:
                self.cut = "count"
            level = following
            depth += 1
        walk["cut"] = self.cut
        objects: list[tuple[str, str]] = []
        nodes: list[dict[str, Any]] = []
        for top in windows:
            for path in _in_tree_order(top, self.facts):
                details = self.facts[path].details if path in described else None
                if details is not None:
                    nodes.append({**described[path], **details, "ref": len(objects)})
                    objects.append((self.bus_name, path))
        return AppTree(nodes[:max_nodes], objects[:max_nodes], boxes, view, visited, deeper, limits)

    def _state_and_box(self, paths: list[str], deadline: float) -> dict[str, tuple[set[int] | None, list[int] | None]]:
        """States and box of each path, asked at once; empty when they did not come in time (the walk is then cut)."""
        answers = self._calls([call for path in paths for call in self._node_calls(path)[:2]], deadline)
        if answers is None:
            return {}
        return {path: (_states(state), _box(box)) for path, state, box in zip(paths, *[iter(answers)] * 2, strict=True)}

    def _node_calls(self, path: str) -> tuple[Any, ...]:
        """States and box; and for a node not known, its children, role, name and interfaces."""
        bus_name = self.bus_name
        calls = (wire.Call(path, ACCESSIBLE, "GetState", destination=bus_name), _extents_call(bus_name, path))
        if path in self.known:
            return calls
        return (
            *calls,
            wire.Call(path, ACCESSIBLE, "GetChildren", destination=bus_name),
            wire.Call(path, ACCESSIBLE, "GetRole", destination=bus_name),
            _property(bus_name, path, ACCESSIBLE, "Name"),
            wire.Call(path, ACCESSIBLE, "GetInterfaces", destination=bus_name),
        )

    def _facts(self, path: str, answers: list[Any]) -> Facts | None:
        children, role, name, interfaces = answers
        if not isinstance(children, list):
            return None
        return Facts(
            role=self.role_names.get(role[0], "unknown") if isinstance(role, list) else "",
            name=_text(name),
            interfaces=set(interfaces[0]) if isinstance(interfaces, list) else set(),
            children=[child for _, child in children[0]],
        )

    def _details(self, wanted: list[tuple[str, Facts]], deadline: float) -> None:
        """Text, value and action names of the nodes that have them, in two batches (an action's name is asked by
        its number: the batch call GetActions gives localized names, empty in Chromium). A node's details are set
        only once every answer came (facts are kept for later walks); when time ran out, none are and the walk is
        cut."""
        bus_name = self.bus_name
        calls: list[Any] = []
        asked: list[tuple[str, dict[str, Any], str]] = []
        found: list[tuple[Facts, dict[str, Any]]] = []
        for path, facts in wanted:
            details: dict[str, Any] = {"text": "", "value": None, "actions": []}
            found.append((facts, details))
            if TEXT in facts.interfaces:
                calls.append(wire.Call(path, TEXT, "GetText", "ii", (0, -1), bus_name))
                asked.append((path, details, "text"))
            if VALUE in facts.interfaces:
                calls.append(_property(bus_name, path, VALUE, "CurrentValue"))
                asked.append((path, details, "value"))
            if ACTION in facts.interfaces:
                calls.append(_property(bus_name, path, ACTION, "NActions"))
                asked.append((path, details, "count"))
        answers = self._calls(calls, deadline)
        if answers is None:
            return
        names: list[tuple[dict[str, Any], Any]] = []
        for (path, details, what), answer in zip(asked, answers, strict=True):
            if not isinstance(answer, list):
                continue
            if what == "text":
                details["text"] = str(answer[0])[:TEXT_CHARS].translate(_SKIP_TEXT)
            elif what == "value":
                details["value"] = answer[0]
            else:
                names.extend((details, _action_name(bus_name, path, n)) for n in range(answer[0]))
        answers = self._calls([call for _, call in names], deadline)
        if answers is None:
            return
        for (details, _), answer in zip(names, answers, strict=True):
            if isinstance(answer, list) and answer[0]:
                details["actions"].append(answer[0])
        for facts, details in found:
            facts.details = details

    def _calls(self, calls: list[Any], deadline: float) -> list[Any] | None:
        """The answers, or None (and the walk cut) when some did not come in time."""
        answers = self.connection.calls(calls, deadline) if calls else []
        if any(answer is None for answer in answers):
            self.cut = "time"
            return None
        return answers


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


def _property(bus_name: str, path: str, interface: str, name: str) -> Any:
    return wire.Call(path, PROPERTIES, "Get", "ss", (interface, name), bus_name)


def _action_name(bus_name: str, path: str, index: int) -> Any:
    return wire.Call(path, ACTION, "GetName", "i", (index,), bus_name)


def _extents_call(bus_name: str, path: str) -> Any:
    return wire.Call(path, "org.a11y.atspi.Component", "GetExtents", "u", (SCREEN_COORDINATES,), bus_name)


def _box(answer: Any) -> list[int] | None:
    """A GetExtents answer as [x, y, width, height]; None when the node has no box (no Component interface)."""
    return list(answer[0]) if isinstance(answer, list) else None


def _states(answer: Any) -> set[int] | None:
    """A GetState answer as the state numbers set; None when the node is gone."""
    return _bits(answer[0]) if isinstance(answer, list) else None


def _text(answer: Any) -> str:
    return str(answer[0]) if isinstance(answer, list) and answer[0] is not None else ""


def _bits(words: list[int]) -> set[int]:
    """The state numbers set in an AT-SPI state set (two 32-bit words)."""
    return {word_index * 32 + bit for word_index, word in enumerate(words) for bit in range(32) if word >> bit & 1}


def _groups(items: list[Any], size: int) -> Iterator[tuple[Any, ...]]:
    return zip(*[iter(items)] * size, strict=True)


def _in_tree_order(root: str, facts: dict[str, Facts]) -> Iterator[str]:
    """The walked paths under `root`, parents before children, siblings in order (the order a depth-first walk sees)."""
    stack = [root]
    while stack:
        path = stack.pop()
        yield path
        if path in facts:
            stack.extend(reversed(facts[path].children))


def _extents(node: Any, atspi: Any) -> list[int] | None:
    if node.get_component_iface() is None:
        return None
    rect = atspi.Component.get_extents(node, atspi.CoordType.SCREEN)
    return [rect.x, rect.y, rect.width, rect.height]


def _view(boxes: list[list[int] | None], tiles: dict[str, Any] | None) -> tuple[object, ...]:
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
