"""What the Reflection-Memory Agent's model must answer: schemas, validated before use."""

from __future__ import annotations

from typing import Literal

from pydantic import BaseModel, Field, model_validator

ReflectionStatus = Literal["On-track", "Off-track", "Completed", "Infeasible"]
ErrorType = Literal["gui_operation_error", "lack_of_tutorial", "code_error", "other"]


class StepVerdict(BaseModel):
    """Did the step's GUI action do what the planner intended?"""

    success: bool = Field(description="true when the screen after shows the intended effect")
    summary: str = Field(min_length=1, max_length=400, description="one sentence: what the step did")


class Reflection(BaseModel):
    """The trajectory audit: a diagnosis, never advice."""

    status: ReflectionStatus
    error_type: ErrorType | None = Field(None, description="required when Off-track, else null")
    reflection: str = Field(min_length=1, max_length=1200, description="short diagnosis of the trajectory")
    is_milestone: bool = Field(description="the latest step reached a checkpoint worth keeping its screenshot")
    new_facts: list[str] = Field(default_factory=list, description="facts learnt in the latest step worth keeping")

    @model_validator(mode="after")
    def _error_type_matches_status(self) -> Reflection:
        if self.status == "Off-track" and self.error_type is None:
            raise ValueError("status Off-track needs an error_type")
        if self.status != "Off-track" and self.error_type is not None:
            raise ValueError(f"error_type must be null unless status is Off-track (status is {self.status})")
        return self
