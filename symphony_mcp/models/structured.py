"""Ask a model for a JSON object that must validate against a schema; re-ask once with the errors."""

from __future__ import annotations

import json
import re
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Generic, TypeVar

from pydantic import BaseModel, ValidationError

from symphony_mcp.errors import ModelAnswerError
from symphony_mcp.models.client import ChatClient
from symphony_mcp.models.messages import ChatMessage, assistant, user

T = TypeVar("T", bound=BaseModel)
R = TypeVar("R")
_FENCED = re.compile(r"```(?:json)?\s*(\{.*?\})\s*```", re.DOTALL)


@dataclass(frozen=True)
class ValidAnswer(Generic[R]):
    value: R
    answers: tuple[str, ...]
    model: str
    model_ms: float


def schema_text(schema: type[BaseModel]) -> str:
    """The JSON schema, compact, for prompts."""
    return json.dumps(schema.model_json_schema(), separators=(",", ":"))


async def ask_until_valid(
    client: ChatClient,
    messages: Sequence[ChatMessage],
    parse: Callable[[str], R],
    feedback: Callable[[str], str],
    purpose: str,
    hint: str = "",
) -> ValidAnswer[R]:
    """`parse(answer)`; when it raises ValueError the model is told `feedback(reason)` and asked once more.

    A second unusable answer raises ModelAnswerError quoting both answers and why, plus `hint`.
    """
    conversation = list(messages)
    answers: list[str] = []
    problems: list[str] = []
    model_ms = 0.0
    for _ in range(2):
        completion = await client.complete(conversation)
        model_ms += completion.elapsed_ms
        answers.append(completion.text)
        try:
            value = parse(completion.text)
        except ValueError as exc:
            problems.append(str(exc))
            conversation += [assistant(completion.text), user(feedback(str(exc)))]
            continue
        return ValidAnswer(value, tuple(answers), completion.model, round(model_ms, 2))
    listing = "; ".join(
        f"answer {i + 1}: {a[:200]!r} ({p})" for i, (a, p) in enumerate(zip(answers, problems, strict=True))
    )
    raise ModelAnswerError(f"the {client.endpoint.role} model gave no usable {purpose}: {listing}{hint}")


async def ask_structured(
    client: ChatClient, messages: Sequence[ChatMessage], schema: type[T], purpose: str
) -> ValidAnswer[T]:
    """The model's answer as a validated `schema` object; an invalid one is re-asked once with the errors."""
    return await ask_until_valid(
        client,
        messages,
        lambda text: parse_json_answer(text, schema),
        lambda problem: (
            f"That answer could not be used: {problem}. Answer again with only one JSON object "
            f"matching this schema: {schema_text(schema)}"
        ),
        purpose,
    )


def parse_json_answer(text: str, schema: type[T]) -> T:
    """The first JSON object in the answer (fenced or bare), validated; ValueError says what was wrong."""
    fenced = _FENCED.search(text)
    candidate = fenced.group(1) if fenced else _outermost_object(text)
    if candidate is None:
        raise ValueError("no JSON object found")
    try:
        data = json.loads(candidate)
    except json.JSONDecodeError as exc:
        raise ValueError(f"invalid JSON ({exc.msg} at position {exc.pos})") from exc
    try:
        return schema.model_validate(data)
    except ValidationError as exc:
        details = "; ".join(f"{'.'.join(map(str, e['loc'])) or 'object'}: {e['msg']}" for e in exc.errors())
        raise ValueError(f"the JSON does not match the schema ({details})") from exc


def _outermost_object(text: str) -> str | None:
    start, end = text.find("{"), text.rfind("}")
    return text[start : end + 1] if 0 <= start < end else None
