"""The shell command that checks a task's outcome (orchestrator/checker.py)."""

from __future__ import annotations

from pathlib import Path

import pytest

from symphony_mcp.orchestrator.checker import CommandChecker

pytestmark = pytest.mark.anyio


async def test_command_checker(tmp_path: Path) -> None:
    assert (await CommandChecker("true").check()).success
    failed = await CommandChecker("echo not yet; exit 3").check()
    assert not failed.success and "status 3: not yet" in failed.feedback
    slow = await CommandChecker("sleep 5", timeout=0.2).check()
    assert not slow.success and "did not finish within 0.2 s" in slow.feedback
