"""The tools' shared argument types, every one bounded (limits.py), and rules between arguments stated in the schema.

A host, a strict schema converter or a fuzzer reads the input schema as the truth: a call the
schema allows should be a call the server accepts. So strings carry maxLength, lists maxItems,
numbers a range and no NaN/Infinity (`allow_inf_nan=False`: pydantic refuses them with a
validation error instead of an OverflowError deep in a core), and combinations a tool refuses
(e.g. `click` with neither a description nor x and y) are stated with `refuse_combinations`.
Numbers and booleans are strict in every tool (`strict_scalars`, applied when a tool registers): JSON
`true` is not the number 1, nor "5" the number 5.
"""

from __future__ import annotations

import functools
import types
from collections.abc import Iterable
from typing import Annotated, Any, Union, get_args, get_origin

from mcp.server.mcpserver import MCPServer
from pydantic import BaseModel, ConfigDict, Field, Strict

from symphony_mcp.imaging.geometry import CoordinateSpace, Region
from symphony_mcp.limits import (
    MAX_CLICKS,
    MAX_COORDINATE,
    MAX_DESCRIPTION,
    MAX_DURATION,
    MAX_ID,
    MAX_KEY_NAME,
    MAX_KEYS,
    MAX_MATCH_INDEX,
    MAX_MONITOR,
    MAX_TYPED_TEXT,
)
from symphony_mcp.sdk_internals import registered_input_schema

Space = Annotated[
    CoordinateSpace,
    Field(
        description="coordinates in and out: 'screenshot' = pixels of the latest screenshot (or frame_id); "
        "'screen' = absolute screen pixels"
    ),
]
FrameId = Annotated[
    str | None,
    Field(max_length=MAX_ID, description="screenshot whose pixels coordinates are in, in and out; default: the latest"),
]
KeyName = Annotated[str, Field(min_length=1, max_length=MAX_KEY_NAME)]
HoldKeys = Annotated[
    list[KeyName], Field(max_length=MAX_KEYS, description="modifier keys held during the action, e.g. ['shift']")
]
Keys = Annotated[
    list[KeyName],
    Field(min_length=1, max_length=MAX_KEYS, description="key names, e.g. ['ctrl', 'shift', 't'] or ['enter']"),
]


def coordinate(description: str) -> Any:
    """A bounded, finite coordinate field (pixels in the chosen space)."""
    return Field(ge=-MAX_COORDINATE, le=MAX_COORDINATE, allow_inf_nan=False, description=description)


X = Annotated[float, coordinate("x in the chosen space (see `space`)")]
Y = Annotated[float, coordinate("y in the chosen space (see `space`)")]
OptionalX = Annotated[float | None, coordinate("x in the chosen space (see `space`); instead of a description")]
OptionalY = Annotated[float | None, coordinate("y in the chosen space (see `space`); instead of a description")]
Duration = Annotated[float, Field(ge=0, le=MAX_DURATION, allow_inf_nan=False)]
Count = Annotated[int, Field(ge=1, le=MAX_CLICKS, description="1 = click, 2 = double, 3 = triple")]
Monitor = Annotated[int | None, Field(ge=0, le=MAX_MONITOR)]
Index = Annotated[
    int, Field(ge=0, le=MAX_MATCH_INDEX, description="which match to use when several are found (0 = best or nearest)")
]
Described = Annotated[str, Field(max_length=MAX_DESCRIPTION)]
OptionalDescribed = Annotated[str | None, Field(max_length=MAX_DESCRIPTION)]
TypedText = Annotated[str, Field(max_length=MAX_TYPED_TEXT)]
AreaRegion = Annotated[
    Region | None, Field(description="a rectangle {left, top, width, height} in `space` coordinates")
]


def strict_scalars(annotation: Any) -> Any:
    """`annotation` with every int, float and bool in it strict, nested models too.

    pydantic's lax mode reads JSON `true` as 1 (`click(x=true)` clicked at x=1), 1 as True and "5" as 5,
    though the schema says "number" or "boolean". The schema stays as it is; validation now agrees with it.
    A whole number is still a valid float.
    """
    if annotation in (int, float, bool):
        return Annotated[annotation, Strict()]
    if isinstance(annotation, type) and issubclass(annotation, BaseModel):
        return _strict_model(annotation)
    origin, arguments = get_origin(annotation), get_args(annotation)
    if origin is Annotated:
        return Annotated[(strict_scalars(arguments[0]), *annotation.__metadata__)]
    if origin in (Union, types.UnionType):
        return Union[tuple(strict_scalars(argument) for argument in arguments)]  # noqa: UP007 (built from a tuple)
    if origin in (list, tuple, dict):
        return origin[tuple(strict_scalars(argument) for argument in arguments)]
    return annotation


