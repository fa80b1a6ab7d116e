"""What a tutorial search returns to its caller and keeps on disk (the browsing transcript).

The orchestrator reads `TutorialResult` too, so it lives here, light, with no MCP or browser in it.
"""

from __future__ import annotations

from typing import Literal

from pydantic import BaseModel, Field

CompletionReason = Literal["DONE", "FAIL", "BUDGET_EXHAUSTED", "ERROR"]
MAX_REFUSED = 100


class SearchNote(BaseModel):
    """Something the searcher kept on the way: its words, the page it was on, and a picture of it."""

    step: int
    text: str
    url: str
    title: str
    image_file: str | None = Field(None, description="the crop or screenshot kept with the note (PNG)")


class RefusedRequest(BaseModel):
    """Something the browser was kept from: a URL, or host:port for a bare connection, and the policy's reason."""

    url: str
    reason: str


class TutorialImage(BaseModel):
    """A picture returned with the tutorial (as MCP image content, in this order)."""

    caption: str
    source_url: str
    file: str
    mime_type: str
    width: int
    height: int


class TutorialResult(BaseModel):
    """A search's outcome: the tutorial (numbered Markdown steps) with its pictures and sources, or why not."""

    query: str
    completion_reason: CompletionReason = Field(
        description="DONE: tutorial found; FAIL: the searcher gave up (see hint); BUDGET_EXHAUSTED: steps used up "
        "(notes may still help); ERROR: the browser or engine failed (see error)"
    )
    tutorial: str | None = Field(None, description="numbered steps in Markdown, when DONE")
    hint: str | None = Field(None, description="the searcher's hint when it failed")
    error: str | None = Field(None, description="what failed, when ERROR")
    notes: list[SearchNote] = Field(default_factory=list)
    sources: list[str] = Field(default_factory=list, description="pages the tutorial and notes come from")
    images: list[TutorialImage] = Field(default_factory=list)
    refused: list[RefusedRequest] = Field(
        default_factory=list,
        description=f"URLs and connections the URL policy refused during the search (the first {MAX_REFUSED} "
        "different ones): the searcher's own attempts and those of the pages it visited",
    )
    steps_used: int
    budget: int
    engine: str
    transcript_uri: str = Field(description="resource with the full browsing transcript")
    transcript_file: str
    task_step: int | None = Field(None, description="the step of the session's running task this search became")

    def folded(self) -> str:
        """The text a planner keeps in its context for the rest of the task."""
        head = f"Tutorial search for {self.query!r}: {self.completion_reason} after {self.steps_used} steps."
        parts = [head]
        if self.tutorial:
            parts.append(self.tutorial)
        if self.hint:
            parts.append(f"Hint: {self.hint}")
        if self.error:
            parts.append(f"Error: {self.error}")
        if self.notes and not self.tutorial:
            parts.append("Notes: " + " | ".join(n.text for n in self.notes))
        if self.sources:
            parts.append("Sources: " + ", ".join(self.sources[:5]))
        if self.refused:
            more = f" and {len(self.refused) - 5} more" if len(self.refused) > 5 else ""
            parts.append("Refused by the URL policy: " + ", ".join(r.url for r in self.refused[:5]) + more)
        return "\n".join(parts)


class SearchStep(BaseModel):
    """One browsing step: the page seen, the answer used (or the last refused), what it did."""

    step: int
    url: str
    title: str
    screenshot_file: str | None = Field(None, description="the marked screenshot the model saw")
    elements: int = 0
    answer: str = ""
    rejected: list[str] = Field(default_factory=list, description="why earlier answers of this step were refused")
    thought: str | None = None
    action: str | None = Field(None, description="the action as written, when one was used")
    outcome: str = Field("", description="what happened, as the model is told next step")
    notices: list[str] = Field(default_factory=list)
    model_ms: float = 0.0
    overhead_ms: float = Field(0.0, description="time outside the model call: page view, marks, encoding, action")


class SearchTranscript(BaseModel):
    run_id: str
    query: str
    engine: str
    start_url: str
    budget: int
    started_at: float
    ended_at: float | None = None
    steps: list[SearchStep] = Field(default_factory=list)
    result: TutorialResult | None = None
