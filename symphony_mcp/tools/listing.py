"""What `tools/list` sends: the tools' schemas without the parts pydantic generates that no host reads.

Every tool's schema must stand alone (MCP has no definitions shared across tools), so the action record
that thirteen tools return is repeated thirteen times; what each copy carries should be meaning, not
noise. Removed: titles pydantic derives from names (`"title": "Frame Id"` beside `frame_id`, a
definition's title beside its `$defs` key), docstring indentation in descriptions, and in output schemas
the annotations that constrain nothing (`default`, `additionalProperties: true`) and the
`anyOf: [{"type": T}, {"type": "null"}]` spelling of a nullable type, written `"type": [T, "null"]`.
The schemas accept and reject exactly what they did; the server still validates with its own models.
"""

from __future__ import annotations

import inspect
from typing import Any

from mcp.types import Tool

# What a generated input model is called: the SDK names the arguments model `<tool>Arguments`.
_ARGUMENTS_SUFFIX = "Arguments"


def concise_tool(tool: Tool, rules: bool = True) -> Tool:
    """`tool` as listed; without `rules`, its input schema drops the root `not` that states the argument
    combinations the tool refuses (OpenAI's strict mode refuses `not`, and with it the whole request)."""
    output = tool.output_schema
    inputs = tool.input_schema if rules else {key: value for key, value in tool.input_schema.items() if key != "not"}
    return tool.model_copy(
        update={
            "description": inspect.cleandoc(tool.description) if tool.description else tool.description,
            "input_schema": _schema(inputs, output=False),
            "output_schema": None if output is None else _schema(output, output=True),
        }
    )


def _schema(schema: dict[str, Any], *, output: bool) -> dict[str, Any]:
    root = _node(schema, output=output)
    title = root.get("title")
    if isinstance(title, str) and (output or title.endswith(_ARGUMENTS_SUFFIX)):
        del root["title"]  # the generated model's class name
    return root


def _node(node: Any, *, output: bool, generated_title: str | None = None) -> Any:
    if isinstance(node, list):
        return [_node(item, output=output) for item in node]
    if not isinstance(node, dict):
        return node
    result: dict[str, Any] = {}
    for key, value in node.items():
        if key == "properties" and isinstance(value, dict):
            result[key] = {
                child: _node(body, output=output, generated_title=child.replace("_", " ").title())
                for child, body in value.items()
            }
        elif key == "$defs" and isinstance(value, dict):
            result[key] = {child: _node(body, output=output, generated_title=child) for child, body in value.items()}
        elif key == "title" and value == generated_title:
            continue
        elif key == "description" and isinstance(value, str):
            result[key] = inspect.cleandoc(value)
        elif output and (key == "default" or (key == "additionalProperties" and value is True)):
            continue
        else:
            result[key] = _node(value, output=output)
    if output:
        _nullable_as_type_list(result)
    return result


def _nullable_as_type_list(node: dict[str, Any]) -> None:
    options = node.get("anyOf")
    if not isinstance(options, list) or len(options) != 2 or {"type": "null"} not in options:
        return
    (other,) = [option for option in options if option != {"type": "null"}]
    if set(other) == {"type"} and isinstance(other["type"], str):
        del node["anyOf"]
        node["type"] = [other["type"], "null"]
