"""OSCAR's state machine, explicit: every transition is checked against the allowed ones and logged."""

from __future__ import annotations

import logging
import time

from symphony_mcp.orchestrator.records import State, Transition

log = logging.getLogger(__name__)

_ALLOWED: dict[State, frozenset[State]] = {
    State.INIT: frozenset({State.OBSERVE, State.ERROR}),
    State.OBSERVE: frozenset({State.PLAN, State.FAIL, State.ERROR}),
    State.PLAN: frozenset({State.EXECUTE, State.OBSERVE, State.FAIL, State.ERROR}),  # OBSERVE: no usable action
    State.EXECUTE: frozenset({State.OBSERVE, State.VERIFY, State.SUCCESS, State.FAIL, State.ERROR}),
    State.VERIFY: frozenset({State.SUCCESS, State.OBSERVE, State.FAIL, State.ERROR}),
    State.SUCCESS: frozenset({State.RESET}),
    State.FAIL: frozenset({State.RESET}),
    State.ERROR: frozenset({State.RESET}),
    State.RESET: frozenset(),
}
TERMINAL = frozenset({State.SUCCESS, State.FAIL, State.ERROR})


class StateMachine:
    def __init__(self, transitions: list[Transition]) -> None:
        self.state = State.INIT
        self.transitions = transitions  # shared with the run record, so it is saved with it

    def go(self, target: State, step: int, reason: str) -> None:
        if target not in _ALLOWED[self.state]:
            raise RuntimeError(f"state machine bug: {self.state} -> {target} is not a transition ({reason})")
        self.transitions.append(Transition(at=time.time(), step=step, source=self.state, target=target, reason=reason))
        log.info("step %d: %s -> %s (%s)", step, self.state, target, reason)
        self.state = target
