"""One task's trajectory and memory: steps recorded as they happen, loop checks, milestones, audits."""

from __future__ import annotations

import asyncio
import datetime
import time
from pathlib import Path

from PIL import Image

from symphony_mcp.config import MemorySettings
from symphony_mcp.desktop.capture import Frame
from symphony_mcp.desktop.records import ActionRecord
from symphony_mcp.errors import InvalidInputError
from symphony_mcp.imaging.geometry import Rect
from symphony_mcp.memory.agent import AuditEvidence, StepEvidence, audit, check_step
from symphony_mcp.memory.judgements import StepVerdict
from symphony_mcp.memory.layout import TASK_FILE, TaskInfo, TaskStatus, step_screenshot, step_screenshot_path
from symphony_mcp.memory.loops import ActionSignature, LoopDetector, ScreenPrint
from symphony_mcp.memory.milestones import MilestoneMemory, StepSummary
from symphony_mcp.memory.result_schemas import LoopReport, MemoryState, ReflectOutcome, StepAction
from symphony_mcp.memory.trajectory import (
    MAX_QUEUED_WRITES,
    TrajectoryStep,
    TrajectoryWriter,
    write_json_atomically,
)
from symphony_mcp.models.client import ChatClient
from symphony_mcp.models.endpoints import ResolvedEndpoint
from symphony_mcp.models.images import prepare_image
from symphony_mcp.models.messages import ModelImage

# Steps done off the screen (code on files, a web search): their record says what happened, a screenshot would not.
OFF_SCREEN_ACTIONS = frozenset({"code_agent", "search_tutorial"})
_VERDICT_CHARS = 400  # StepVerdict.summary's limit


