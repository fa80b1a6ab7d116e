"""WindowsAgentArena through the runner: task JSONs of WAA's shape (made here: WAA's own are written for Windows
paths and apps), set up through a real stand-in of WAA's server (testkit/waa_server) on the tests' Xvfb, run by the
real orchestrator loop (a stand-in planner over real HTTP, the real server spawned on the WAA backend, a real xterm
the planner opens on the "machine" and types into), scored by OSWorld's metric functions over WAA's getters. The
machines are given as for every remote benchmark (`bench --machines`, `--machine-reset`: bench/machines.py).
"""

from __future__ import annotations

import importlib.util
import io
import json
import shlex
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from rich.console import Console

from symphony_mcp.bench.command import run_bench
from symphony_mcp.bench.machines import machine_environments
from symphony_mcp.bench.registry import adapter_spec
from symphony_mcp.bench.request import BenchRequest
from symphony_mcp.bench.types import TaskFilter
from symphony_mcp.bench.waa.adapter import WaaAdapter
from symphony_mcp.config import load_settings
from symphony_mcp.desktop.virtual_display import VirtualDisplay
from symphony_mcp.errors import SettingsError
from testkit.file_host import FileHost, file_host
from testkit.model_server import StandInModel
from testkit.osworld_runs import Planner, bench_on_machines, in_xterm, settings_for
from testkit.scripted_planner import act
from testkit.waa_server.process import RunningWaaServer, running_waa_server

HAS_DESKTOP_ENV = importlib.util.find_spec("desktop_env") is not None
pytestmark = [
    pytest.mark.anyio,
    pytest.mark.skipif(not HAS_DESKTOP_ENV, reason="desktop-env (OSWorld's metrics, which WAA scores with) is missing"),
]

DRAFT, REFUSE, EXPLORER, PDF = "waa-draft-WOS", "waa-refuse-WOS", "waa-details-WOS", "waa-pdf-WOS"
GOLD = "Hello WAA\n"


@pytest.fixture
def machine(xdisplay: VirtualDisplay, tmp_path: Path) -> Iterator[RunningWaaServer]:
    with running_waa_server(tmp_path / "vm-home") as server:
        yield server


@pytest.fixture
def gold() -> Iterator[FileHost]:
    with file_host({"/draft_gold.txt": GOLD.encode()}) as host:
        yield host


def write_task(examples: Path, domain: str, task: dict[str, Any]) -> None:
    (examples / domain).mkdir(parents=True, exist_ok=True)
    (examples / domain / f"{task['id']}.json").write_text(json.dumps(task), encoding="utf-8")


def waa_tasks(root: Path, documents: Path, gold_url: str) -> Path:
    """Four tasks in WAA's format (its Notepad task's evaluator shape), a test_all.json naming them."""
    examples = root / "examples"
    seed = {"type": "create_file", "parameters": {"path": str(documents / "notes.txt"), "content": "seed"}}
    write_task(examples, "notepad", {
        "id": DRAFT, "snapshot": "notepad", "instruction": "Save draft.txt in Documents with the line Hello WAA.",
        "source": "symphony-mcp tests", "config": [seed], "related_apps": ["notepad"],
        "evaluator": {
            "func": ["exact_match", "diff_text_file"],
            "result": [
                {"type": "vm_file_exists_in_vm_folder", "folder_name": str(documents), "file_name": "draft.txt"},
                {"type": "vm_file", "path": str(documents / "draft.txt"), "dest": "draft.txt"},
            ],
            "expected": [
                {"type": "rule", "rules": {"expected": 1.0}},
                {"type": "cloud_file", "path": gold_url, "dest": "draft_gold.txt"},
            ],
        },
    })  # fmt: skip
    write_task(examples, "notepad", {
        "id": REFUSE, "snapshot": "notepad", "instruction": "Print this note on the office printer.",
        "config": [], "evaluator": {"func": "infeasible"},
    })  # fmt: skip
    write_task(examples, "file_explorer", {
        "id": EXPLORER, "snapshot": "file_explorer", "instruction": "Show Documents in Details view.", "config": [],
        "evaluator": {"func": "exact_match", "result": {"type": "is_details_view", "folder_path": "C:\\\\Docs"},
                      "expected": {"type": "rule", "rules": {"expected": True}}},
    })  # fmt: skip
    write_task(examples, "vs_code", {
        "id": PDF, "snapshot": "vs_code", "instruction": "Save the file.", "config": [],
        "evaluator": {"func": "compare_text_file", "result": {"type": "vm_file", "path": "a", "dest": "a"},
                      "expected": {"type": "rule", "rules": {}}},
    })  # fmt: skip
    listing = {"notepad": [DRAFT, REFUSE], "file_explorer": [EXPLORER], "vs_code": [PDF]}
    (root / "test_all.json").write_text(json.dumps(listing), encoding="utf-8")
    return examples


def test_tasks_are_listed_runnable_or_with_the_reason(machine: RunningWaaServer, tmp_path: Path) -> None:
    examples = waa_tasks(tmp_path / "waa", machine.home / "Documents", "http://127.0.0.1:9/gold")
    adapter = WaaAdapter(examples)
    tasks = {t.task_id: t for t in adapter.list_tasks(TaskFilter())}
    assert list(tasks) == [DRAFT, REFUSE, EXPLORER, PDF]  # test_all.json's order
    assert tasks[DRAFT].skip_reason is None and tasks[REFUSE].infeasible and tasks[REFUSE].skip_reason is None
    assert "getter 'is_details_view' is not run here" in str(tasks[EXPLORER].skip_reason)
    assert "metric module vscode needs PyPDF2" in str(tasks[PDF].skip_reason)  # not in this install
    assert [t.task_id for t in adapter.list_tasks(TaskFilter(domains=("notepad",)))] == [DRAFT, REFUSE]


