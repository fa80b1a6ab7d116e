"""The one re-ask rule (models/reask.py) against the stand-in model over real HTTP: a model that answers badly and
then well is re-asked with the reason, one that never answers well ends in ModelAnswerError carrying every answer
and reason, within the bound, and every ask is accounted."""

from __future__ import annotations

from collections.abc import AsyncIterator

import pytest

from symphony_mcp.config import OrchestratorSettings, load_settings
from symphony_mcp.errors import ModelAnswerError
from symphony_mcp.models.client import ChatClient, Completion
from symphony_mcp.models.messages import system, user
from symphony_mcp.models.reask import LOOP_REASKS, UnusableAnswerError, ask_until_usable
from symphony_mcp.models.registry import ModelRegistry
from testkit.model_server import Reply, StandInModel

pytestmark = pytest.mark.anyio
DIGITS = "with digits only."
QUESTION = [system("Answer with one whole number."), user("How many sides has a square?")]


def whole_number(completion: Completion) -> int:
    text = completion.text.strip()
    if not text.isdigit():
        raise UnusableAnswerError(f"{text[:40]!r} is not a whole number")
    return int(text)


@pytest.fixture
async def registry(stand_in: StandInModel) -> AsyncIterator[ModelRegistry]:
    models = ModelRegistry(
        load_settings(models={"coder": {"base_url": stand_in.url, "model": "stand-in-coder", "max_retries": 0}}).models
    )
    yield models
    await models.aclose()


@pytest.fixture
def client(registry: ModelRegistry) -> ChatClient:
    return registry.client("coder")


async def test_bad_answers_are_reasked_with_the_reason_until_a_good_one(
    stand_in: StandInModel, client: ChatClient, registry: ModelRegistry
) -> None:
    stand_in.script("four", "It has 4 sides.", "4")
    asked = list(QUESTION)
    answer = await ask_until_usable(client, asked, whole_number, DIGITS, purpose="count", reasks=3)

    assert (answer.value, answer.answers, answer.refused) == (4, ("four", "It has 4 sides.", "4"), answer.answers[:2])
    assert answer.reasons == ("'four' is not a whole number", "'It has 4 sides.' is not a whole number")
    assert answer.completion.text == "4" and answer.model == "stand-in-coder"
    assert len(stand_in.requests) == 3
    second, third = stand_in.requests[1].messages, stand_in.requests[2].messages
    assert second[-2:] == [
        {"role": "assistant", "content": "four"},
        {
            "role": "user",
            "content": "That answer could not be used: 'four' is not a whole number. Answer again with digits only.",
        },
    ]
    assert third[:-2] == second and third[-2]["content"] == "It has 4 sides."
    assert asked == QUESTION  # the caller's conversation keeps no refused answer
    usage = registry.usage.snapshot()["coder"]
    assert (usage.calls, usage.refused_answers, usage.total_tokens) == (3, 2, 3 * 1012)
    assert answer.model_ms > 0 and answer.model_ms <= usage.model_ms


async def test_a_model_that_never_answers_well_is_asked_within_the_bound_then_reported(
    stand_in: StandInModel, client: ChatClient, registry: ModelRegistry
) -> None:
    stand_in.script("four", "IV", "a few", default="never reached")
    with pytest.raises(ModelAnswerError) as raised:
        await ask_until_usable(
            client, QUESTION, whole_number, DIGITS, purpose="count", reasks=2, hint=". Try another model"
        )

    error = raised.value
    assert len(stand_in.requests) == 3  # the first ask and two re-asks, no more
    assert error.answers == ("four", "IV", "a few") and len(error.reasons) == 3
    assert error.reasons[-1] == "'a few' is not a whole number"
    assert str(error) == (
        "the coder model gave no usable count: answer 1: 'four' ('four' is not a whole number); "
        "answer 2: 'IV' ('IV' is not a whole number); answer 3: 'a few' ('a few' is not a whole number). "
        "Try another model"
    )
    usage = registry.usage.snapshot()["coder"]
    assert (usage.calls, usage.refused_answers) == (3, 3)
    assert 0 < error.model_ms <= usage.model_ms


async def test_with_no_reasks_the_first_bad_answer_is_reported(stand_in: StandInModel, client: ChatClient) -> None:
    stand_in.script("four", default="4")
    with pytest.raises(ModelAnswerError, match="answer 1: 'four'"):
        await ask_until_usable(client, QUESTION, whole_number, DIGITS, purpose="count", reasks=0)
    assert len(stand_in.requests) == 1


async def test_a_parser_that_breaks_is_not_taken_for_a_bad_answer(stand_in: StandInModel, client: ChatClient) -> None:
    def broken(completion: Completion) -> int:
        return {"five": 5}[completion.text]  # a bug: KeyError is no answer problem, so no re-ask hides it

    stand_in.script("4", default="4")
    with pytest.raises(KeyError):
        await ask_until_usable(client, QUESTION, broken, DIGITS, purpose="count", reasks=3)
    assert len(stand_in.requests) == 1


async def test_native_calls_are_fed_back_as_written_and_the_tools_are_sent_on_every_ask(
    stand_in: StandInModel, client: ChatClient
) -> None:
    tools = [{"type": "function", "function": {"name": "count", "parameters": {"type": "object"}}}]

    def one_call(completion: Completion) -> str:
        if len(completion.tool_calls) != 1:
            raise UnusableAnswerError(f"call exactly one function; the answer made {len(completion.tool_calls)} calls")
        return completion.tool_calls[0].arguments

    stand_in.script(
        Reply("Thinking.", tool_calls=[("count", {"n": 4}), ("count", {"n": 5})]),
        Reply(tool_calls=[("count", {"n": 4})]),
    )
    answer = await ask_until_usable(
        client, QUESTION, one_call, DIGITS, purpose="call", reasks=1, tools=tools, tool_choice="required"
    )

    written = 'Thinking.\n```python\ncount({"n": 4})\ncount({"n": 5})\n```'
    assert answer.value == '{"n": 4}' and answer.refused == (written,)
    assert stand_in.requests[1].messages[-2] == {"role": "assistant", "content": written}
    assert all(r.body["tools"] == tools and r.body["tool_choice"] == "required" for r in stand_in.requests)


def test_the_planners_default_bound_is_the_loops() -> None:
    assert OrchestratorSettings().format_retries == LOOP_REASKS
