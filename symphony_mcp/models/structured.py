"""Ask a model for a JSON object that must validate against a schema; an invalid one is re-asked (models/reask.py)."""

from __future__ import annotations

import json
import re
from collections.abc import Sequence
from typing import TypeVar

from pydantic import BaseModel, ValidationError

from symphony_mcp.models.client import ChatClient
from symphony_mcp.models.messages import ChatMessage
from symphony_mcp.models.reask import TOOL_REASKS, UnusableAnswerError, UsableAnswer, ask_until_usable

T = TypeVar("T", bound=BaseModel)
_FENCED = re.compile(r"```(?:json)?\s*(\{.*?\})\s*```", re.DOTALL)


def schema_text(schema: type[BaseModel]) -> str:
    """The JSON schema, compact, for prompts."""
    return json.dumps(schema.model_json_schema(), separators=(",", ":"))


async def ask_structured(
    client: ChatClient, messages: Sequence[ChatMessage], schema: type[T], purpose: str
) -> UsableAnswer[T]:
    """The model's answer as a validated `schema` object; an invalid one is re-asked with the errors."""
    return await ask_until_usable(
        client,
        messages,
        lambda completion: parse_json_answer(completion.text, schema),
        f"with only one JSON object matching this schema: {schema_text(schema)}",
        purpose=purpose,
        reasks=TOOL_REASKS,
    )


def parse_json_answer(text: str, schema: type[T]) -> T:
    """The first JSON object in the answer (fenced or bare), validated; UnusableAnswerError says what was wrong."""
    fenced = _FENCED.search(text)
    candidate = fenced.group(1) if fenced else _outermost_object(text)
    if candidate is None:
        raise UnusableAnswerError("no JSON object found")
    try:
        data = json.loads(candidate)
    except json.JSONDecodeError as exc:
        raise UnusableAnswerError(f"invalid JSON ({exc.msg} at position {exc.pos})") from exc
    try:
        return schema.model_validate(data)
    except ValidationError as exc:
        details = "; ".join(f"{'.'.join(map(str, e['loc'])) or 'object'}: {e['msg']}" for e in exc.errors())
        raise UnusableAnswerError(f"the JSON does not match the schema ({details})") from exc


def _outermost_object(text: str) -> str | None:
    start, end = text.find("{"), text.rfind("}")
    return text[start : end + 1] if 0 <= start < end else None