@pytest.mark.timeout(300)
def test_a_task_runs_end_to_end_on_the_machine_and_is_scored(
    machine: RunningWaaServer, gold: FileHost, stand_in: StandInModel, tmp_path: Path
) -> None:
    documents = machine.home / "Documents"
    examples = waa_tasks(tmp_path / "waa", documents, f"{gold.base}/draft_gold.txt")
    tasks = {t.task_id: t for t in WaaAdapter(examples).list_tasks(TaskFilter())}
    agent = Planner({task_id: str(task.instruction) for task_id, task in tasks.items()})
    stand_in.script(default=agent)
    settings = settings_for(stand_in)
    results = tmp_path / "results"
    leftover = machine.home / "Downloads" / "from-the-last-task.txt"
    leftover.write_text("x", encoding="utf-8")

    draft, ids = documents / "draft.txt", (DRAFT, REFUSE)
    agent.plans = {
        DRAFT: in_xterm(f"printf 'Hello WAA\\n' > {draft}", draft.exists),
        REFUSE: [act('fail(reason="There is no printer on this machine")')],
    }
    resets = tmp_path / "resets.log"  # the user's reset command, run here before each task with the machine's URL
    reset = f"sh -c {shlex.quote(f'echo {{index}} {{url}} >> {resets}')}"
    options = {"tasks_dir": str(examples)}
    summary, scored = bench_on_machines("waa", options, [machine.url], settings, results, ids=ids, reset=reset)
    assert resets.read_text().splitlines() == [f"0 {machine.url}"] * 2
    assert summary.scope == (
        "WindowsAgentArena on 1 machine: 2 of 2 tasks, 1 infeasible (the selected tasks whose setup, getters and "
        "metrics run through this adapter; each reset before every task; not WindowsAgentArena's score)"
    )
    assert (scored[DRAFT].score, scored[DRAFT].failure) == (1.0, None), scored[DRAFT]
    assert "exact_match(1.0) = 1" in scored[DRAFT].detail and "diff_text_file(" in scored[DRAFT].detail
    assert (documents / "notes.txt").read_text() == "seed"  # the setup step ran on the machine
    assert not leftover.exists()  # WAA's reset emptied Downloads
    assert (scored[REFUSE].score, scored[REFUSE].outcome) == (1.0, "fail")

    draft.unlink()
    agent.plans = {DRAFT: [act("done()")], REFUSE: [act("done()")]}  # nothing done: both score 0
    _, scored = bench_on_machines("waa", options, [machine.url], settings, results, ids=ids, reset="true")
    assert (scored[DRAFT].score, scored[DRAFT].failure) == (0.0, "scored_zero"), scored[DRAFT]
    assert "exact_match(0.0) = 0" in scored[DRAFT].detail
    assert scored[REFUSE].score == 0.0 and scored[REFUSE].detail == "infeasible task: the agent did not say fail"


def test_machines_are_given_with_bench_machines_as_http_urls(tmp_path: Path) -> None:
    quiet, waa = Console(file=io.StringIO()), adapter_spec("waa", None)
    options = (("tasks_dir", str(tmp_path)),)
    with pytest.raises(SettingsError, match="waa runs on remote machines: give them with --machines http://"):
        run_bench(BenchRequest(waa, TaskFilter(), options), load_settings(), quiet)
    mac = BenchRequest(waa, TaskFilter(), options, machines=("ssh://me@10.0.0.5:22",))
    with pytest.raises(SettingsError, match="waa takes machines as http:// or https:// URLs"):
        run_bench(mac, load_settings(), quiet)
    with pytest.raises(SettingsError, match="does not take these options"):  # the machines option is gone
        run_bench(BenchRequest(waa, TaskFilter(), (*options, ("machines", ["http://a:5000"]))), load_settings(), quiet)


async def test_each_environment_drives_its_own_machine(
    xdisplay: VirtualDisplay, stand_in: StandInModel, tmp_path: Path
) -> None:
    examples = waa_tasks(tmp_path / "waa", tmp_path / "Documents", "http://127.0.0.1:9/gold")
    with (
        running_waa_server(tmp_path / "machine-0") as first,
        running_waa_server(tmp_path / "machine-1") as second,
        machine_environments(
            (first.url, second.url), settings_for(stand_in), tmp_path / "environments"
        ) as environments,
    ):
        adapter = WaaAdapter(examples)
        refuse = next(t for t in adapter.list_tasks(TaskFilter(task_ids=(REFUSE,))))
        leftovers = [machine.home / "Downloads" / "left.txt" for machine in (first, second)]
        for leftover in leftovers:
            leftover.write_text("x", encoding="utf-8")
        for index, (environment, machine) in enumerate(zip(environments, (first, second), strict=True)):
            await adapter.setup(environment)
            served = adapter.server(environment, environment.server).env
            assert (served["SYMPHONY_DESKTOP__BACKEND"], served["SYMPHONY_DESKTOP__URL"]) == ("waa", machine.url)
            assert await adapter.reset(environment, refuse) == refuse.instruction
            assert [leftover.exists() for leftover in leftovers] == [i > index for i in range(2)]  # its own reset
        await adapter.close()
