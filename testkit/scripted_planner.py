"""Scripted answers for the orchestrator's stand-in models (testkit/model_server.py): the planner's and the
Coder's answer formats, the step a request asks about, the memoryer's verdicts, and settings that point both roles
at the stand-in."""

from __future__ import annotations

import json
import re
from collections.abc import Callable
from pathlib import Path
from typing import Any

from symphony_mcp.config import Settings, load_settings
from testkit.model_server import ModelRequest, Reply, StandInModel

PLANNER, MEMORYER, CODER = "stand-in-planner", "stand-in-memoryer", "stand-in-coder"


def act(code: str, note: str = "") -> str:
    """A planner answer in the required format."""
    return (
        "(Previous action verification)\nFine.\n(Screenshot analysis)\nThe screen as expected.\n"
        f"(Next action)\n{note or 'Do the next thing.'}\n(Grounded action)\n```python\n{code}\n```"
    )


def said(thought: str, language: str, code: str) -> str:
    """A Coder answer: a thought and one code block."""
    return f"{thought}\n```{language}\n{code}\n```"


def step_of(request: ModelRequest) -> int:
    """The step the planner is asked about (the current message; re-asks come after it)."""
    for text in reversed(request.texts()):
        if match := re.search(r"Step (\d+) of \d+\.", text):
            return int(match.group(1))
    raise AssertionError("no step number in the planner request")


def numbered(request: ModelRequest, name: str) -> int:
    """The id the current step's element list gives the element named `name` (dual grounding: `[12] role "name"`),
    as a model reading that list would pick it."""
    listing = next(t for t in reversed(request.texts()) if t.startswith("Elements, numbered as in the screenshot"))
    found = re.findall(rf'^\[(\d+)\] [^"\n]*"{re.escape(name)}"', listing, re.M)
    if len(found) != 1:
        raise AssertionError(f"{name!r} is listed {len(found)} times in:\n{listing}")
    return int(found[0])


def on_track() -> str:
    """The memoryer's audit: the task is progressing, nothing to remember."""
    return json.dumps({"status": "On-track", "reflection": "Progressing.", "is_milestone": False, "new_facts": []})


def step_checked() -> str:
    """The memoryer's check of one step: the action had its effect."""
    return json.dumps({"success": True, "summary": "The action had its effect."})


def is_step_check(request: ModelRequest) -> bool:
    """Whether a memoryer request checks one step (else it audits the task)."""
    return str(request.messages[0]["content"]).startswith("You check one step")


class Script:
    """Planner answers per step (a list: answers in order, for re-asks; an answer may be a function of the request)
    and memoryer answers."""

    def __init__(
        self,
        planner: dict[int, list[str | Reply | Callable[[ModelRequest], str]]],
        audit: Callable[[ModelRequest], str] | None = None,
    ) -> None:
        self.planner = {step: list(answers) for step, answers in planner.items()}
        self.audit = audit or (lambda _: on_track())
        self.planner_requests: list[ModelRequest] = []

    def __call__(self, request: ModelRequest) -> str | Reply:
        if request.body["model"] == MEMORYER:
            return step_checked() if is_step_check(request) else self.audit(request)
        self.planner_requests.append(request)
        answer = self.planner[step_of(request)].pop(0)
        return answer(request) if callable(answer) else answer  # a callable answers from what the request shows


def settings_for(stand_in: StandInModel, results: Path, **orchestrator: Any) -> Settings:
    """Settings whose planner and memoryer are the stand-in (quick retries), results in `results`."""
    endpoint = {"base_url": stand_in.url, "backoff_seconds": 0.05, "max_retries": 1}
    return load_settings(
        models={"orchestrator": {**endpoint, "model": PLANNER}, "memoryer": {**endpoint, "model": MEMORYER}},
        orchestrator={"results_dir": str(results), **orchestrator},
    )
