"""The element types every source fills: the desktop's accessibility tree (`Element`) and the searcher's page DOM
(`search.types.PageElement`) are both a `NumberedElement`."""

from __future__ import annotations

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


class UnreadWindow(BaseModel):
    """A window on screen whose application has no accessibility tree."""

    title: str
    app: str
    pid: int | None
    reason: str


class ElementsResult(Placed):
    """The elements of the screen area the caller looks at, numbered."""

    elements: list[Element]
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
