"""The OS-Symphony loop with OSCAR's verify-and-replan state machine, over an MCP client.

Per step: Observe (screenshot), reflect (the server's Reflection-Memory Agent, when enabled), Plan
(the orchestrator model; one action, parsed with `ast`, validated against the tool's schema,
re-asked with feedback), Execute (the tool through MCP), record (the plan onto the server's
trajectory step, the run record to disk). `done` goes through Verify when a checker is given; a
rejection returns to planning with the checker's words, up to a limit. An unreachable model or a
lost screen or server is an Error with a clear message.
"""

from __future__ import annotations

import asyncio
import base64
import io
import logging
import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from mcp import Client
from mcp.types import ImageContent, TextContent
from PIL import Image as PILImage

from symphony_mcp.code.result_schemas import CoderResult
from symphony_mcp.config import OrchestratorSettings
from symphony_mcp.desktop.records import ActionRecord
from symphony_mcp.desktop.result_schemas import ScreenInfo, ScreenshotInfo, WindowList
from symphony_mcp.elements.types import ElementsResult
from symphony_mcp.errors import ModelAnswerError, ModelError, SymphonyError
from symphony_mcp.memory.judgements import Reflection
from symphony_mcp.memory.result_schemas import ReflectOutcome
from symphony_mcp.models.client import ChatClient, Completion
from symphony_mcp.models.messages import ModelImage
from symphony_mcp.models.reask import UnusableAnswerError, ask_until_usable
from symphony_mcp.models.registry import ModelStatus
from symphony_mcp.models.usage import UsageLedger
from symphony_mcp.orchestrator.action_space import DONE, FAIL, ActionSpace
from symphony_mcp.orchestrator.checker import Checker
from symphony_mcp.orchestrator.notes import step_notes
from symphony_mcp.orchestrator.prompts import (
    StepContext,
    Turn,
    Tutorial,
    answer_again,
    build_messages,
    system_prompt,
)
from symphony_mcp.orchestrator.records import CLAIMED_DONE, ParsedAction, RunRecord, RunStep, State
from symphony_mcp.orchestrator.state import StateMachine
from symphony_mcp.search.result_schemas import TutorialResult

log = logging.getLogger(__name__)
CODE_AGENT = "code_agent"
SEARCH_AGENT = "search_tutorial"


class RunError(SymphonyError):
    """The run cannot go on (model endpoint, screen or server unavailable)."""


@dataclass(frozen=True)
class RunEvent:
    """Progress for live views."""

    task_id: str
    step: int
    max_steps: int
    state: State
    action: str | None = None
    reflection: str | None = None
    message: str = ""


EventSink = Callable[[RunEvent], None]
FileSink = Callable[[str, bytes], None]  # a file of the task's folder by name, e.g. the marks a step's planner saw


class Orchestrator:
    def __init__(
        self,
        client: Client,
        planner: ChatClient,
        usage: UsageLedger,
        settings: OrchestratorSettings,
        checker: Checker | None = None,
        on_event: EventSink | None = None,
        save: Callable[[RunRecord], None] | None = None,
        save_file: FileSink | None = None,
    ) -> None:
        self.client = client
        self.planner = planner
        self.usage = usage
        self.settings = settings
        self.checker = checker
        self.on_event = on_event or (lambda event: None)
        self.save = save or (lambda record: None)
        self.save_file = save_file

    async def run(self, instruction: str, task_id: str) -> RunRecord:
        settings = self.settings
        record = RunRecord(
            task_id=task_id, instruction=instruction, started_at=time.time(), max_steps=settings.max_steps
        )
        machine = StateMachine(record.transitions)
        run = _Run(self, record, machine)
        try:
            async with asyncio.timeout(settings.task_timeout_seconds):
                await run.start()
                await run.loop()
        except TimeoutError:
            message = f"the task took longer than its bound of {settings.task_timeout_seconds:g} s"
            run.go(State.ERROR, message)
            record.outcome, record.message = "error", message
        except (RunError, ModelError) as exc:
            run.go(State.ERROR, str(exc))
            record.outcome, record.message = "error", str(exc)
        except Exception as exc:  # the MCP connection or something unforeseen: stop cleanly, say what
            log.exception("run %s failed", task_id)
            message = f"lost the server or failed unexpectedly: {type(exc).__name__}: {exc}"
            run.go(State.ERROR, message)
            record.outcome, record.message = "error", message
        await run.finish()
        return record