@functools.cache
def _strict_model(model: type[BaseModel]) -> type[BaseModel]:
    """`model` validating strictly: the same name, fields, docstring and schema."""
    namespace = {"model_config": ConfigDict(**{**model.model_config, "strict": True}), "__doc__": model.__doc__}
    return type(model.__name__, (model,), {**namespace, "__module__": model.__module__})


_GIVEN = {"not": {"type": "null"}}
_MISSING = {"type": "null"}


def given(*names: str) -> dict[str, Any]:
    """JSON schema: every one of `names` is given (present and not null)."""
    return {"required": list(names), "properties": dict.fromkeys(names, _GIVEN)}


def missing(*names: str) -> dict[str, Any]:
    """JSON schema: none of `names` is given (each absent or null)."""
    return {"properties": dict.fromkeys(names, _MISSING)}


def both(*schemas: dict[str, Any]) -> dict[str, Any]:
    """JSON schema: all of `schemas` hold (they name different arguments, so they merge)."""
    merged: dict[str, Any] = {}
    for schema in schemas:
        for key, value in schema.items():
            merged[key] = [*merged.get(key, []), *value] if key == "required" else {**merged.get(key, {}), **value}
    return merged


def one_target(prefix: str = "", optional: bool = False) -> list[dict[str, Any]]:
    """The refused combinations of `<prefix>description` and `<prefix>x`, `<prefix>y`: a description with either
    coordinate, or one coordinate without the other; with `optional=False` also neither."""
    d, x, y = f"{prefix}description", f"{prefix}x", f"{prefix}y"
    with_coordinates = {**given(d), "anyOf": [given(x), given(y)]}
    half = [both(given(x), missing(y)), both(given(y), missing(x))] if optional else [missing(x), missing(y)]
    return [with_coordinates, {**missing(d), "anyOf": half}]


def refuse_combinations(server: MCPServer, tool: str, *combinations: dict[str, Any]) -> None:
    """State in `tool`'s input schema the argument combinations it refuses, as a root `not: {anyOf: [...]}`.

    Root `not` (rather than anyOf/oneOf) is the form strict converters leave alone (openai-agents refuses a
    root anyOf; pydantic-ai does not walk into `not`) while validators and hypothesis-jsonschema honour it.
    The tool itself still checks the rule and says in words what to give.
    """
    refused = _schema(server, tool).setdefault("not", {"anyOf": []})
    refused["anyOf"].extend(combinations)


# Arguments a tool refuses when blank (the core strips them and says what to give): the schema says so too.
NEVER_BLANK = frozenset(
    {"description", "start_description", "end_description", "phrase", "start_phrase", "end_phrase"}
    | {"instruction", "target"}
)


def state_shared_rules(server: MCPServer, tools: Iterable[str]) -> None:
    """The rules of the arguments many of `tools` share: frame_id only in screenshot space, monitor or frame_id,
    and descriptions, phrases, instructions and targets that are more than white space."""
    for tool in tools:
        names = set(_schema(server, tool).get("properties", {}))
        for name in names & NEVER_BLANK:
            state_in_schema(server, tool, name, pattern=r"\S")
        if {"space", "frame_id"} <= names:
            refuse_combinations(server, tool, {**given("frame_id", "space"), "properties": _SCREEN_FRAME})
        if {"monitor", "frame_id"} <= names:
            refuse_combinations(server, tool, given("monitor", "frame_id"))


_SCREEN_FRAME = {"space": {"const": "screen"}, "frame_id": _GIVEN}


def state_in_schema(server: MCPServer, tool: str, argument: str, **keywords: Any) -> None:
    """Put what the core checks into `tool`'s schema for `argument` (its non-null form): a bound the settings
    decide (e.g. the longest text to type, rather than the hard one of limits.py that validation keeps), or
    "not blank". The core keeps checking and says in words what to change."""
    schema = _schema(server, tool)["properties"][argument]
    for member in schema.get("anyOf", [schema]):
        if member.get("type") != "null":
            member.update(keywords)


def _schema(server: MCPServer, tool: str) -> dict[str, Any]:
    """A registered tool's input schema, to amend in place (sdk_internals.py says why that is private)."""
    schema = registered_input_schema(server, tool)
    if schema is None:
        raise ValueError(f"no tool {tool!r} is registered")
    return schema
