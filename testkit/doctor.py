"""`symphony-mcp doctor --json` run as a user runs it, its findings by capability."""

from __future__ import annotations

import json
import subprocess
from typing import Any

from testkit.server_process import serve_command


def run_doctor(env: dict[str, str]) -> tuple[int, dict[str, dict[str, Any]]]:
    """The exit status and the findings (each with status, detail and fix) by capability."""
    result = subprocess.run(
        [*serve_command(), "doctor", "--json"], env=env, capture_output=True, text=True, timeout=120, check=False
    )
    report = json.loads(result.stdout)
    assert report["ok"] == (result.returncode == 0), result.stdout + result.stderr
    return result.returncode, {finding["capability"]: finding for finding in report["findings"]}
