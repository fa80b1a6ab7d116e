"""What `open_app` starts for a name, a command line or a file (desktop/launcher.py)."""

from __future__ import annotations

from pathlib import Path

import pytest

from symphony_mcp.desktop.launcher import plan_launch
from symphony_mcp.errors import InvalidInputError


def test_launch_plans(tmp_path: Path) -> None:
    document = tmp_path / "notes.txt"
    document.write_text("hi")
    assert plan_launch("xterm -T hello").argv == ["xterm", "-T", "hello"]
    file_plan = plan_launch(str(document))
    assert file_plan.kind == "file" and file_plan.argv[-1] == str(document)
    with pytest.raises(InvalidInputError, match="give an application name"):
        plan_launch("   ")
    with pytest.raises(InvalidInputError, match="cannot parse"):
        plan_launch('xterm "unclosed')
