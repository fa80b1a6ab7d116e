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


EMPTY_TARGET_STATES = frozenset({"editable", "focusable"})  # kept without a name or text: a field, a list box


def kept(node: dict[str, Any], area: Rect) -> Rect | None:
    """The node's box if a person can act on or read it inside `area`; else None. Plain arithmetic before any model:
    this runs for every node of every read."""
    states = node["states"]
    if "showing" not in states or "visible" not in states:
        return None
    x, y, width, height = node["box"]
    if width <= 0 or height <= 0:
        return None
    if x >= area.left + area.width or y >= area.top + area.height or x + width <= area.left or y + height <= area.top:
        return None
    text = node["text"].strip()
    if not text and role_key(node["role"]) in STRUCTURAL_ROLES:
        return None
    if (
        not text
        and not node["name"].strip()
        and not (node["editable_text"] or not EMPTY_TARGET_STATES.isdisjoint(states))
    ):
        # An empty field is still a place to type (Chromium's fields say so by their state only), an unnamed list
        # box still a thing to choose in.
        return None
    return Rect.model_construct(left=x, top=y, width=width, height=height)  # ints from the walk, width/height > 0
