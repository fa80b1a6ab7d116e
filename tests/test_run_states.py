"""The run's state machine (orchestrator/state.py)."""

from __future__ import annotations

import pytest

from symphony_mcp.orchestrator.records import State
from symphony_mcp.orchestrator.state import StateMachine


def test_state_machine_refuses_impossible_transitions() -> None:
    machine = StateMachine([])
    machine.go(State.OBSERVE, 1, "look")
    with pytest.raises(RuntimeError, match="Observe -> Success is not a transition"):
        machine.go(State.SUCCESS, 1, "skip ahead")
