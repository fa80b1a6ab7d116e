"""OSWorld's Chrome and VLC tasks (their JSONs unchanged, tests/data/osworld) run through the benchmark runner in
their environment's sandbox, with the image's apps (google-chrome as Chromium, VLC with its HTTP interface) and scored
by OSWorld's own getters (through the stand-in `env` and in-VM server) and metrics: a scripted solver policy
(testkit/osworld_solvers.py: the planner hands the job to the Coder, whose bash changes the app's settings inside the
environment) scores 1 on each; a do-nothing agent scores 0 on each.
"""

from __future__ import annotations

import shutil
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from symphony_mcp.bench.osworld import OSWorldAdapter
from symphony_mcp.bench.osworld.image import chrome_available
from symphony_mcp.bench.types import TaskFilter
from testkit.model_server import StandInModel
from testkit.osworld_host import TASKS, task_account
from testkit.osworld_runs import Planner, run, settings_for
from testkit.osworld_solvers import (
    CHROME_DO_NOT_TRACK,
    CHROME_HISTORY,
    CHROME_SEARCH,
    VLC_MAX_VOLUME,
    VLC_RECORDINGS,
    Solver,
)
from testkit.scripted_planner import CODER

pytestmark = [
    pytest.mark.anyio,
    pytest.mark.skipif(
        not (chrome_available() and shutil.which("vlc") and shutil.which("socat")),
        reason="needs Chromium, VLC and socat (scripts/install.sh --dev installs them)",
    ),
]
CHROME = (CHROME_SEARCH, CHROME_DO_NOT_TRACK, CHROME_HISTORY)
VLC = (VLC_MAX_VOLUME, VLC_RECORDINGS)


@pytest.fixture(scope="module")
def task_user() -> Iterator[str]:
    with task_account() as name:
        yield name


@pytest.mark.timeout(900)  # ten runs of the real loop, each starting its apps, on a loaded 2-core machine
async def test_chrome_and_vlc_tasks_score_1_solved_and_0_left_alone(
    task_user: str, xdisplay: Any, stand_in: StandInModel, tmp_path: Path
) -> None:
    adapter = OSWorldAdapter(TASKS)
    tasks = {t.task_id: t for t in adapter.list_tasks(TaskFilter(domains=("chrome", "vlc")))}
    assert {task_id: task.skip_reason for task_id, task in tasks.items()} == dict.fromkeys([*CHROME, *VLC])
    solver = Solver(Planner({task_id: str(task.instruction) for task_id, task in tasks.items()}))
    stand_in.script(default=solver)
    settings = settings_for(stand_in, coder=CODER)

    solver.solve(*CHROME, *VLC)
    scored = await run(adapter, settings, tmp_path / "solved", *CHROME, *VLC)
    assert {task_id: evaluation.score for task_id, evaluation in scored.items()} == dict.fromkeys(
        [*CHROME, *VLC], 1.0
    ), {task_id: evaluation.detail for task_id, evaluation in scored.items()}
    assert not any(solver.coder.values())  # every Coder block ran
    assert "exact_match('Bing') = 1" in scored[CHROME_SEARCH].detail  # OSWorld's getter read the profile
    assert "check_history_deleted([(" in scored[CHROME_HISTORY].detail  # the visits the setup step wrote, minus YouTube

    solver.idle(*CHROME, *VLC)
    scored = await run(adapter, settings, tmp_path / "idle", *CHROME, *VLC)
    assert {task_id: evaluation.score for task_id, evaluation in scored.items()} == dict.fromkeys(
        [*CHROME, *VLC], 0.0
    ), {task_id: evaluation.detail for task_id, evaluation in scored.items()}
    assert "exact_match('Google') = 0" in scored[CHROME_SEARCH].detail
    assert "youtube" in scored[CHROME_HISTORY].detail
