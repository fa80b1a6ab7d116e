"""The one rule for a model answer that cannot be used: ask, parse with the caller's parser, and re-ask with the
reason as feedback, a bounded number of times; then ModelAnswerError carrying every answer and why each was refused.

The grounder, the Reflection-Memory Agent, the planner, the Coder and the searcher all ask through
`ask_until_usable`, so the bound, the feedback turn, the log line and the accounting are written once.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any, Generic, TypeVar

from symphony_mcp.errors import ModelAnswerError
from symphony_mcp.models.client import ChatClient, Completion
from symphony_mcp.models.messages import ChatMessage, assistant, user

log = logging.getLogger(__name__)
R = TypeVar("R")

# A loop's malformed step (planner, Coder, searcher) is re-asked up to 3 times, as the design's orchestrator is;
# the planner's count is the setting orchestrator.format_retries, whose default (config.py, below this layer) is
# the same 3 (tests/test_reask.py holds them together).
LOOP_REASKS = 3
# An answer a tool call waits on (a grounded point, a step check, an audit) is re-asked once: the host waits, and a
# model that misses twice is the wrong model or family, which the error's hint names; more asks would not fix it.
TOOL_REASKS = 1
_QUOTED_CHARS = 200  # of each answer, in the error


class UnusableAnswerError(ValueError):
    """This answer cannot be used; the message says what was wrong and what is allowed, as feedback for the model.

    Parsers raise it; `ask_until_usable` turns it into a re-ask. Anything else a parser raises is a bug, not the
    model's fault, and is not fed back."""


def refusal(reason: str, answer_again: str) -> str:
    """What the model is told about an answer that could not be used: why, and what to answer instead."""
    return f"That answer could not be used: {reason}. Answer again {answer_again}"


@dataclass(frozen=True)
class UsableAnswer(Generic[R]):
    """The parsed answer, the completion it came from, and what it took to get it."""

    value: R
    completion: Completion
    answers: tuple[str, ...]  # every answer as written (native calls as code), the used one last
    reasons: tuple[str, ...]  # why each earlier answer was refused
    model_ms: float  # waiting for the model, over all the asks

    @property
    def model(self) -> str:
        return self.completion.model

    @property
    def refused(self) -> tuple[str, ...]:
        return self.answers[:-1]


async def ask_until_usable(
    client: ChatClient,
    messages: Sequence[ChatMessage],
    parse: Callable[[Completion], R],
    answer_again: str,
    *,
    purpose: str,
    reasks: int,
    hint: str = "",
    tools: list[dict[str, Any]] | None = None,
    tool_choice: str | None = None,
) -> UsableAnswer[R]:
    """`parse(completion)`; while it raises UnusableAnswerError, at most `reasks` times, the model is shown its answer
    and `refusal(reason, answer_again)` and asked again (`answer_again`: what a usable answer is, e.g. "with only one
    JSON object"). Past the bound: ModelAnswerError quoting each answer and its reason, then
    `hint`. The conversation the caller keeps is not changed: refused answers and feedback stay out of its history.
    """
    conversation = list(messages)
    answers: list[str] = []
    reasons: list[str] = []
    model_ms = 0.0
    for attempt in range(1, reasks + 2):
        completion = await client.complete(conversation, tools=tools, tool_choice=tool_choice)
        model_ms += completion.elapsed_ms
        answers.append(completion.written)
        try:
            value = parse(completion)
        except UnusableAnswerError as exc:
            reasons.append(str(exc))
            client.note_refused()
            log.info("the %s model's answer %d (%s) was refused: %s", client.endpoint.role, attempt, purpose, exc)
            conversation += [assistant(completion.written), user(refusal(str(exc), answer_again))]
            continue
        return UsableAnswer(value, completion, tuple(answers), tuple(reasons), round(model_ms, 2))
    listing = "; ".join(
        f"answer {i}: {answer[:_QUOTED_CHARS]!r} ({reason})"
        for i, (answer, reason) in enumerate(zip(answers, reasons, strict=True), start=1)
    )
    raise ModelAnswerError(
        f"the {client.endpoint.role} model gave no usable {purpose}: {listing}{hint}",
        answers=tuple(answers),
        reasons=tuple(reasons),
        model_ms=round(model_ms, 2),
    )
