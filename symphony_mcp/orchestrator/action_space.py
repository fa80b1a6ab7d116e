"""The planner's action space, generated from the server's tools, and safe parsing of its answer.

The answer's action is one Python call expression (`click(description="Save")`), read with `ast`
(literal arguments only, never evaluated) and validated against the tool's JSON input schema.
"""

from __future__ import annotations

import ast
import json
import re
from collections.abc import Collection
from dataclasses import dataclass
from typing import Any

from jsonschema import Draft202012Validator, ValidationError
from mcp.types import Tool

from symphony_mcp.config import setting_label
from symphony_mcp.models.calls import bind_arguments, call_name, last_code_block, literal, single_call
from symphony_mcp.models.reask import UnusableAnswerError
from symphony_mcp.orchestrator.records import ParsedAction
from symphony_mcp.policy.tool_names import TOOL_NAMES
from symphony_mcp.policy.tools import check_known

# Tools the loop itself uses (observation, memory, bookkeeping) or that are too low-level to plan with.
INFRASTRUCTURE_TOOLS = frozenset(
    {
        "screenshot",
        "screen_info",
        "action_history",
        "model_status",
        "start_task",
        "end_task",
        "list_tasks",
        "record_step",
        "reflect",
        "memory_audit",
        "check_loop",
        "locate",
        "ocr",
        "find_text",
        # The tree as numbered targets: the loop observes with elements under dual grounding; the planner names ids.
        "elements",
        "find_element",
        "list_windows",
        "key_down",
        "key_up",
        # The Coder's own tool: the planner hands code work to the Coder (call_code_agent), as in OS-Symphony.
        "run_code",
        # The searcher's model-free listing; the planner asks the searcher itself (call_search_agent).
        "search_docs",
    }
)
# OS-Symphony's names for tool agents, and the arguments the planner gives them (the rest keep their defaults).
PLANNER_NAMES = {"code_agent": "call_code_agent", "search_tutorial": "call_search_agent"}
PLANNER_ARGUMENTS = {"code_agent": ("task",), "search_tutorial": ("query",)}
# What an action needs among the server's model roles (model_status): without it, it is not offered. Parameters that
# name an element by description (description, start_description, ...) are located by the grounding model.
TOOL_ROLES = {"code_agent": "coder", "search_tutorial": "searcher"}
GROUNDING_ROLE = "grounder"
DONE, FAIL = "done", "fail"
_CONTROL_DOCS = {
    DONE: "done()\n    The task is complete: the screen shows it.",
    FAIL: 'fail(reason: str = "")\n    The task cannot be completed; say why.',
}
_CONTROL_SCHEMAS: dict[str, tuple[str, dict[str, Any]]] = {
    DONE: ("The task is complete: the screen shows it.", {"type": "object", "properties": {}}),
    FAIL: (
        "The task cannot be completed; say why.",
        {"type": "object", "properties": {"reason": {"type": "string", "description": "why not"}}},
    ),
}


ENABLED_SETTING = setting_label("orchestrator", "enabled_tools")


def check_enabled_tools(enabled: list[str] | None) -> None:
    """Refuse a planner tool that no server has, or one the planner never plans with, before anything starts."""
    if enabled is not None:
        check_known(ENABLED_SETTING, enabled, TOOL_NAMES - INFRASTRUCTURE_TOOLS, "action tools")


