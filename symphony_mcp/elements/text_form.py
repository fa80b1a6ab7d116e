"""The compact text form of elements: one line per element, bounded, for hosts that read text, not images."""

from __future__ import annotations

from symphony_mcp.elements.types import Element

MAX_CHARS = 16_000  # about 4k tokens: less than a screenshot costs a vision model
FIELD_CHARS = 80  # a name or text longer than this is cut
SHOWN_STATES = ("focused", "checked", "selected", "pressed", "expanded", "editable")
_FLAT = str.maketrans({"\n": " ", "\t": " ", "\r": " "})


def lines(elements: list[Element], limit: int = MAX_CHARS) -> str:
    """`[id] role "name" text="..." value=v (states) @x,y wxh`, coordinates as in the elements given; elements past
    `limit` characters are counted in a last line instead of listed."""
    out: list[str] = []
    size = 0
    for index, element in enumerate(elements):
        line = _line(element)
        if size + len(line) + 1 > limit:
            out.append(f"... {len(elements) - index} more elements not listed: narrow with region, window or roles")
            break
        out.append(line)
        size += len(line) + 1
    return "\n".join(out) if out else "(no elements)"


def _line(element: Element) -> str:
    parts = [f"[{element.id}] {element.role}"]
    if element.name:
        parts.append(_quoted(element.name))
    if element.text and element.text != element.name:
        parts.append(f"text={_quoted(element.text)}")
    if element.value is not None:
        parts.append(f"value={element.value:g}")
    states = [s for s in SHOWN_STATES if s in element.states]
    if states:
        parts.append(f"({', '.join(states)})")
    box = element.box
    parts.append(f"@{element.center.x},{element.center.y} box {box.left},{box.top} {box.width}x{box.height}")
    return " ".join(parts)


def _quoted(value: str) -> str:
    flat = value.translate(_FLAT)
    if len(flat) > FIELD_CHARS:
        flat = flat[: FIELD_CHARS - 3] + "..."
    return f'"{flat}"'
