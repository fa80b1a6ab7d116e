"""The Coder loop: the coder model writes one block per turn, the confined executor runs it, the outcome
comes back, until DONE / FAIL / INFEASIBLE or the budget is used; then the work is folded for the caller.

Model output is data: blocks go to the executor as text, verdicts are matched words; nothing is evaluated
here. The full transcript is rewritten to disk after every turn, so a crash leaves what happened so far.
"""

from __future__ import annotations

import asyncio
import logging
import time
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from pathlib import Path

from PIL import Image

from symphony_mcp.code.parsing import parse_answer
from symphony_mcp.code.prompts import ANSWER_AGAIN, SUMMARY_PROMPT, SYSTEM_PROMPT, first_turn, run_outcome, unusable
from symphony_mcp.code.result_schemas import CoderResult, CoderTranscript, CoderTurn, CompletionReason
from symphony_mcp.code.types import CodeExecutor, Language
from symphony_mcp.code.workspace import changes, environment_facts, snapshot
from symphony_mcp.errors import ModelAnswerError, ModelError
from symphony_mcp.memory.trajectory import write_json_atomically
from symphony_mcp.models.client import ChatClient
from symphony_mcp.models.images import prepare_image
from symphony_mcp.models.messages import ChatMessage, assistant, system, user
from symphony_mcp.models.reask import LOOP_REASKS, ask_until_usable

log = logging.getLogger(__name__)
SUMMARY_WORDS = 150
MAX_UNUSABLE_TURNS = 2  # turns in a row without a usable answer (after re-asks) end the run as FAIL
TRANSCRIPT_FILE = "transcript.json"
Progress = Callable[[str], Awaitable[None]]  # what the run is doing now, for the caller


@dataclass(frozen=True)
class CoderSetup:
    """Where and how the loop runs its blocks."""

    run_id: str
    directory: Path  # the run's folder in the task's trajectory folder, for its transcript
    workdir: Path  # where its blocks run (inside the executor's work area)
    transcript_uri: str
    languages: tuple[Language, ...]
    writable: list[Path] = field(default_factory=list)
    block_timeout_s: float = 60.0