@dataclass(frozen=True)
class ActionSpec:
    name: str
    description: str
    schema: dict[str, Any]
    tool: str | None = None  # the server's tool, when the planner's name differs

    @classmethod
    def of(cls, tool: Tool, grounding: bool = True, numbered: bool = False) -> ActionSpec:
        """The tool as the planner sees it: OS-Symphony's name and arguments for tool agents, without element
        descriptions when no grounding model could locate them, and without element ids unless the planner is
        shown the numbered elements (`numbered`, dual grounding)."""
        schema = dict(tool.input_schema)
        kept = PLANNER_ARGUMENTS.get(tool.name)
        if kept is not None:
            properties = {k: v for k, v in schema.get("properties", {}).items() if k in kept}
            required = [k for k in schema.get("required", []) if k in kept]
            schema = {"type": "object", "properties": properties, "required": required}
        dropped = tuple(suffix for suffix, kept in (("description", grounding), ("element", numbered)) if not kept)
        if dropped:
            properties = {k: v for k, v in schema.get("properties", {}).items() if not k.endswith(dropped)}
            required = [k for k in schema.get("required", []) if k in properties]
            schema = {**schema, "properties": properties, "required": required}
        name = PLANNER_NAMES.get(tool.name)
        return cls(name or tool.name, tool.description or "", schema, tool.name if name else None)

    @property
    def parameters(self) -> list[str]:
        return list(self.schema.get("properties", {}))

    def render(self) -> str:
        properties: dict[str, Any] = self.schema.get("properties", {})
        required = set(self.schema.get("required", []))
        signature = ", ".join(_render_parameter(n, p, n in required) for n, p in properties.items())
        lines = [f"{self.name}({signature})", f"    {' '.join(self.description.split())}"]
        for name, prop in properties.items():
            if prop.get("description"):
                lines.append(f"    - {name}: {prop['description']}")
        return "\n".join(lines)


class ActionSpace:
    def __init__(self, actions: list[ActionSpec], grounding: bool = True, numbered: bool = False) -> None:
        self.actions = {a.name: a for a in actions}
        self.grounding = grounding  # whether actions take element descriptions (a grounding model locates them)
        self.numbered = numbered  # whether actions take element ids (the planner sees the numbered elements)
        self._validators = {a.name: Draft202012Validator(a.schema) for a in actions}

    @classmethod
    def from_tools(
        cls,
        tools: list[Tool],
        enabled: list[str] | None = None,
        roles: Collection[str] | None = None,
        numbered: bool = False,
    ) -> ActionSpace:
        """The actions the planner may take: the server's action tools (or `enabled` of them), only those whose
        model `roles` has (the server's configured roles; None: all), so the planner is never offered what fails;
        element ids only when it is shown the numbered elements (`numbered`)."""
        offered = {t.name: t for t in tools if t.name not in INFRASTRUCTURE_TOOLS}
        if enabled is not None:
            check_known(ENABLED_SETTING, enabled, offered, "action tools on offer")
            offered = {name: offered[name] for name in enabled}
        if roles is not None:
            missing = {name: role for name, role in TOOL_ROLES.items() if name in offered and role not in roles}
            if enabled is not None and missing:
                named = ", ".join(f"{name} needs the {role} model" for name, role in missing.items())
                raise ValueError(f"enabled tools cannot run: {named} (SYMPHONY_MODELS__<ROLE>__*), not configured")
            offered = {name: tool for name, tool in offered.items() if name not in missing}
        grounding = roles is None or GROUNDING_ROLE in roles
        return cls([ActionSpec.of(t, grounding, numbered) for t in offered.values()], grounding, numbered)

    def render(self, final_step: bool) -> str:
        """The actions shown to the model; on the final step only done and fail."""
        blocks = [] if final_step else [a.render() for a in self.actions.values()]
        return "\n\n".join([*blocks, _CONTROL_DOCS[DONE], _CONTROL_DOCS[FAIL]])

    def tool_definitions(self, final_step: bool) -> list[dict[str, Any]]:
        """The same actions as OpenAI function definitions, for endpoints with native function calling."""
        specs = [] if final_step else list(self.actions.values())
        definitions = [_function(a.name, a.description, a.schema) for a in specs]
        return [*definitions, _function(DONE, *_CONTROL_SCHEMAS[DONE]), _function(FAIL, *_CONTROL_SCHEMAS[FAIL])]

    def parse(self, answer: str, final_step: bool) -> ParsedAction:
        """The answer's one action, checked; UnusableAnswerError says what is wrong and what is allowed."""
        code = last_code_block(answer)
        call = single_call(code)
        name = call_name(call)
        if name in (DONE, FAIL):
            return ParsedAction(name=name, arguments=_control_arguments(name, call), code=code)
        spec = self._spec(name, final_step)
        return self._checked(spec, bind_arguments(call, spec.name, spec.parameters), code)

    def parse_call(self, name: str, arguments_json: str, final_step: bool) -> ParsedAction:
        """A native function call, checked like a written one."""
        try:
            arguments = json.loads(arguments_json or "{}")
        except json.JSONDecodeError as exc:
            raise UnusableAnswerError(f"the arguments of {name} are not valid JSON ({exc.msg})") from exc
        if not isinstance(arguments, dict):
            raise UnusableAnswerError(f"the arguments of {name} must be a JSON object")
        code = f"{name}({', '.join(f'{k}={v!r}' for k, v in arguments.items())})"
        if name == DONE:
            return ParsedAction(name=name, arguments={}, code=code)
        if name == FAIL:
            reason = arguments.get("reason")
            return ParsedAction(name=name, arguments={"reason": str(reason)} if reason else {}, code=code)
        spec = self._spec(name, final_step)
        unknown = sorted(set(arguments) - set(spec.parameters))
        if unknown:
            raise UnusableAnswerError(
                f"{name}() has no parameter {unknown[0]!r}; its parameters: {', '.join(spec.parameters)}"
            )
        return self._checked(spec, arguments, code)

    def _spec(self, name: str, final_step: bool) -> ActionSpec:
        if final_step:
            raise UnusableAnswerError(f"this is the last step: only done() or fail(reason) are allowed, not {name}()")
        spec = self.actions.get(name)
        if spec is None:
            allowed = ", ".join([*self.actions, DONE, FAIL])
            raise UnusableAnswerError(f"there is no action {name!r}; the actions are: {allowed}")
        return spec

    def _checked(self, spec: ActionSpec, arguments: dict[str, Any], code: str) -> ParsedAction:
        problems = sorted(
            self._validators[spec.name].iter_errors(arguments),
            key=lambda e: (_is_combination(e), [str(p) for p in e.absolute_path]),
        )
        if problems:
            details = "; ".join(_problem(spec.name, e) for e in problems)
            raise UnusableAnswerError(f"invalid arguments for {spec.name}(): {details}")
        return ParsedAction(name=spec.name, tool=spec.tool, arguments=arguments, code=code)


