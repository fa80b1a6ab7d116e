"""The searcher loop (SeeAct-style): each step the searcher model sees the page with numbered element marks
and its element list, answers with one action, the browser does it, until done(tutorial), fail(hint), the
budget, or a failure of the browser; then the tutorial is assembled with its pictures and sources.

Model output and page text are data: actions are parsed (`parsing.py`), elements resolved against the
page's own list, URLs checked by the browser's policy; every refusal goes back to the model as feedback.
The transcript is rewritten to disk after every step, so a crash leaves what happened so far.
"""

from __future__ import annotations

import asyncio
import logging
import re
import time
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from pathlib import Path

from PIL import Image
from rapidfuzz import fuzz, process

from symphony_mcp.errors import ModelAnswerError, ModelError, SymphonyError, clip
from symphony_mcp.imaging.encoding import EncodedImage, EncodeOptions, encode_image
from symphony_mcp.imaging.geometry import Rect
from symphony_mcp.memory.trajectory import write_json_atomically
from symphony_mcp.models.client import ChatClient
from symphony_mcp.models.images import prepare_image
from symphony_mcp.models.messages import ChatMessage, ModelImage, system, user
from symphony_mcp.models.reask import LOOP_REASKS, UnusableAnswerError, ask_until_usable
from symphony_mcp.search.browser import marked_image
from symphony_mcp.search.parsing import SearchAction, parse_action
from symphony_mcp.search.prompts import ANSWER_AGAIN, OPENING, OPENING_NO_SCREEN, SYSTEM_PROMPT, step_message
from symphony_mcp.search.result_schemas import (
    MAX_REFUSED,
    CompletionReason,
    RefusedRequest,
    SearchNote,
    SearchStep,
    SearchTranscript,
    TutorialImage,
    TutorialResult,
)
from symphony_mcp.search.types import Browser, BrowserError, PageElement, PageView, UrlRefusedError

log = logging.getLogger(__name__)
TRANSCRIPT_FILE = "transcript.json"
Progress = Callable[[str], Awaitable[None]]  # what the run is doing now, for the caller
DESCRIPTION_MATCH = 80  # token-set similarity (0-100) a description needs with an element's text
# Words that say what kind of element is meant, not which one: left out when a description is matched.
_GENERIC_WORDS = frozenset(
    (
        "a",
        "an",
        "the",
        "this",
        "that",
        "on",
        "of",
        "to",
        "in",
        "button",
        "link",
        "field",
        "box",
        "input",
        "textbox",
        "text",
        "tab",
        "menu",
        "item",
        "icon",
        "option",
    )
)
_WORD = re.compile(r"[^\W_]+")
NOTE_PADDING = 40  # pixels kept around an element cropped for a note
_HISTORY_CHARS = 300


def note_crop(image: Image.Image, box: Rect) -> Image.Image:
    """The part of a screenshot a note keeps for an element: its box and NOTE_PADDING around it."""
    return image.crop(
        (
            max(0, box.left - NOTE_PADDING),
            max(0, box.top - NOTE_PADDING),
            min(image.width, box.left + box.width + NOTE_PADDING),
            min(image.height, box.top + box.height + NOTE_PADDING),
        )
    )


@dataclass(frozen=True)
class SearchSetup:
    """Where the run is kept and how large its pictures may be."""

    run_id: str
    directory: Path  # the run's folder in the task's trajectory folder
    transcript_uri: str
    engine: str
    deadline_s: float  # the whole search, from its start
    max_images: int = 4
    image_max_side: int = 1024


class _StartPageError(Exception):
    """The search engine's results page could not be opened: the search ends here, with this reason and message."""

    def __init__(self, reason: CompletionReason, message: str) -> None:
        super().__init__(message)
        self.reason = reason
        self.message = message


