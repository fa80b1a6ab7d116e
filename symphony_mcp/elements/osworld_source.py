"""The elements of a remote machine, from the XML its OSWorld controller answers at `/accessibility`.

It answers the reader's requests as the local AT-SPI helper does (`read`, `check`, `act`, `tree`; atspi_helper.py
says what each holds), so the reader filters, numbers and checks remote nodes on the same path as local ones.
What the XML holds is osworld_tree.py's (which writes it for the local display): per node its role as tag, `name`,
`st:<state>="true"`, `cp:screencoord` / `cp:size` only when showing, `val:value`, `act:<action>_desc`, its text.
What it lacks, and what follows here:
- no identity that outlives a reading: `check` reads the tree again and finds the node by application, window, role
  and name, the one nearest its box; the reader then says the id is stale when that box moved;
- no actions over the controller: `act` answers not done, so acting by id goes through the pointer and the action
  record says why;
- no process ids: an application's `pid` is None.
"""

from __future__ import annotations

import re
import threading
import xml.etree.ElementTree as ET
from collections import OrderedDict
from collections.abc import Callable, Iterator
from typing import Any

from symphony_mcp.elements import osworld_tree
from symphony_mcp.elements.osworld_tree import NAMESPACES
from symphony_mcp.errors import DisplayUnavailableError, clip

MAX_DEPTH = osworld_tree.MAX_DEPTH  # OSWorld's own walk stops there
READINGS_KEPT = 8  # readings whose nodes `check` can still name (the reader keeps a reading per frame)
NO_ACTIONS = "the OSWorld controller offers no accessibility actions, only the pointer and keys"
_STATE = f"{{{NAMESPACES['st']}}}"
_ACTION = f"{{{NAMESPACES['act']}}}"
_SCREENCOORD = f"{{{NAMESPACES['cp']}}}screencoord"
_SIZE = f"{{{NAMESPACES['cp']}}}size"
_VALUE = f"{{{NAMESPACES['val']}}}value"
_PAIR = re.compile(r"\(\s*(-?\d+)\s*,\s*(-?\d+)\s*\)")


class OsworldTreeSource:
    """The reader's tree source on an OSWorld VM: `xml` fetches the controller's tree (it blocks: run off the loop)."""

    def __init__(self, xml: Callable[[], str], no_actions: str = NO_ACTIONS) -> None:
        self.xml = xml
        self.no_actions = no_actions  # why acting by element goes through the pointer on this machine
        self._lock = threading.Lock()
        self._readings: OrderedDict[int, list[dict[str, Any]]] = OrderedDict()
        self._next_reading = 1
        self._last: tuple[str, list[dict[str, Any]], str | None] | None = None  # the last XML, its nodes, the cut

    def request(self, message: dict[str, Any], timeout: float) -> dict[str, Any]:
        """One request as the AT-SPI helper answers it (`timeout` is the controller's own, set with its URL)."""
        op = message.get("op")
        if op == "read":
            return self._read(int(message["max_nodes"]), message.get("known"))
        if op == "check":
            return self._check(int(message["reading"]), int(message["ref"]))
        if op == "act":
            return {"done": False, "action": None, "why": self.no_actions}
        if op == "tree":
            return {"xml": self.xml()}
        raise ValueError(f"unknown request {op!r}")

    def close(self) -> None:
        """Nothing to stop: the controller is reached per request."""

    def _read(self, max_nodes: int, known: int | None) -> dict[str, Any]:
        text = self.xml()
        with self._lock:
            same = self._last is not None and self._last[0] == text
            if same and self._last is not None:
                nodes, cut = self._last[1], self._last[2]
            else:
                nodes, cut = _nodes(text, max_nodes)
                self._last = (text, nodes, cut)
            reading = self._next_reading
            self._next_reading += 1
            unchanged = same and known is not None and known == reading - 1
            self._readings[reading] = nodes
            while len(self._readings) > READINGS_KEPT:
                self._readings.popitem(last=False)
        apps: dict[str, int] = {}
        for node in nodes:
            apps[node["app"]] = apps.get(node["app"], 0) + 1
        return {
            "reading": reading,
            "apps": [{"name": name, "pid": None, "nodes": count} for name, count in apps.items()],
            "nodes": None if unchanged else nodes,
            "visited": len(nodes),
            "cut": cut,
            "cached_apps": len(apps) if same else 0,
        }

    def _check(self, reading: int, ref: int) -> dict[str, Any]:
        gone = {"present": False, "showing": False, "box": None}
        with self._lock:
            nodes = self._readings.get(reading)
        if nodes is None or not 0 <= ref < len(nodes):
            return gone
        read = nodes[ref]
        key = (read["app"], read["window"], read["role"], read["name"])
        now, _ = _nodes(self.xml(), osworld_tree.MAX_NODES)
        same = [n for n in now if (n["app"], n["window"], n["role"], n["name"]) == key]
        if not same:
            return gone
        nearest = min(same, key=lambda n: sum(abs(a - b) for a, b in zip(n["box"], read["box"], strict=True)))
        return {"present": True, "showing": "showing" in nearest["states"], "box": nearest["box"]}