def _is_combination(error: ValidationError) -> bool:
    """A combination of arguments the tool refuses: its schema states them as a root `not`."""
    return error.validator == "not" and not error.absolute_path


def _problem(action: str, error: ValidationError) -> str:
    if _is_combination(error):  # jsonschema would quote the whole `not` schema
        given = ", ".join(sorted(error.instance)) or "no arguments"
        return f"{action}() does not take this combination ({given}); its parameter descriptions say which to give"
    return f"{'.'.join(map(str, error.absolute_path)) or action}: {error.message}"


def section(answer: str, title: str) -> str | None:
    """The text of a `(Title)` section of the answer, if present."""
    pattern = rf"\(\s*{re.escape(title)}\s*\)\s*(.*?)(?=\n\s*\([A-Z][^)\n]{{2,40}}\)|```|\Z)"
    match = re.search(pattern, answer, re.S | re.I)
    return match.group(1).strip() if match and match.group(1).strip() else None


def _control_arguments(name: str, call: ast.Call) -> dict[str, Any]:
    if name == DONE:
        if call.args or call.keywords:
            raise UnusableAnswerError("done() takes no arguments")
        return {}
    values = [literal(n, "reason") for n in call.args] + [literal(k.value, "reason") for k in call.keywords]
    if len(values) > 1 or any(k.arg not in (None, "reason") for k in call.keywords):
        raise UnusableAnswerError('fail takes one argument: fail(reason="...")')
    return {"reason": str(values[0])} if values else {}


def _function(name: str, description: str, parameters: dict[str, Any]) -> dict[str, Any]:
    return {"type": "function", "function": {"name": name, "description": description, "parameters": parameters}}


def _render_parameter(name: str, prop: dict[str, Any], required: bool) -> str:
    rendered = f"{name}: {_type_name(prop)}"
    if not required:
        rendered += f" = {prop['default']!r}" if "default" in prop else " = None"
    return rendered


def _type_name(prop: dict[str, Any]) -> str:
    if "enum" in prop:
        return " | ".join(repr(v) for v in prop["enum"])
    if "anyOf" in prop:
        return " | ".join(_type_name(p) for p in prop["anyOf"])
    kind = prop.get("type")
    if kind == "array":
        items = prop.get("items") or prop.get("prefixItems")
        inner = _type_name(items) if isinstance(items, dict) else "..."
        return f"list[{inner}]"
    return {"string": "str", "integer": "int", "number": "float", "boolean": "bool", "null": "None"}.get(
        str(kind), "any"
    )