class Task:
    """Owned by the task manager; its methods are serialized by one lock."""

    def __init__(self, info: TaskInfo, settings: MemorySettings, screen: Rect, first: Frame | None) -> None:
        self.info = info
        self.settings = settings
        self.writer = TrajectoryWriter(_directory(info))
        self.steps: list[TrajectoryStep] = []
        self.loops = LoopDetector(settings, (screen.width**2 + screen.height**2) ** 0.5)
        self.loop = LoopReport(detected=False, message="no steps yet")
        self.memory = MilestoneMemory(budget=settings.image_budget)
        self.lock = asyncio.Lock()
        self._frames: dict[int, Frame] = {}
        self._areas: dict[int, Rect] = {}
        self._encoded: dict[int, tuple[tuple[object, ...], ModelImage]] = {}
        if first is not None:
            self.writer.save_image(step_screenshot(0), first.image)
            self._frames[0] = first
            self.memory.keep_first(0)
        self.save_info()

    def save_info(self) -> None:
        self.info.steps = len(self.steps)
        write_json_atomically(_directory(self.info) / TASK_FILE, self.info.model_dump(exclude={"active_here"}))

    async def record(self, record: ActionRecord, frame: Frame) -> TrajectoryStep:
        """Append the step the server just performed, with the screen after it."""
        started = time.perf_counter()
        if self.writer.backlog >= MAX_QUEUED_WRITES:
            await asyncio.to_thread(self.writer.wait_for_room)
        screen = await asyncio.to_thread(ScreenPrint.of, frame.image)
        async with self.lock:
            number = len(self.steps) + 1
            record.task_step = number  # the caller's result says which step its action became
            self.loops.add(ActionSignature.of(record), screen)
            self.loop = self.loops.check()
            step = TrajectoryStep(
                step_num=number,
                action_timestamp=datetime.datetime.fromtimestamp(record.started_at).strftime("%Y%m%d@%H%M%S"),
                action=record.action,
                summary=record.summary,
                record=record,
                screenshot_file=step_screenshot(number),
                loop=self.loop.detected,
                record_ms=round((time.perf_counter() - started) * 1000, 2),
            )
            self.writer.append(step, frame.image)
            self.steps.append(step)
            self._frames[number] = frame
            self._areas[number] = frame.area
            if self.memory.first_image is None:
                self.memory.keep_first(number)
            self._forget_frames()
            self.info.steps = number
            return step

    async def annotate(
        self, step_num: int | None, thought: str | None, plan: str | None, tool_output: str | None
    ) -> TrajectoryStep:
        """Add the caller's thought, plan or tool output to a recorded step (default: the latest)."""
        async with self.lock:
            step = self._step(step_num)
            updates = {"thought": thought, "plan": plan, "tool_output": tool_output}
            changed = step.model_copy(update={k: v for k, v in updates.items() if v is not None})
            self._replace(changed)
            return changed

    def require_steps(self) -> None:
        if not self.steps:
            raise InvalidInputError(f"task {self.info.task_id!r} has no steps yet: act first, then reflect")

    def state(self) -> MemoryState:
        failed = [
            s.step_num for s in self.steps if not s.record.ok or (s.verdict is not None and not s.verdict.success)
        ]
        latest = next((s.reflection for s in reversed(self.steps) if s.reflection is not None), None)
        return MemoryState(
            task=self.info,
            steps=len(self.steps),
            actions=[_step_action(s) for s in self.steps],
            summaries=self.memory.summaries,
            unchecked_steps=[s.step_num for s in self.steps if s.verdict is None],
            image_steps=self.memory.image_steps(),
            milestones=self.memory.milestones,
            evicted_milestones=self.memory.evicted,
            facts=self.memory.facts,
            loop=self.loop,
            failed_actions=failed,
            latest_reflection=latest,
        )

    async def reflect(self, memoryer: ChatClient) -> ReflectOutcome:
        """Check unchecked steps, then audit the trajectory; the memory takes the audit's judgements."""
        async with self.lock:
            self.require_steps()
            model_ms = 0.0
            checked = []
            for step in [s for s in self.steps if s.verdict is None]:
                if step.record.action in OFF_SCREEN_ACTIONS:  # the tool agent's own result is the evidence
                    value = StepVerdict(success=step.record.ok, summary=step.record.summary[:_VERDICT_CHARS])
                else:
                    verdict = await check_step(memoryer, await self._evidence(step, memoryer.endpoint))
                    model_ms, value = model_ms + verdict.model_ms, verdict.value
                self._replace(step.model_copy(update={"verdict": value}))
                summary = StepSummary(step=step.step_num, **value.model_dump())
                self.memory.add_summary(summary)
                checked.append(summary)
            latest = self.steps[-1]
            hints = self._hints(latest)
            answer = await audit(
                memoryer,
                AuditEvidence(
                    instruction=self.info.instruction,
                    memory=self.memory,
                    milestone_images=[
                        (n, await self._model_image(n, memoryer.endpoint)) for n in self.memory.image_steps()
                    ],
                    latest_step=latest.step_num,
                    latest_action=latest.summary,
                    latest_intent=latest.intent,
                    latest_screen=await self._model_image(latest.step_num, memoryer.endpoint),
                    hints=hints,
                ),
            )
            model_ms += answer.model_ms
            reflection = answer.value
            if self.loop.detected and (reflection.status, reflection.error_type) != ("Off-track", "lack_of_tutorial"):
                # A detected loop is reported as lack of tutorial, whatever the model concluded.
                reflection = reflection.model_copy(
                    update={
                        "status": "Off-track",
                        "error_type": "lack_of_tutorial",
                        "reflection": f"{self.loop.message}. {reflection.reflection}",
                    }
                )
            if reflection.is_milestone:
                self.memory.add_milestone(latest.step_num)
            self.memory.add_facts(reflection.new_facts)
            self._replace(latest.model_copy(update={"reflection": reflection, "milestone": reflection.is_milestone}))
            self._forget_frames()
            return ReflectOutcome(
                step=latest.step_num,
                reflection=reflection,
                checked=checked,
                hints=hints,
                loop=self.loop,
                model_ms=round(model_ms, 2),
            )

    def close(self, status: TaskStatus, note: str | None) -> TaskInfo:
        self.info.status, self.info.note, self.info.ended_at = status, note, time.time()
        self.writer.close()
        self.save_info()
        return self.info

    def _hints(self, latest: TrajectoryStep) -> list[str]:
        hints = []
        if not latest.record.ok:
            hints.append(f"The latest action raised an error: {latest.record.error}")
        if latest.verdict is not None and not latest.verdict.success:
            hints.append(f"The latest GUI action failed according to the step check: {latest.verdict.summary}")
        if self.loop.detected:
            hints.append(f"Loop detected: {self.loop.message}")
        return hints

    async def _evidence(self, step: TrajectoryStep, endpoint: ResolvedEndpoint) -> StepEvidence:
        number = step.step_num
        before = number - 1 if number > 1 or self.memory.first_image == 0 else number
        return StepEvidence(
            before=await self._model_image(before, endpoint),
            after=await self._model_image(number, endpoint),
            after_image=self._image(number),
            area=self._areas[number],
            points=step.record.screen_points,
            action=step.summary,
            intent=step.intent,
        )

    async def _model_image(self, number: int, endpoint: ResolvedEndpoint) -> ModelImage:
        """A step's screenshot encoded for the memoryer, once: step checks and audits reuse it."""
        limits = (endpoint.image_format, endpoint.image_quality, endpoint.image_max_side, endpoint.image_max_bytes)
        cached = self._encoded.get(number)
        if cached is None or cached[0] != limits:
            image = await asyncio.to_thread(prepare_image, self._image(number), endpoint)
            cached = self._encoded[number] = (limits, image)
        return cached[1]

    def _image(self, number: int) -> Image.Image:
        """A step's screenshot: from memory, else from disk."""
        frame = self._frames.get(number)
        if frame is not None:
            return frame.image
        self.writer.flush()
        path = step_screenshot_path(_directory(self.info), number)
        if not path.exists():
            raise InvalidInputError(f"the screenshot of step {number} of task {self.info.task_id!r} is missing")
        with Image.open(path) as image:
            return image.convert("RGB")

    def _forget_frames(self) -> None:
        """Keep in RAM only what the next step check and audit need: the memory's images and the last two."""
        keep = set(self.memory.image_steps()) | {len(self.steps), len(self.steps) - 1}
        for number in [n for n in self._frames if n not in keep]:
            del self._frames[number]
        for number in [n for n in self._encoded if n not in keep]:
            del self._encoded[number]

    def _step(self, step_num: int | None) -> TrajectoryStep:
        if not self.steps:
            raise InvalidInputError(f"task {self.info.task_id!r} has no steps yet: act first")
        if step_num is None:
            return self.steps[-1]
        if not 1 <= step_num <= len(self.steps):
            raise InvalidInputError(f"step must be 1..{len(self.steps)} (the task's steps so far), got {step_num}")
        return self.steps[step_num - 1]

    def _replace(self, step: TrajectoryStep) -> None:
        self.steps[step.step_num - 1] = step
        self.writer.update(step, self.steps)


def _step_action(step: TrajectoryStep) -> StepAction:
    record = step.record
    return StepAction(
        step=step.step_num,
        action=record.action,
        target=_target(record),
        points=record.screen_points,
        ok=record.ok,
        result=record.summary if record.ok else f"failed: {record.error}",
    )


def _target(record: ActionRecord) -> str | None:
    """The thing an action was aimed at, as the caller named it."""
    if record.grounding:
        return " -> ".join(repr(g.query) for g in record.grounding)
    arguments = record.arguments
    for name in ("text", "target", "window_id"):
        if isinstance(arguments.get(name), str):
            return repr(arguments[name])
    keys = arguments.get("keys") or arguments.get("press_keys")
    if isinstance(keys, list):
        return "+".join(map(str, keys))
    return None


def _directory(info: TaskInfo) -> Path:
    return Path(info.directory)
