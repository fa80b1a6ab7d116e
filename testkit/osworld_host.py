"""The bundled OSWorld task set (tests/data/osworld) and this machine as the task classifier sees it, with chosen
facts: shared by the OSWorld tests and the subprocesses they start to classify under other imports."""

from __future__ import annotations

import os
import subprocess
import sys
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import pytest

from symphony_mcp.bench.osworld.account import RECORD, find_task_user
from symphony_mcp.bench.osworld.tasks import Host
from testkit.paths import TEST_DATA

TASKS = TEST_DATA / "osworld"
ACCOUNT_COMMAND = [sys.executable, "-m", "symphony_mcp", "osworld-user"]  # the shipped script, through the CLI


@contextmanager
def task_account() -> Iterator[str]:
    """The account OSWorld's tasks assume, made by the project's script and removed after (when made here);
    skips the test where it cannot be had (not root, or a `user` the script did not create)."""
    if os.geteuid() != 0:
        pytest.skip("the OSWorld tasks run as the account 'user', which only root can create and act as")
    created = subprocess.run([*ACCOUNT_COMMAND, "status"], capture_output=True, text=True).stdout
    made_here = "does not exist" in created
    if made_here:
        subprocess.run([*ACCOUNT_COMMAND, "create"], check=True, capture_output=True)
    elif "created by this script" not in created:
        pytest.skip(f"an account 'user' exists that `symphony-mcp osworld-user` did not create: {created.strip()}")
    yield "user"
    if made_here:
        done = subprocess.run([*ACCOUNT_COMMAND, "remove"], capture_output=True, text=True)
        assert done.returncode == 0, done.stderr
        assert not RECORD.exists() and not Path("/home/user").exists()


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