class CoderLoop:
    def __init__(self, model: ChatClient, executor: CodeExecutor, setup: CoderSetup, progress: Progress):
        self.model = model
        self.executor = executor
        self.setup = setup
        self.progress = progress

    async def run(self, task: str, budget: int, screen: Image.Image | None) -> CoderResult:
        setup = self.setup  # the executor makes the workdir at the first block, never through a planted link
        roots = [setup.workdir, *setup.writable]
        before = await asyncio.to_thread(snapshot, roots)
        transcript = CoderTranscript(
            run_id=setup.run_id, task=task, budget=budget, started_at=time.time(), workdir=str(setup.workdir)
        )
        messages = await self._opening(task, budget, screen)
        reason: CompletionReason = "BUDGET_EXHAUSTED"
        for step in range(1, budget + 1):
            await self.progress(f"coder turn {step} of {budget}")
            turn, outcome = await self._turn(messages, step, budget)
            transcript.turns.append(turn)
            await asyncio.to_thread(self._save, transcript)
            if turn.verdict is not None:
                reason = turn.verdict  # type: ignore[assignment]
                break
            if _unusable_streak(transcript.turns) >= MAX_UNUSABLE_TURNS and step < budget:
                reason = "FAIL"  # a model that cannot keep the format would only burn the budget
                break
            messages.append(user(outcome))
        await self.progress(f"coder finished: {reason}; summarising")
        after = await asyncio.to_thread(snapshot, roots)
        files, more = changes(before, after)
        result = CoderResult(
            task=task,
            steps_used=len(transcript.turns),
            budget=budget,
            completion_reason=reason,
            summary=await self._summary(task, reason, transcript),
            files=files,
            files_truncated=more,
            transcript_uri=setup.transcript_uri,
            transcript_file=str(setup.directory / TRANSCRIPT_FILE),
        )
        transcript.result, transcript.ended_at = result, time.time()
        await asyncio.to_thread(self._save, transcript)
        return result

    async def _opening(self, task: str, budget: int, screen: Image.Image | None) -> list[ChatMessage]:
        setup = self.setup
        facts = await asyncio.to_thread(environment_facts, setup.workdir, setup.writable, task)
        prompt = SYSTEM_PROMPT.format(
            languages=" or ".join(setup.languages),
            workdir=setup.workdir,
            writable=", ".join(str(p) for p in setup.writable) or "nothing else",
            budget=budget,
        )
        text = first_turn(task, facts)
        if screen is None:
            return [system(prompt), user(text.replace("The current screen is attached.", "No screen is available."))]
        image = await asyncio.to_thread(prepare_image, screen, self.model.endpoint)
        return [system(prompt), user(text, image)]

    async def _turn(self, messages: list[ChatMessage], step: int, budget: int) -> tuple[CoderTurn, str]:
        """Ask (re-asking malformed answers, bounded), run the block if any; the turn and the next prompt."""
        started = time.perf_counter()
        turn = CoderTurn(step=step, answer="")
        try:
            asked = await ask_until_usable(
                self.model,
                messages,
                lambda completion: parse_answer(completion.text, step >= budget, self.setup.languages),
                ANSWER_AGAIN,
                purpose="block or verdict",
                reasks=LOOP_REASKS,
            )
        except ModelAnswerError as exc:  # the turn is spent; the run goes on (MAX_UNUSABLE_TURNS ends it)
            turn.answer, turn.rejected, turn.model_ms = exc.answers[-1], list(exc.reasons), exc.model_ms
            messages.append(assistant(turn.answer))
            turn.overhead_ms = round((time.perf_counter() - started) * 1000 - turn.model_ms, 2)
            return turn, unusable(step, budget)
        answer = asked.value
        turn.answer, turn.rejected, turn.model_ms = asked.completion.text, list(asked.reasons), asked.model_ms
        messages.append(assistant(turn.answer))
        turn.thought, turn.verdict = answer.thought or None, answer.verdict
        run_ms = 0.0
        if answer.code is not None and answer.language is not None:
            turn.language, turn.code = answer.language, answer.code
            await self.progress(f"coder turn {step}: running {answer.language}")
            ran = time.perf_counter()
            turn.run = await self.executor.run(
                answer.language, answer.code, self.setup.block_timeout_s, self.setup.workdir
            )
            run_ms = (time.perf_counter() - ran) * 1000
        turn.overhead_ms = round((time.perf_counter() - started) * 1000 - turn.model_ms - run_ms, 2)
        return turn, "" if turn.run is None else run_outcome(turn.run, step, budget)  # a verdict ends the run

    async def _summary(self, task: str, reason: CompletionReason, transcript: CoderTranscript) -> str:
        """At most SUMMARY_WORDS words by a separate call; if that call fails, the last thought, said so."""
        lines = [f"Task: {task}", f"Ended: {reason} after {len(transcript.turns)} of {transcript.budget} turns."]
        for turn in transcript.turns:
            lines.append(f"Turn {turn.step} thought: {turn.thought or '(none)'}")
            if turn.code is not None and turn.run is not None:
                lines.append(f"Ran {turn.language}:\n{turn.code[:1500]}")
                lines.append(f"Exit {turn.run.exit_code}; output: {(turn.run.stdout + turn.run.stderr)[-800:]}")
            if turn.verdict:
                lines.append(f"Verdict: {turn.verdict}")
        try:
            completion = await self.model.complete(
                [system(SUMMARY_PROMPT.format(words=SUMMARY_WORDS)), user("\n".join(lines)[-20_000:])]
            )
            text = completion.text.strip()
        except ModelError as exc:
            log.warning("coder summary failed: %s", exc)
            last = next((t.thought for t in reversed(transcript.turns) if t.thought), "no thought was given")
            text = f"(no summary: the summary call failed: {exc}) Last thought: {last}"
        return clip_words(text or "(the model gave an empty summary)", SUMMARY_WORDS)

    def _save(self, transcript: CoderTranscript) -> None:
        write_json_atomically(self.setup.directory / TRANSCRIPT_FILE, transcript.model_dump(mode="json"))


def _unusable_streak(turns: list[CoderTurn]) -> int:
    streak = 0
    for turn in reversed(turns):
        if turn.code is not None or turn.verdict is not None:
            break
        streak += 1
    return streak


def clip_words(text: str, limit: int) -> str:
    words = text.split()
    return text if len(words) <= limit else " ".join(words[:limit]) + "…"
