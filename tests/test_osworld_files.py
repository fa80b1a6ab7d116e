"""OSWorld's LibreOffice (Calc, Writer, Impress) and Thunderbird tasks whose inputs and gold files OSWorld downloads
(their JSONs unchanged, tests/data/osworld_files), run offline from a cache the test makes (testkit/osworld_files.py:
stand-in files under OSWorld's names, with fetch-cache's manifest): without it each is listed as needing the network,
with it each is runnable (its metric module imports: Writer's docs through torchvision's guard, Impress's slides with
python-pptx); through the benchmark runner in the environment's sandbox a scripted solver (testkit/osworld_solvers.py:
the Coder's bash inside as the task user, LibreOffice's own export and Python UNO scripting, Thunderbird's prefs.js
with Thunderbird closed) scores 1 on each, scored by OSWorld's getters and metrics, and doing nothing scores 0.
"""

from __future__ import annotations

import importlib.util
import shutil
import subprocess
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from symphony_mcp.bench.osworld import OSWorldAdapter
from symphony_mcp.bench.types import TaskFilter
from testkit.model_server import StandInModel
from testkit.osworld_files import (
    CALC_CSV,
    CALC_PROFIT,
    FILES_TASKS,
    IMPRESS_PNG,
    IMPRESS_PORTRAIT,
    THUNDERBIRD_DARK,
    THUNDERBIRD_SIGNATURE,
    WRITER_CENTER,
    WRITER_PDF,
    stand_in_cache,
)
from testkit.osworld_host import task_account
from testkit.osworld_runs import Planner, run, settings_for
from testkit.osworld_solvers import Solver
from testkit.scripted_planner import CODER


def _python_uno() -> bool:
    """Debian's python3-uno, which the Coder's /usr/bin/python3 scripts LibreOffice with."""
    done = subprocess.run(["/usr/bin/python3", "-c", "import uno"], capture_output=True, timeout=60)
    return done.returncode == 0


pytestmark = [
    pytest.mark.anyio,
    pytest.mark.skipif(
        not (shutil.which("soffice") and shutil.which("thunderbird") and _python_uno()),
        reason="needs LibreOffice, python3-uno and Thunderbird (scripts/install.sh --dev installs them)",
    ),
]
DOMAINS = {
    "libreoffice_calc": (CALC_CSV, CALC_PROFIT),
    "libreoffice_writer": (WRITER_PDF, WRITER_CENTER),
    "libreoffice_impress": (IMPRESS_PNG, IMPRESS_PORTRAIT),
    "thunderbird": (THUNDERBIRD_SIGNATURE, THUNDERBIRD_DARK),
}


@pytest.fixture(scope="module")
def task_user() -> Iterator[str]:
    with task_account() as name:
        yield name


@pytest.fixture(scope="module")
def cache(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return stand_in_cache(tmp_path_factory.mktemp("osworld-cache"))


def test_the_test_made_cache_makes_each_task_runnable(task_user: str, cache: Path) -> None:
    assert importlib.util.find_spec("pptx") is not None
    offline = {t.task_id: t for t in OSWorldAdapter(FILES_TASKS).list_tasks(TaskFilter(everything=True))}
    assert {t.domain for t in offline.values()} == set(DOMAINS) and len(offline) == 8
    for task in offline.values():
        assert task.skip_reason is not None and "needs the network (a download step" in task.skip_reason
    cached = OSWorldAdapter(FILES_TASKS, cache=cache).list_tasks(TaskFilter(everything=True))
    assert {(t.domain, t.task_id): t.skip_reason for t in cached} == {
        (domain, task_id): None for domain, ids in DOMAINS.items() for task_id in ids
    }
    # Found by name and checksum too: the manifest names the task's files whatever URL another OSWorld version gives.
    manifest = (cache / "manifest.json").read_text()
    assert manifest.count('"kind": "cloud_file"') == 4 and manifest.count('"kind": "download"') == 8


@pytest.mark.timeout(900)  # four runs of the real loop, each starting its app, on a loaded 2-core machine
@pytest.mark.parametrize("domain", list(DOMAINS))
async def test_solved_scores_1_and_left_alone_0(
    domain: str, task_user: str, cache: Path, xdisplay: Any, stand_in: StandInModel, tmp_path: Path
) -> None:
    ids = DOMAINS[domain]
    adapter = OSWorldAdapter(FILES_TASKS, cache=cache)
    tasks = {t.task_id: t for t in adapter.list_tasks(TaskFilter(domains=(domain,)))}
    solver = Solver(Planner({task_id: str(task.instruction) for task_id, task in tasks.items()}))
    stand_in.script(default=solver)
    settings = settings_for(stand_in, coder=CODER)

    solver.solve(*ids)
    scored = await run(adapter, settings, tmp_path / "solved", *ids)
    assert {task_id: evaluation.score for task_id, evaluation in scored.items()} == dict.fromkeys(ids, 1.0), {
        task_id: evaluation.detail for task_id, evaluation in scored.items()
    }
    assert not any(solver.coder.values())  # every Coder block ran

    solver.idle(*ids)
    scored = await run(adapter, settings, tmp_path / "idle", *ids)
    assert {task_id: evaluation.score for task_id, evaluation in scored.items()} == dict.fromkeys(ids, 0.0), {
        task_id: evaluation.detail for task_id, evaluation in scored.items()
    }
