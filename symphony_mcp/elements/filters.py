"""Which tree nodes become elements: what a person can act on or read, inside the area looked at.

The walk (atspi_helper.py) already skips what is not showing and subtrees outside the screen; the rules of
what is kept are here, in one place.
"""

from __future__ import annotations

from typing import Any

from symphony_mcp.imaging.geometry import Rect

# Roles that only arrange other nodes: kept out unless they hold text of their own.
STRUCTURAL_ROLES = frozenset(
    {
        "application", "filler", "frame", "window", "panel", "scroll pane", "viewport", "layered pane",
        "root pane", "glass pane", "redundant object", "unknown", "invalid", "desktop frame", "internal frame",
        "split pane", "option pane", "grouping", "document frame", "section", "form", "static", "block quote",
    }
)  # fmt: skip


def role_key(role: str) -> str:
    """A role as compared: case, dashes and underscores aside ('push-button' is 'push button')."""
    return " ".join(role.replace("-", " ").replace("_", " ").casefold().split())


def kept(node: dict[str, Any], area: Rect) -> Rect | None:
    """The node's box if a person can act on or read it inside `area`; else None."""
    states = set(node["states"])
    if "showing" not in states or "visible" not in states:
        return None
    x, y, width, height = node["box"]
    if width <= 0 or height <= 0:
        return None
    box = Rect(left=x, top=y, width=width, height=height)
    if box.intersect(area) is None:
        return None
    has_text = bool(node["name"].strip() or node["text"].strip())
    if role_key(node["role"]) in STRUCTURAL_ROLES and not node["text"].strip():
        return None
    if not has_text and not (node["editable_text"] or states & {"editable", "focusable"}):
        # An empty field is still a place to type (Chromium's fields say so by their state only), an unnamed list
        # box still a thing to choose in.
        return None
    return box
