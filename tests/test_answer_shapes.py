"""The bundled loop with the answer shapes real models send (issue 26, item 5): a bare code block, prose only
around it, several blocks, native tool calls with and without content, reasoning fields beside the answer.
Each run is the whole loop with reflection on: a real server over MCP, real Xvfb, stand-in planner and
memoryer models over real HTTP; the step is recorded with what the answer said, and the memoryer is told
the step's intent (its plan, never the planner's section headers)."""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest

from symphony_mcp.config import load_settings
from symphony_mcp.orchestrator.api import run_task
from symphony_mcp.orchestrator.connection import InMemoryServer
from symphony_mcp.server import build_server
from testkit.model_server import Reply, StandInModel
from testkit.scripted_planner import MEMORYER, Script, act, settings_for

pytestmark = pytest.mark.anyio
CLICK = "click(x=600, y=420)"
BARE = f"```python\n{CLICK}\n```"
NATIVE_CLICK = ("click", {"x": 600, "y": 420})
INTENT = re.compile(r"^Intent: (.*?)(?:\n\nComputed hints:|\Z)", re.M | re.S)  # the step check's end; the audit's


@dataclass(frozen=True)
class Shape:
    step_one: list[Reply]  # the planner's answers to step 1 (more than one: the first ones are re-asked)
    done: Reply  # step 2, the same shape
    thought: str | None  # what the trajectory's step 1 records
    plan: str | None = None
    function_calling: bool = False
    rejected: int = 0
    thought_has: list[str] = field(default_factory=list)  # for long thoughts: parts that must be in it


SHAPES = {
    "bare code block": Shape([Reply(BARE)], Reply("```python\ndone()\n```"), None),
    "bare untagged block": Shape([Reply(f"```\n{CLICK}\n```")], Reply("```\ndone()\n```"), None),
    "prose only after the block": Shape(
        [Reply(f"{BARE}\nThat focuses the window.")],
        Reply("```python\ndone()\n```\nFinished."),
        "That focuses the window.",
    ),
    "prose around the block": Shape(
        [Reply(f"The window is in the middle.\n{BARE}\nThat focuses it.")],
        Reply("All done.\n```python\ndone()\n```"),
        "The window is in the middle.\n\nThat focuses it.",
    ),
    "several blocks": Shape(
        [Reply(f'The title bar reads:\n```json\n{{"title": "Editor"}}\n```\nSo I click:\n```python\n{CLICK}\n```')],
        Reply("```bash\necho no shell here\n```\n```python\ndone()\n```"),
        'The title bar reads:\n```json\n{"title": "Editor"}\n```\nSo I click:',
    ),
    "the prompt's sections": Shape(
        [Reply(act(CLICK, "Click the middle of the screen."))],
        Reply(act("done()", "Finish.")),
        None,
        plan="Click the middle of the screen.",
        thought_has=["(Screenshot analysis)\nThe screen as expected.", "(Next action)"],
    ),
    "reasoning_content beside a bare block": Shape(
        [Reply(BARE, fields={"reasoning_content": "The target is at 600, 420."})],
        Reply("```python\ndone()\n```", fields={"reasoning_content": "Done."}),
        "The target is at 600, 420.",
    ),
    "native call without content": Shape(
        [Reply(tool_calls=[NATIVE_CLICK])], Reply(tool_calls=[("done", {})]), None, function_calling=True
    ),
    "native call with content": Shape(
        [Reply("I act.", tool_calls=[NATIVE_CLICK])],
        Reply(tool_calls=[("done", {})]),
        "I act.",
        function_calling=True,
    ),
    "native call with reasoning and no content": Shape(
        [Reply(tool_calls=[NATIVE_CLICK], fields={"reasoning": "Click the middle."})],
        Reply(tool_calls=[("done", {})], fields={"reasoning": "Finished."}),
        "Click the middle.",
        function_calling=True,
    ),
    "reasoning only, then a native call": Shape(
        [Reply(fields={"reasoning_content": "Still thinking about"}), Reply(tool_calls=[NATIVE_CLICK])],
        Reply(tool_calls=[("done", {})]),
        None,
        function_calling=True,
        rejected=1,
    ),
}


@pytest.mark.parametrize("name", list(SHAPES))
async def test_every_answer_shape_runs_the_loop_and_records_the_step(
    name: str, xdisplay: Any, stand_in: StandInModel, tmp_path: Path
) -> None:
    shape = SHAPES[name]
    script = Script({1: list(shape.step_one), 2: [shape.done]})
    stand_in.script(default=script)
    results = tmp_path / "results"
    settings = settings_for(stand_in, results, function_calling=shape.function_calling, max_steps=3)
    server_models = {"memoryer": {"base_url": stand_in.url, "model": MEMORYER, "max_retries": 1}}
    server = build_server(load_settings(models=server_models, memory={"trajectory_dir": str(results)}))
    try:
        outcome = await run_task(
            "Click the middle", settings=settings, task_id="shape", connection=InMemoryServer(server.mcp)
        )
    finally:
        server.close()

    record = outcome.record
    assert outcome.outcome == "unverified", record.message  # done() with no checker; never an Error
    assert [s.action.code if s.action else None for s in record.steps] == ["click(x=600, y=420)", "done()"]
    assert len(record.steps[0].rejected_outputs) == shape.rejected
    [step] = outcome.trajectory
    assert step.action == "click" and record.steps[0].trajectory_step == 1
    assert step.plan == shape.plan
    if shape.thought_has:
        assert step.thought is not None and all(part in step.thought for part in shape.thought_has)
        assert "(Grounded action)" not in step.thought and "```" not in step.thought
    else:
        assert step.thought == shape.thought
    # The memoryer checked step 1 and audited the trajectory before step 2, told the step's intent.
    memoryer_texts = [t for r in stand_in.requests if r.body["model"] == MEMORYER for t in r.texts()]
    intents = [m.group(1) for text in memoryer_texts for m in re.finditer(INTENT, text)]
    assert intents == 2 * [shape.plan or shape.thought or "(not stated)"]  # the step check's, the audit's
