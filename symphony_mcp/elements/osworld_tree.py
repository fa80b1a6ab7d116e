"""The `accessibility_tree` observation in OSWorld's format: the XML its Linux controller returns (`/accessibility`).

Facts of that format (OSWorld's `desktop_env/server/main.py`, `_create_atspi_node`): a `<desktop-frame>` root holding
one element per application; each node's tag is its role name with spaces as `-`; attributes `name`,
`st:<state>="true"` per state, `attr:<key>` per object attribute, `cp:screencoord="(x, y)"` and `cp:size="(w, h)"`
only when visible and showing, `image="true"` / `selection="true"` when it has those interfaces,
`val:value|min|max|step`, `act:<action>_desc` and `act:<action>_kb`; the node's text as element text. The prefixes
are bound to the namespaces OSWorld's getters and metrics query with (`desktop_env.evaluators.metrics.general`).
OSWorld walks 50 deep and 1024 children wide and filters nothing else; so does this, within a node count and time
bound of ours, and a cut walk ends with a comment saying why. Not reproduced: LibreOffice Calc's scan of showing
cells only (its tables are walked like any other, up to the width limit).
"""

from __future__ import annotations

import re
import xml.etree.ElementTree as ET
from typing import Any

NAMESPACE_ROOT = "https://accessibility.ubuntu.example.org/ns"
NAMESPACES = {
    "st": f"{NAMESPACE_ROOT}/state",
    "attr": f"{NAMESPACE_ROOT}/attributes",
    "cp": f"{NAMESPACE_ROOT}/component",
    "doc": f"{NAMESPACE_ROOT}/document",
    "docattr": f"{NAMESPACE_ROOT}/document/attributes",
    "txt": f"{NAMESPACE_ROOT}/text",
    "val": f"{NAMESPACE_ROOT}/value",
    "act": f"{NAMESPACE_ROOT}/action",
}
MAX_DEPTH = 50  # OSWorld's
MAX_WIDTH = 1024  # OSWorld's
MAX_NODES = 20_000  # ours: a bound on the answer's size
WALK_SECONDS = 10.0  # ours: a bound on the walk's time

for _prefix, _uri in NAMESPACES.items():  # the prefixes OSWorld's output uses (lxml's nsmap there)
    ET.register_namespace(_prefix, _uri)
# Characters XML 1.0 cannot hold (an application's text may contain them): dropped, as a parser would refuse them.
_NOT_XML = re.compile("[^\t\n\r\u0020-\ud7ff\ue000-\ufffd\U00010000-\U0010ffff]")
_NAME = re.compile(r"[A-Za-z_][A-Za-z0-9_.-]*")


def tree_xml(answer: dict[str, Any]) -> str:
    """The helper's `tree` answer as OSWorld's XML text."""
    root = ET.Element("desktop-frame")
    for application in answer["applications"]:
        root.append(_element(application))
    if answer.get("cut"):
        root.append(ET.Comment(f" walk cut by {answer['cut']} after {answer['nodes']} nodes: nodes may be missing "))
    return ET.tostring(root, encoding="unicode")  # no layout whitespace, as OSWorld's: a node's text is its own


def _element(node: dict[str, Any]) -> ET.Element:
    tag = (node["role"] or "unknown").replace(" ", "-")
    element = ET.Element(tag if _NAME.fullmatch(tag) else "unknown", _attributes(node))
    if node["text"]:
        element.text = _clean(node["text"])
    for child in node["children"]:
        element.append(_element(child))
    return element


def _attributes(node: dict[str, Any]) -> dict[str, str]:
    attributes = {"name": _clean(node["name"])}
    attributes.update({_qualified("st", state): "true" for state in node["states"] if _NAME.fullmatch(state)})
    attributes.update(
        {
            _qualified("attr", key): _clean(str(value))
            for key, value in node["attributes"].items()
            if _NAME.fullmatch(key)
        }
    )
    if node["box"] is not None:
        x, y, width, height = node["box"]
        attributes[_qualified("cp", "screencoord")] = f"({x}, {y})"
        attributes[_qualified("cp", "size")] = f"({width}, {height})"
    if node["image"]:
        attributes["image"] = "true"
    if node["selection"]:
        attributes["selection"] = "true"
    for key, number in (node["value"] or {}).items():
        attributes[_qualified("val", key)] = str(number)
    for action in node["actions"]:
        name = action["name"].replace(" ", "-")
        if _NAME.fullmatch(name):
            attributes[_qualified("act", f"{name}_desc")] = _clean(action["description"])
            attributes[_qualified("act", f"{name}_kb")] = _clean(action["key_binding"])
    return attributes


def _qualified(prefix: str, name: str) -> str:
    return f"{{{NAMESPACES[prefix]}}}{name}"


def _clean(text: str) -> str:
    return _NOT_XML.sub("", text)
