"""Long-term memory of the Reflection-Memory Agent: every step's summary as text, few screenshots.

Screenshots are kept only for the first observation and for milestone steps, within an image
budget; when a new milestone would exceed it, the oldest milestone (never the first image) goes.
A new milestone is always added: the budget evicts, it never refuses.
"""

from __future__ import annotations

from pydantic import BaseModel, Field


class StepSummary(BaseModel):
    step: int
    success: bool
    summary: str


class MilestoneMemory(BaseModel):
    budget: int = Field(ge=1)
    first_image: int | None = Field(None, description="step whose screenshot is the first observation (0 = start)")
    milestones: list[int] = Field(default_factory=list, description="milestone steps whose screenshots are kept")
    evicted: list[int] = Field(default_factory=list, description="milestones whose screenshots were dropped")
    summaries: list[StepSummary] = Field(default_factory=list)
    facts: list[str] = Field(default_factory=list)

    def keep_first(self, step: int) -> None:
        self.first_image = step

    def add_milestone(self, step: int) -> None:
        if step in self.milestones or step == self.first_image:
            return
        self.milestones.append(step)
        room = self.budget - (1 if self.first_image is not None else 0)
        while len(self.milestones) > max(room, 0):
            self.evicted.append(self.milestones.pop(0))

    def image_steps(self) -> list[int]:
        """Steps whose screenshots are in memory, oldest first."""
        return ([self.first_image] if self.first_image is not None else []) + self.milestones

    def add_summary(self, summary: StepSummary) -> None:
        self.summaries = [s for s in self.summaries if s.step != summary.step] + [summary]
        self.summaries.sort(key=lambda s: s.step)

    def add_facts(self, facts: list[str]) -> list[str]:
        """Add facts not already known (case-insensitively); return those added."""
        known = {f.casefold().strip() for f in self.facts}
        added = []
        for fact in facts:
            key = fact.casefold().strip()
            if key and key not in known:
                known.add(key)
                added.append(fact.strip())
        self.facts += added
        return added