class SearchLoop:
    def __init__(self, model: ChatClient, browser: Browser, setup: SearchSetup, progress: Progress):
        self.model = model
        self.browser = browser
        self.setup = setup
        self.progress = progress
        self.notes: list[SearchNote] = []
        self.history: list[str] = []
        self.refused: dict[str, RefusedRequest] = {}  # by URL, the first reason

    async def run(self, query: str, start_url: str, budget: int, screen: Image.Image | None) -> TutorialResult:
        setup = self.setup
        transcript = SearchTranscript(
            run_id=setup.run_id,
            query=query,
            engine=setup.engine,
            start_url=start_url,
            budget=budget,
            started_at=time.time(),
        )
        reason: CompletionReason = "BUDGET_EXHAUSTED"
        tutorial = hint = error = None
        view: PageView | None = None
        deadline = asyncio.get_running_loop().time() + setup.deadline_s
        try:
            async with asyncio.timeout_at(deadline):
                view = await self._start(start_url)
                opening = await self._opening(query, budget, screen)
                feedback: str | None = None
                for step in range(1, budget + 1):
                    await self.progress(f"search step {step} of {budget}: {_cut(view.url, 120)}")
                    record, action = await self._step(opening, view, step, budget, feedback)
                    transcript.steps.append(record)
                    await asyncio.to_thread(self._save, transcript)
                    if action is not None and action.name == "done":
                        reason, tutorial = "DONE", action.text
                        break
                    if action is not None and action.name == "fail":
                        reason, hint = "FAIL", action.text
                        break
                    feedback = record.outcome
                    view = self._seen(await self.browser.view())
        except _StartPageError as ended:
            reason, error = ended.reason, ended.message
        except TimeoutError:
            reason, error = "ERROR", f"the search took longer than its bound of {setup.deadline_s:g} s"
        except BrowserError as exc:
            reason, error = "ERROR", str(exc)
        except ModelError as exc:
            reason, error = "ERROR", f"the searcher model failed: {exc}"
        await self.progress(f"search finished: {reason}")
        images = await asyncio.to_thread(self._pictures, view if reason in ("DONE", "BUDGET_EXHAUSTED") else None)
        sources = list(dict.fromkeys([*(n.url for n in self.notes), *([view.url] if view and tutorial else [])]))
        result = TutorialResult(
            query=query,
            completion_reason=reason,
            tutorial=tutorial,
            hint=hint,
            error=error,
            notes=self.notes,
            sources=sources,
            images=images,
            refused=list(self.refused.values()),
            steps_used=len(transcript.steps),
            budget=budget,
            engine=setup.engine,
            transcript_uri=setup.transcript_uri,
            transcript_file=str(setup.directory / TRANSCRIPT_FILE),
        )
        transcript.result, transcript.ended_at = result, time.time()
        await asyncio.to_thread(self._save, transcript)
        return result

    async def _start(self, start_url: str) -> PageView:
        """The results page; an engine that does not answer ends the search before any model call."""
        try:
            await self.browser.open(start_url)
        except UrlRefusedError as exc:
            refused = f"the search engine's page {clip(start_url)} may not be opened: {exc}"
            raise _StartPageError("ERROR", refused) from exc
        view = self._seen(await self.browser.view())
        if view.load_error:
            raise _StartPageError("ERROR", f"the search engine at {clip(start_url)} did not answer: {view.load_error}")
        return view

    def _seen(self, view: PageView) -> PageView:
        """Keep the view's refusals for the result."""
        for refusal in view.refused:
            if len(self.refused) < MAX_REFUSED:
                self.refused.setdefault(refusal.url, RefusedRequest(url=refusal.url, reason=refusal.reason))
        return view

    async def _opening(self, query: str, budget: int, screen: Image.Image | None) -> list[ChatMessage]:
        prompt = system(SYSTEM_PROMPT.format(budget=budget))
        if screen is None:
            return [prompt, user(OPENING_NO_SCREEN.format(query=query))]
        image = await asyncio.to_thread(prepare_image, screen, self.model.endpoint)
        return [prompt, user(OPENING.format(query=query), image)]

    async def _step(
        self, opening: list[ChatMessage], view: PageView, step: int, budget: int, feedback: str | None
    ) -> tuple[SearchStep, SearchAction | None]:
        started = time.perf_counter()
        record = SearchStep(step=step, url=view.url, title=view.title, elements=len(view.elements))
        record.notices = list(view.notices)
        image = await asyncio.to_thread(self._marked, view, step, record)
        notes = [f"{n.text} (from {n.url})" for n in self.notes]
        asked = [*opening, user(step_message(view, step, budget, self.history, notes, feedback), image)]

        def parse(text: str) -> tuple[SearchAction, PageElement | None]:
            action = parse_action(text, step >= budget)
            return action, self._target(view, action)

        try:
            answer = await ask_until_usable(
                self.model,
                asked,
                lambda completion: parse(completion.text),
                ANSWER_AGAIN,
                purpose="action",
                reasks=LOOP_REASKS,
            )
        except ModelAnswerError as exc:  # the step is spent; the search goes on
            record.answer, record.rejected, record.model_ms = exc.answers[-1], list(exc.reasons), exc.model_ms
            record.outcome = "no usable answer was given; nothing was done"
            self.history.append(f"{step}. at {_cut(view.url, 150)}: no usable answer")
            record.overhead_ms = round((time.perf_counter() - started) * 1000 - record.model_ms, 2)
            return record, None
        (action, target) = answer.value
        record.answer, record.rejected, record.model_ms = answer.completion.text, list(answer.reasons), answer.model_ms
        record.thought, record.action = action.thought or None, action.code
        record.outcome = await self._act(view, action, target, step)
        self.history.append(f"{step}. at {_cut(view.url, 150)}: {action.code[:_HISTORY_CHARS]} -> {record.outcome}")
        record.overhead_ms = round((time.perf_counter() - started) * 1000 - record.model_ms, 2)
        return record, action

    def _marked(self, view: PageView, step: int, record: SearchStep) -> ModelImage:
        """The screenshot with numbered marks, kept in the run's folder and sized for the model."""
        marked = marked_image(view)
        path = self.setup.directory / f"step_{step}.png"
        marked.save(path, format="PNG", compress_level=1)
        record.screenshot_file = str(path)
        return prepare_image(marked, self.model.endpoint)

    def _target(self, view: PageView, action: SearchAction) -> PageElement | None:
        """The element an action names, from this page's list; UnusableAnswerError when it names none."""
        if action.element is None:
            return None
        if isinstance(action.element, int):
            found = view.element(action.element)
            if found is None:
                ids = f"1 to {len(view.elements)}" if view.elements else "none (the page shows no elements)"
                raise UnusableAnswerError(f"there is no element {action.element} on this page; the ids are {ids}")
            return found
        wanted = _words(action.element) or action.element.lower()
        choices = {e.id: _words(e.name) or f"{e.name} {e.role}".lower() for e in view.elements}
        match = process.extractOne(wanted, choices, scorer=fuzz.token_set_ratio, score_cutoff=DESCRIPTION_MATCH)
        if match is None:
            raise UnusableAnswerError(
                f"no element on this page matches {clip(action.element)}; give its id from the list"
            )
        return view.element(int(match[2]))

    async def _act(self, view: PageView, action: SearchAction, target: PageElement | None, step: int) -> str:
        """Do the action; what happened, in words for the model's next step."""
        browser = self.browser
        try:
            if action.name == "click" and target is not None:
                await browser.click(target)
                return f"clicked [{target.id}] {clip(target.name, 80)}"
            if action.name == "type" and target is not None and action.text is not None:
                await browser.type(target, action.text, action.enter)
                return f"typed into [{target.id}]" + (" and pressed Enter" if action.enter else "")
            if action.name == "scroll":
                await browser.scroll(action.direction, action.amount)
                return f"scrolled {action.direction} by {action.amount * 100} pixels"
            if action.name == "go_back":
                await browser.go_back()
                return "went back"
            if action.name == "open_url" and action.url is not None:
                await browser.open(action.url)
                return f"opened {_cut(action.url, 150)}"
            if action.name == "save_note" and action.text is not None:
                await asyncio.to_thread(self._note, view, action.text, target, step)
                return f"note {len(self.notes)} saved"
        except UrlRefusedError as exc:
            return f"refused, nothing was opened: {exc}"
        except (BrowserError, TimeoutError):
            raise
        except SymphonyError as exc:
            return f"the action failed: {exc}"
        return "concluded"  # done / fail

    def _note(self, view: PageView, text: str, target: PageElement | None, step: int) -> None:
        image = view.image if target is None else note_crop(view.image, target.box)
        path = self.setup.directory / f"note_{len(self.notes) + 1}.png"
        image.save(path, format="PNG", compress_level=1)
        self.notes.append(SearchNote(step=step, text=text, url=view.url, title=view.title, image_file=str(path)))

    def _pictures(self, last_view: PageView | None) -> list[TutorialImage]:
        """The notes' pictures (the first max_images), else the last page; each encoded within the size bound."""
        pictures: list[tuple[str, str, Image.Image]] = []
        for note in self.notes:
            if note.image_file and len(pictures) < self.setup.max_images:
                with Image.open(note.image_file) as saved:
                    pictures.append((note.text, note.url, saved.convert("RGB")))
        if not pictures and last_view is not None and self.setup.max_images:
            pictures.append((f"the page the search ended on: {last_view.title}", last_view.url, last_view.image))
        images = []
        for number, (caption, url, image) in enumerate(pictures, start=1):
            encoded = _encoded(image, self.setup.image_max_side)
            path = self.setup.directory / f"tutorial_{number}.{encoded.format}"
            path.write_bytes(encoded.data)
            images.append(
                TutorialImage(
                    caption=_cut(caption, 300),
                    source_url=url,
                    file=str(path),
                    mime_type=encoded.mime_type,
                    width=encoded.width,
                    height=encoded.height,
                )
            )
        return images

    def _save(self, transcript: SearchTranscript) -> None:
        write_json_atomically(self.setup.directory / TRANSCRIPT_FILE, transcript.model_dump(mode="json"))


def _cut(text: str, limit: int) -> str:
    return text if len(text) <= limit else text[:limit] + "…"


def _words(text: str) -> str:
    return " ".join(w for w in _WORD.findall(text.lower()) if w not in _GENERIC_WORDS)


def _encoded(image: Image.Image, max_side: int) -> EncodedImage:
    """PNG keeps page text sharp; encode_image falls back to smaller sizes to stay within the byte bound."""
    return encode_image(image, EncodeOptions(format="png", max_width=max_side, max_height=max_side, max_bytes=400_000))