class _Run:
    """The state of one run; `Orchestrator.run` drives it."""

    def __init__(self, owner: Orchestrator, record: RunRecord, machine: StateMachine) -> None:
        self.owner = owner
        self.client = owner.client
        self.settings = owner.settings
        self.record = record
        self.machine = machine
        self.space: ActionSpace | None = None
        self.history: list[Turn] = []
        self.feedback: list[str] = []
        self.tool_results: list[str] = []
        self.tutorials: list[Tutorial] = []  # this task's only: a run is one task
        self.trajectory_steps = 0
        self.reflection_on = self.settings.reflection
        self.verify_failures = 0
        self.windows_before: set[str] = set()

    def go(self, state: State, reason: str, step: int | None = None) -> None:
        step = len(self.record.steps) if step is None else step
        self.machine.go(state, step, reason)
        self.owner.on_event(RunEvent(self.record.task_id, step, self.record.max_steps, state, message=reason))

    async def start(self) -> None:
        tools = (await self.client.list_tools()).tools
        status = ModelStatus.model_validate(await self.call("model_status"))
        roles = {r.role for r in status.roles if r.configured and r.problem is None}
        try:
            self.space = ActionSpace.from_tools(tools, self.settings.enabled_tools, roles, self.settings.dual_grounding)
        except ValueError as exc:
            raise RunError(str(exc)) from exc
        if self.settings.dual_grounding:
            if "elements" not in {t.name for t in tools}:
                raise RunError("dual grounding needs the server's elements tool, which it does not offer")
            rect = ScreenInfo.model_validate(await self.call("screen_info")).screen_rect
            self.record.screen_size = (rect.width, rect.height)
        if self.reflection_on and "memoryer" not in roles:  # the rest of the loop works without a memoryer model
            self.reflection_on = False
            log.warning("reflection is off: the server has no memoryer model (SYMPHONY_MODELS__MEMORYER__*)")
        await self.call("start_task", instruction=self.record.instruction, task_id=self.record.task_id)
        self.record.started_on_server = True
        if self.settings.reset:
            self.windows_before = {w.id for w in WindowList.model_validate(await self.call("list_windows")).windows}

    async def loop(self) -> None:
        for step in range(1, self.settings.max_steps + 1):
            if await self.step(step):
                return
        self.go(State.FAIL, f"the step budget ({self.settings.max_steps}) is used up")
        self.record.outcome, self.record.message = "fail", f"not done within {self.settings.max_steps} steps"

    async def step(self, number: int) -> bool:
        """One Observe-Plan-Execute cycle; True when the run reached Success or Fail."""
        started = time.perf_counter()
        current = RunStep(step=number)
        self.record.steps.append(current)
        timings = current.timings
        self.go(State.OBSERVE, "take a screenshot", number)
        image, elements = await self.observe(current)
        timings.observe_ms = _since(started)
        reflection = await self.reflect(current)
        self.go(State.PLAN, f"reflection: {reflection.status}" if reflection else "plan", number)
        context = StepContext(
            step=number,
            max_steps=self.settings.max_steps,
            instruction=self.record.instruction,
            image=image,
            elements=elements,
            reflection=reflection,
            tool_results=self.tool_results,
            feedback=self.feedback,
            tutorials=self.tutorials,
        )
        self.tool_results, self.feedback = [], []
        planned = time.perf_counter()
        action = await self.plan(current, context)
        timings.plan_ms = _since(planned)
        done = False
        if action is None:  # the next step plans again, with what went wrong in the history
            self.history.append(Turn(number, image, current.model_output, "no usable action"))
            done = number >= self.settings.max_steps
            if done:
                self.go(State.FAIL, "the planner gave no usable action on the last step", number)
                self.record.outcome, self.record.message = "fail", "the planner gave no usable action"
        else:
            self.go(State.EXECUTE, action.code, number)
            executed = time.perf_counter()
            done = await self.execute(current, action, image)
            timings.execute_ms = _since(executed)
        self.owner.save(self.record)  # the next save carries this step's overhead, which includes the save
        timings.overhead_ms = round(_since(started) - timings.model_ms, 2)
        return done

    async def observe(self, current: RunStep) -> tuple[ModelImage, str | None]:
        """The screen the planner sees, and under dual grounding the numbered elements its marks refer to."""
        if self.settings.dual_grounding:
            arguments = {"annotate": True, "max": self.settings.max_elements}
            marked = await self.client.call_tool("elements", arguments)
            if not marked.is_error and (marked.structured_content or {}).get("cut") == "time":
                # An application asked for its tree the first time builds it while answering (Chromium under load:
                # measured, 2 of 60 MiniWoB++ episodes listed only half a page): once built, a second read is whole.
                marked = await self.client.call_tool("elements", arguments)
            if not marked.is_error:
                return self.numbered(current, marked.structured_content or {}, marked.content)
            self.feedback.append(f"No numbered elements this step ({_error_text(marked.content)}): target otherwise.")
        return await self.screenshot(current), None

    def numbered(self, current: RunStep, structured: dict[str, Any], content: list[Any]) -> tuple[ModelImage, str]:
        """The marked screenshot and element list of an `elements(annotate=true)` result, kept for the report."""
        result = ElementsResult.model_validate(structured)
        pictures = _images(content)
        listing = next((c.text for c in content if isinstance(c, TextContent)), None)
        if not pictures or listing is None:
            raise RunError("the elements tool returned no marked screenshot or no element list")
        image = pictures[0]
        current.frame_id = result.frame_id
        current.screenshot_size = (image.width, image.height)
        current.elements = listing
        if self.owner.save_file is not None:
            current.marks_file = f"marks_{current.step}.{image.format}"
            self.owner.save_file(current.marks_file, image.data)
        return image, listing

    async def screenshot(self, current: RunStep) -> ModelImage:
        result = await self.client.call_tool("screenshot", {})
        if result.is_error:
            raise RunError(f"cannot see the screen: {_error_text(result.content)}")
        info = ScreenshotInfo.model_validate(result.structured_content or {})
        block = next((c for c in result.content if isinstance(c, ImageContent)), None)
        if block is None:
            raise RunError("the screenshot tool returned no image")
        width, height = info.image_width, info.image_height
        current.frame_id = info.frame_id
        current.screenshot_size = (width, height)
        self.record.screen_size = (info.screen_width, info.screen_height)
        return ModelImage(
            data=base64.b64decode(block.data),
            format=block.mime_type.split("/")[-1],
            width=width,
            height=height,
            content_width=width,
            content_height=height,
        )

    async def reflect(self, current: RunStep) -> Reflection | None:
        if not self.reflection_on or self.trajectory_steps == 0:
            return None
        started = time.perf_counter()
        result = await self.client.call_tool("reflect", {})
        current.timings.reflect_ms = _since(started)
        if result.is_error:
            raise RunError(f"the reflection failed: {_error_text(result.content)}")
        outcome = ReflectOutcome.model_validate(result.structured_content or {})
        current.timings.model_ms += outcome.model_ms
        current.reflection = outcome.reflection
        return current.reflection

    async def plan(self, current: RunStep, context: StepContext) -> ParsedAction | None:
        assert self.space is not None
        calling = self.settings.function_calling
        names = [*self.space.actions, DONE, FAIL] if not context.final else [DONE, FAIL]
        system_text = system_prompt(
            self.space.render(context.final), calling, names, self.space.grounding, self.space.numbered
        )
        messages = build_messages(
            system_text, context, self.history, self.settings.max_images, self.settings.keep_first_image
        )
        tools = self.space.tool_definitions(context.final) if calling else None
        try:
            answer = await ask_until_usable(
                self.owner.planner,
                messages,
                lambda completion: self._action(completion, context.final),
                answer_again(calling),
                purpose=f"action for step {current.step}",
                reasks=self.settings.format_retries,
                tools=tools,
                tool_choice="required" if calling else None,
            )
        except ModelAnswerError as exc:  # no action this step; the run decides what that means
            current.timings.model_ms += exc.model_ms
            current.rejected_outputs += exc.answers
            current.model_output = exc.answers[-1]
            return None
        completion = answer.completion
        current.timings.model_ms += answer.model_ms
        current.rejected_outputs += answer.refused
        current.model_output, current.action = completion.written, answer.value
        current.reasoning = completion.reasoning or None
        notes = step_notes(completion, calling)
        current.thought, current.plan = notes.thought, notes.plan
        return answer.value

    def _action(self, completion: Completion, final: bool) -> ParsedAction:
        assert self.space is not None
        if not self.settings.function_calling:
            return self.space.parse(completion.text, final)
        if len(completion.tool_calls) != 1:
            raise UnusableAnswerError(f"call exactly one function; the answer made {len(completion.tool_calls)} calls")
        call = completion.tool_calls[0]
        return self.space.parse_call(call.name, call.arguments, final)

    async def execute(self, current: RunStep, action: ParsedAction, image: ModelImage) -> bool:
        if action.name == DONE:
            return await self.verify(current, image)
        if action.name == FAIL:
            reason = action.arguments.get("reason") or "the planner gave up"
            self.go(State.FAIL, reason, current.step)
            self.record.outcome, self.record.message = "fail", reason
            return True
        result = await self.client.call_tool(action.tool or action.name, action.arguments)
        if result.is_error:
            current.tool_error = _error_text(result.content)
            self.feedback.append(f"The previous action {action.code} failed: {current.tool_error}")
            self.history.append(Turn(current.step, image, current.model_output, f"error: {current.tool_error}"))
            return False
        structured = result.structured_content or {}
        current.tool_result = structured
        current.screen_points = _screen_points(structured)
        self.fold(action.tool or action.name, structured, result.content)
        recorded = time.perf_counter()
        await self.annotate(current, structured)
        current.timings.record_ms = _since(recorded)
        self.history.append(Turn(current.step, image, current.model_output, None))
        return False

    async def verify(self, current: RunStep, image: ModelImage) -> bool:
        checker = self.owner.checker
        if checker is None:
            self.go(State.SUCCESS, "the planner says the task is done; no checker verified it", current.step)
            self.record.outcome = "unverified"
            self.record.message = "the planner says the task is done; no checker verified it (--checker)"
            return True
        self.go(State.VERIFY, "check the task", current.step)
        verdict = await checker.check()
        current.verification = verdict.feedback
        if verdict.success:
            self.go(State.SUCCESS, f"the checker agrees: {verdict.feedback}", current.step)
            self.record.outcome, self.record.message = "success", verdict.feedback
            return True
        self.verify_failures += 1
        if self.verify_failures >= self.settings.verify_attempts:
            self.go(State.FAIL, f"the checker rejected done {self.verify_failures} times", current.step)
            self.record.outcome, self.record.message = "fail", verdict.feedback
            return True
        if current.step >= self.settings.max_steps:
            self.go(State.FAIL, "the checker rejected done on the last step", current.step)
            self.record.outcome, self.record.message = "fail", verdict.feedback
            return True
        self.feedback.append(f"You answered done(), but the task checker says it is not complete: {verdict.feedback}")
        self.history.append(Turn(current.step, image, current.model_output, f"checker: {verdict.feedback}"))
        return False

    def fold(self, tool: str, structured: dict[str, Any], content: list[Any]) -> None:
        """A result that is not an action record but has a summary (a tool agent's, folded) is shown once;
        a tutorial found is kept, with its pictures, for the rest of the task."""
        if tool == SEARCH_AGENT:
            found = TutorialResult.model_validate(structured)
            if found.completion_reason == "DONE":
                self.tutorials.append(Tutorial(f"call_search_agent: {found.folded()}", tuple(_images(content))))
            else:  # no tutorial: what was learned is shown once, like any tool result
                self.tool_results.append(f"call_search_agent: {found.folded()}")
            return
        if tool == CODE_AGENT:
            self.tool_results.append(f"call_code_agent: {CoderResult.model_validate(structured).folded()}")
            return
        summary = structured.get("summary") if "action" not in structured else None
        if isinstance(summary, str) and summary.strip():
            self.tool_results.append(f"{tool}: {summary.strip()}")

    async def annotate(self, current: RunStep, structured: dict[str, Any]) -> None:
        """Put the plan onto the trajectory step the action became (if it became one)."""
        steps = [r.task_step for r in _records(structured) if r.task_step is not None]
        if isinstance(structured.get("task_step"), int):  # a tool agent's run, recorded as one step
            steps.append(structured["task_step"])
        if not steps:
            return
        self.trajectory_steps = current.trajectory_step = max(steps)
        if current.thought is None and current.plan is None:  # the answer was its action alone: nothing to add
            return
        await self.call("record_step", step=current.trajectory_step, thought=current.thought, plan=current.plan)

    async def call(self, tool: str, **arguments: Any) -> dict[str, Any]:
        result = await self.client.call_tool(tool, arguments)
        if result.is_error:
            raise RunError(f"{tool} failed: {_error_text(result.content)}")
        return result.structured_content or {}

    async def finish(self) -> None:
        record = self.record
        if self.record.started_on_server:
            try:
                status = "success" if record.outcome in CLAIMED_DONE else "fail"  # the agent's own view
                await self.call("end_task", status=status, note=record.message)
                if self.settings.reset:
                    await self.reset()
                roles = ModelStatus.model_validate(await self.call("model_status")).roles
                record.usage = {r.role: r.usage for r in roles if r.usage.calls}
            except Exception as exc:  # the server may be gone (that may be why the run ended)
                log.warning("could not close the task on the server: %s", exc)
        planner = self.owner.usage.snapshot().get(self.owner.planner.endpoint.role)
        if planner is not None:
            record.usage[self.owner.planner.endpoint.role] = planner
        record.ended_at = time.time()
        self.owner.save(record)

    async def reset(self) -> None:
        self.go(State.RESET, "close the windows the task opened")
        now = WindowList.model_validate(await self.call("list_windows")).windows
        for window in now:
            if window.id not in self.windows_before:
                await self.client.call_tool("close_window", {"window_id": window.id})


def _images(content: list[Any]) -> list[ModelImage]:
    """A result's pictures as the planner's model sees them."""
    images = []
    for block in content:
        if isinstance(block, ImageContent):
            data = base64.b64decode(block.data)
            with PILImage.open(io.BytesIO(data)) as picture:
                width, height = picture.size
            images.append(
                ModelImage(
                    data=data,
                    format=block.mime_type.split("/")[-1],
                    width=width,
                    height=height,
                    content_width=width,
                    content_height=height,
                )
            )
    return images


def _records(structured: dict[str, Any]) -> list[ActionRecord]:
    """The action record(s) in a tool result: itself, or nested (open_app's `record`, a span's `selection`)."""
    candidates = [structured, *(v for v in structured.values() if isinstance(v, dict))]
    return [ActionRecord.model_validate(c) for c in candidates if "action" in c and "screen_points" in c]


def _screen_points(structured: dict[str, Any]) -> list[tuple[int, int]]:
    return [(p.x, p.y) for r in _records(structured) for p in r.screen_points]


def _error_text(content: list[Any]) -> str:
    return " ".join(c.text for c in content if isinstance(c, TextContent)) or "unknown error"


def _since(started: float) -> float:
    return round((time.perf_counter() - started) * 1000, 2)
