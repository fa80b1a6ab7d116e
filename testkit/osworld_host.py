"""The bundled OSWorld task set (tests/data/osworld) and this machine as the task classifier sees it, with chosen
facts: shared by the OSWorld tests and the subprocesses they start to classify under other imports."""

from __future__ import annotations

from symphony_mcp.bench.osworld.account import find_task_user
from symphony_mcp.bench.osworld.tasks import Host
from testkit.paths import TEST_DATA

TASKS = TEST_DATA / "osworld"


def host(sudo: bool = True, systemd: bool = False, missing: tuple[str, ...] = ()) -> Host:
    """This machine as classification sees it, with chosen facts (the input of a pure function)."""
    user = find_task_user("user", "password")
    return Host(
        user=user if not isinstance(user, str) else None,
        user_problem=user if isinstance(user, str) else "",
        programs=lambda name: name not in missing and (name != "sudo" or sudo),
        systemd=systemd,
        pyautogui=True,
    )