def _nodes(text: str, max_nodes: int) -> tuple[list[dict[str, Any]], str | None]:
    """The showing nodes with a box, in tree order, as the helper's `read` has them; and why the list was cut
    (`count`: `max_nodes` reached; `depth`: nodes nested deeper than `MAX_DEPTH` left out), else None.
    Expat (2.4 and later) refuses entity amplification and ElementTree never fetches external entities, so a
    hostile tree can cost no more than its own size, which the controller client bounds."""
    try:
        root = ET.fromstring(text)
    except ET.ParseError as exc:
        raise DisplayUnavailableError(f"the controller's accessibility tree is not XML ({exc}): {clip(text)}") from exc
    nodes: list[dict[str, Any]] = []
    deeper = [False]
    for application in root:
        app = application.get("name", "")
        for window in application:
            for element in _showing(window, deeper):
                node = _node(element, app, window.get("name", ""))
                if node is None:
                    continue
                if len(nodes) >= max_nodes:
                    return nodes, "count"
                node["ref"] = len(nodes)
                nodes.append(node)
    return nodes, "depth" if deeper[0] else None


def _showing(window: ET.Element, deeper: list[bool]) -> Iterator[ET.Element]:
    """The window's nodes in tree order, but for what is under a node that is not showing; iterative, and no deeper
    than `MAX_DEPTH` under the window (a hostile machine's XML may nest far beyond Python's recursion limit):
    `deeper[0]` is set when something was left out for depth."""
    stack: list[tuple[ET.Element, int]] = [(window, 0)]
    while stack:
        element, depth = stack.pop()
        if element.get(f"{_STATE}showing") != "true":
            continue
        yield element
        if depth >= MAX_DEPTH:
            deeper[0] = deeper[0] or len(element) > 0
            continue
        stack.extend((child, depth + 1) for child in reversed(element))


def _node(element: ET.Element, app: str, window: str) -> dict[str, Any] | None:
    corner, size = _PAIR.fullmatch(element.get(_SCREENCOORD, "")), _PAIR.fullmatch(element.get(_SIZE, ""))
    if corner is None or size is None or not isinstance(element.tag, str):
        return None
    box = [int(corner[1]), int(corner[2]), int(size[1]), int(size[2])]
    if box[2] <= 0 or box[3] <= 0:
        return None
    states = [key[len(_STATE) :] for key, value in element.attrib.items() if key.startswith(_STATE) and value == "true"]
    actions = [
        key[len(_ACTION) : -len("_desc")].replace("-", " ")
        for key in element.attrib
        if key.startswith(_ACTION) and key.endswith("_desc")
    ]
    try:
        value: float | None = float(element.attrib[_VALUE])
    except (KeyError, ValueError):
        value = None
    return {
        "role": element.tag.replace("-", " "),
        "name": element.get("name", ""),
        "text": element.text or "",
        "value": value,
        "states": states,
        "actions": actions,
        "editable_text": "editable" in states,
        "box": box,
        "app": app,
        "window": window,
    }
