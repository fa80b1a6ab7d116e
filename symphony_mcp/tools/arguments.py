"""The tools' shared argument types, every one bounded (limits.py), and rules between arguments stated in the schema.

A host, a strict schema converter or a fuzzer reads the input schema as the truth: a call the
schema allows should be a call the server accepts. So strings carry maxLength, lists maxItems,
numbers a range and no NaN/Infinity (`allow_inf_nan=False`: pydantic refuses them with a
validation error instead of an OverflowError deep in a core), and combinations a tool refuses
(e.g. `click` with neither a description nor x and y) are stated with `refuse_combinations`.
Booleans and numbers are kept apart in every tool (`booleans_apart`, applied when a tool registers): JSON
`true` is not the number 1, nor 1 `true`.
"""

from __future__ import annotations

import functools
import types
from collections.abc import Iterable
from typing import Annotated, Any, Union, get_args, get_origin

from mcp.server.mcpserver import MCPServer
from pydantic import BaseModel, BeforeValidator, Field

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


def booleans_apart(annotation: Any) -> Any:
    """`annotation`, where a boolean given for a number, or a number for a boolean, is refused (nested models and
    lists too).

    pydantic's lax mode reads JSON `true` as 1 (`click(x=true)` clicked at x=1) and 1 as True, though the
    schema says "number" or "boolean". The check runs before pydantic's own validation and after the type's
    bounds are declared, so the schema stays as it is. Numbers written as strings stay accepted: hosts that take
    arguments on a command line send them so (the MCP Inspector CLI's `--tool-arg max_width=640`).
    """
    return Annotated[annotation, BeforeValidator(functools.partial(_kept_apart, annotation))]


def _kept_apart(annotation: Any, value: Any, where: str = "") -> Any:
    kinds = _scalar_kinds(annotation)
    if isinstance(value, bool) and bool not in kinds and kinds & {int, float}:
        raise ValueError(f"{where}{str(value).lower()} is a boolean, not a number")
    if isinstance(value, int | float) and not isinstance(value, bool) and kinds == {bool}:
        raise ValueError(f"{where}{value} is a number, not a boolean (true or false)")
    for member in _members(annotation):
        if isinstance(member, type) and issubclass(member, BaseModel) and isinstance(value, dict):
            for name, field in member.model_fields.items():
                if name in value:
                    _kept_apart(field.annotation, value[name], f"{where}{name}: ")
        elif get_origin(member) in (list, tuple) and isinstance(value, list) and get_args(member):
            for index, item in enumerate(value):
                _kept_apart(get_args(member)[0], item, f"{where}item {index}: ")
    return value


def _members(annotation: Any) -> list[Any]:
    """The types a value of `annotation` may have, through Annotated and unions."""
    origin = get_origin(annotation)
    if origin is Annotated:
        return _members(get_args(annotation)[0])
    if origin in (Union, types.UnionType):
        return [member for argument in get_args(annotation) for member in _members(argument)]
    return [annotation]


def _scalar_kinds(annotation: Any) -> set[Any]:
    return {member for member in _members(annotation) if member in (int, float, bool)}


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
    """The refused combinations of `<prefix>element`, `<prefix>description` and `<prefix>x`, `<prefix>y`: an element
    with a description or either coordinate, a description with either coordinate, or one coordinate without the
    other; with `optional=False` also none of them."""
    e, d, x, y = f"{prefix}element", f"{prefix}description", f"{prefix}x", f"{prefix}y"
    with_element = {**given(e), "anyOf": [given(d), given(x), given(y)]}
    with_coordinates = {**given(d), "anyOf": [given(x), given(y)]}
    half = [both(given(x), missing(y)), both(given(y), missing(x))] if optional else [missing(x), missing(y)]
    return [with_element, with_coordinates, {**missing(e, d), "anyOf": half}]


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
