"""The element types every source fills: the desktop's accessibility tree (`Element`) and the searcher's page DOM
(`search.types.PageElement`) are both a `NumberedElement`."""

from __future__ import annotations

from typing import Any

from pydantic import BaseModel, Field

from symphony_mcp.desktop.frames import Placed
from symphony_mcp.imaging.geometry import Point, Rect


class NumberedElement(BaseModel):
    """A numbered thing on screen: what it is, what it is called, where it is, whatever source read it."""

    id: int = Field(description="this element's number, valid with the frame it was read on (pass it as element)")
    role: str = Field(description="what it is, e.g. 'push button', 'entry', 'link', 'heading'")
    name: str = Field(description="its accessible name (a button's label, a field's label)")
    box: Rect = Field(description="where it is, in the result's space")


class Element(NumberedElement):
    """One thing on screen a person can act on or read, from the accessibility tree."""

    text: str = Field("", description="the text it holds (a field's content, a label's text)")
    value: float | None = Field(None, description="its current value (sliders, spin buttons, progress bars)")
    states: list[str] = Field(default_factory=list, description="e.g. focused, checked, editable, selected")
    actions: list[str] = Field(default_factory=list, description="the accessibility actions it offers")
    center: Point = Field(description="where a click on it lands: the centre of its part inside the frame")
    app: str = Field(description="the application it belongs to")
    window: str = Field(description="the title of its top-level window")


def _listed_by_shape(schema: dict[str, Any]) -> None:
    """The published schema of a long list of elements: each item an object with the required fields, described
    field by field in words rather than checked field by field. Why: the MCP Python client checks every result
    against the output schema with jsonschema, which took 120 ms (quiet machine) to 400 ms (loaded) for 444 fully
    typed elements and 4 ms for this; the server still validates the result with its own model."""
    element = Element.model_json_schema()
    fields = "; ".join(
        f"{name} ({_kind(field, element.get('$defs', {}))}): {field.get('description', '')}".rstrip(": ")
        for name, field in element["properties"].items()
    )
    schema["items"] = {
        "type": "object",
        "required": element["required"],
        "description": f"{element['description']} Fields: {fields}",
    }


def _kind(field: dict[str, Any], definitions: dict[str, Any]) -> str:
    """A field's JSON type in words: 'integer', 'number or null', 'array of string', '{x: integer, y: integer}'."""
    if "$ref" in field:
        properties = definitions[field["$ref"].rsplit("/", 1)[-1]]["properties"]
        return "{" + ", ".join(f"{name}: {_kind(part, definitions)}" for name, part in properties.items()) + "}"
    if "anyOf" in field:
        return " or ".join(_kind(option, definitions) for option in field["anyOf"])
    kind = field.get("type", "any")
    if kind == "array":
        return f"array of {_kind(field.get('items', {}), definitions)}"
    return " or ".join(kind) if isinstance(kind, list) else str(kind)


class UnreadWindow(BaseModel):
    """A window on screen whose application has no accessibility tree."""

    title: str
    app: str
    pid: int | None
    reason: str


class ElementsResult(Placed):
    """The elements of the screen area the caller looks at, numbered."""

    elements: list[Element] = Field(json_schema_extra=_listed_by_shape)
    total: int = Field(description="how many elements matched before max cut the list")
    applications: list[str] = Field(description="the applications whose trees were read")
    windows_without_tree: list[UnreadWindow] = Field(
        default_factory=list,
        description="windows on screen whose application exposes no accessibility tree (e.g. Tk): use find_text "
        "or a screenshot there",
    )
    cut: str | None = Field(
        None,
        description="why the walk stopped early ('time', 'count' or 'depth'): elements may be missing; narrow it "
        "with region, window or roles",
    )
    visited: int = Field(description="tree nodes visited")
    unchanged_applications: int = Field(
        0, description="applications whose tree had not changed since the last read, so was not walked again"
    )
    read_ms: float


class FoundElements(Placed):
    """find_element's answer: matching elements, best first."""

    query: str
    matches: list[ElementMatch]


class ElementMatch(BaseModel):
    element: Element
    score: float = Field(description="similarity of the element's name or text to the query, 0..100")
    exact: bool = Field(
        description="true: its name or text equals the query (case, punctuation and spacing aside); false: it "
        "differs, check it is the element you meant"
    )
    matched: str = Field(description="the field that matched: 'name', 'text' or 'role'")


FoundElements.model_rebuild()
