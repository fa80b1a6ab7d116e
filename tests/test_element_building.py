"""`assembled` builds what pydantic's model_construct builds (elements/types.py), for the models a read builds."""

from __future__ import annotations

from typing import Any

from pydantic import BaseModel, PrivateAttr

from symphony_mcp.elements.types import Element, assembled
from symphony_mcp.imaging.geometry import Point, Rect


def element_values() -> dict[str, Any]:
    return {
        "id": 3,
        "role": "push button",
        "name": "Save",
        "box": assembled(Rect, {"left": 10, "top": 20, "width": 80, "height": 24}),
        "text": "",
        "value": None,
        "states": ["showing", "visible", "focusable"],
        "actions": ["click"],
        "center": assembled(Point, {"x": 50, "y": 32}),
        "app": "gedit",
        "window": "Untitled",
    }


def test_assembled_element_is_what_model_construct_builds() -> None:
    built, constructed = assembled(Element, element_values()), Element.model_construct(**element_values())
    assert built == constructed
    assert built.model_dump(mode="json") == constructed.model_dump(mode="json")
    assert built.model_dump_json() == constructed.model_dump_json()
    assert built.model_fields_set == constructed.model_fields_set
    moved = built.model_copy(update={"box": Rect(left=0, top=0, width=1, height=1)})  # as express() converts it
    assert moved.box.width == 1 and built.box.width == 80
    assert Element.model_validate(built.model_dump()) == built


def test_assembled_falls_back_to_model_construct_for_models_with_private_state() -> None:
    class Counted(BaseModel):
        size: int
        _seen: int = PrivateAttr(default=7)

    counted = assembled(Counted, {"size": 2})
    assert counted.size == 2 and counted._seen == 7
