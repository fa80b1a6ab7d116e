"""OSWorld's files from a cache, whatever OSWorld version's URLs made it: `bench osworld fetch-cache` against a
local file host standing in for Google Drive (through --mirror), its manifest found by name and checksum from
task JSONs with other URLs, the listing of what test_all.json names, and a task run from the fetched cache."""

from __future__ import annotations

import hashlib
import json
import random
import subprocess
from collections.abc import Iterator
from dataclasses import replace
from pathlib import Path
from typing import Any

import pytest

from symphony_mcp.bench.osworld import OSWorldAdapter
from symphony_mcp.bench.osworld.fetch import fetch_cache
from symphony_mcp.bench.osworld.offline import MANIFEST_FILE, CacheError, download_copy, task_files
from symphony_mcp.bench.osworld.tasks import load_task_set, skip_reason
from symphony_mcp.bench.runner import make_plan
from symphony_mcp.bench.summary import scope_of
from symphony_mcp.bench.types import Environment, TaskFilter
from symphony_mcp.orchestrator.api import TaskOutcome
from symphony_mcp.orchestrator.connection import SpawnServer
from symphony_mcp.orchestrator.records import RunRecord
from testkit.file_host import FileHost, file_host
from testkit.osworld_cache import PHOTOS, TRASH
from testkit.osworld_host import TASKS, host, task_account
from testkit.server_process import base_env, serve_command

pytestmark = pytest.mark.anyio
DRIVE = "https://drive.usercontent.google.com"
HUB = "https://huggingface.co/datasets/xlang-ai/osworld-files/resolve/main"  # where a later OSWorld keeps them
POSTER = "poster_party_night.webp"


def task_folder(root: Path, *ids: str, url_base: str = DRIVE) -> Path:
    """OSWorld's layout: examples/os/<id>.json and test_all.json beside it; each download's URL put under
    `url_base` (a later OSWorld version's host) unless it is Google Drive's."""
    examples = root / "examples"
    (examples / "os").mkdir(parents=True)
    for task_id in ids:
        task = json.loads((TASKS / "os" / f"{task_id}.json").read_text())
        for step in task["config"]:
            for file in step["parameters"].get("files", []) if step["type"] == "download" else []:
                file["url"] = file["url"].replace(DRIVE, url_base)
        (examples / "os" / f"{task_id}.json").write_text(json.dumps(task))
    (root / "test_all.json").write_text(json.dumps({"os": list(ids)}))
    return examples


def contents(examples: Path) -> dict[str, bytes]:
    """Distinct bytes for every file the tasks download, by its path and query on the host."""
    made = {}
    for number, task in enumerate(load_task_set(examples).tasks):
        for index, file in enumerate(task_files(task)):
            made[file.url.removeprefix(DRIVE)] = random.Random(number * 100 + index).randbytes(150_000 + index)
    return made


def fetch(examples: Path, cache: Path, host: FileHost, *more: str) -> subprocess.CompletedProcess[str]:
    """`symphony-mcp bench osworld fetch-cache` as a user runs it, the file host standing in through --mirror."""
    command = [*serve_command(), "bench", "osworld", "fetch-cache", str(cache), "--all"]
    command += ["--option", f"tasks_dir={examples}", "--mirror", f"{DRIVE}={host.base}", "--quiet", *more]
    return subprocess.run(command, capture_output=True, text=True, env=base_env(), timeout=120)


@pytest.fixture
def fetched(tmp_path: Path) -> Iterator[tuple[Path, dict[str, bytes]]]:
    """A cache fetch-cache made for the two download tasks, and what the host served."""
    examples = task_folder(tmp_path / "drive", TRASH, PHOTOS)
    served = contents(examples)
    with file_host(served) as host:
        done = fetch(examples, tmp_path / "cache", host)
    assert done.returncode == 0, done.stderr
    yield tmp_path / "cache", served


def test_fetch_cache_downloads_resumes_and_checks_every_file(tmp_path: Path) -> None:
    examples = task_folder(tmp_path / "tasks", TRASH, PHOTOS)
    served = contents(examples)
    [trash_task] = [t for t in load_task_set(examples).tasks if t["id"] == TRASH]
    poster = next(path for path in served if path in json.dumps(trash_task))
    cache = tmp_path / "cache"
    with file_host(served, cut_once={poster: 40_000}) as host:
        # The poster's connection breaks after 40 kB: the run says which file failed and exits 3; the rest is in.
        first = fetch(examples, cache, host)
        assert first.returncode == 3, first.stderr
        assert f"failed: {DRIVE}{poster}: " in first.stderr
        assert "5 files fetched, 0 already there, 1 failed" in first.stdout
        [part] = list(cache.rglob("*.part"))
        assert part.stat().st_size == 40_000
        # Run again: only the poster is asked for, from byte 40000 on (HTTP Range), and it is whole.
        asked = len(host.requests)
        second = fetch(examples, cache, host)
        assert second.returncode == 0, second.stderr
        assert host.requests[asked:] == [(poster, "bytes=40000-")]
        assert "1 files fetched, 5 already there, 0 failed" in second.stdout
        # OSWorld's own layout, and a manifest whose every size and sha256 is what the host served.
        manifest = json.loads((cache / MANIFEST_FILE).read_text())["files"]
        assert len(manifest) == 6 and not list(cache.rglob("*.part"))
        for entry in manifest:
            data = served[entry["url"].removeprefix(DRIVE)]
            assert entry["url"].startswith(DRIVE)  # named by the task's URL, not the mirror's
            assert (cache / entry["task_id"] / entry["stored"]).read_bytes() == data
            assert (entry["size"], entry["sha256"]) == (len(data), hashlib.sha256(data).hexdigest())
        assert (cache / ".gitignore").read_text() == "*\n"  # never committed, wherever DIR is
        # Nothing is fetched twice; a file changed on disk (same size) is found by its checksum and fetched again.
        asked = len(host.requests)
        assert "0 files fetched, 6 already there" in fetch(examples, cache, host).stdout
        assert host.requests[asked:] == []
        damaged = cache / TRASH / next(e["stored"] for e in manifest if e["task_id"] == TRASH)
        damaged.write_bytes(bytes(len(served[poster])))
        assert "1 files fetched, 5 already there" in fetch(examples, cache, host).stdout
        assert damaged.read_bytes() == served[poster]
        # A file the host does not have: the error names the URL and the status; the command exits 3.
        del host.files[poster]
        damaged.unlink()
        missing = fetch(examples, cache, host)
        assert missing.returncode == 3 and f"HTTP 404 from {host.base}{poster}" in missing.stderr
    # Bad input changes nothing: a mirror that is not PREFIX=URL, a task folder that does not exist.
    bad = subprocess.run(
        [*serve_command(), "bench", "osworld", "fetch-cache", str(tmp_path / "other"), "--mirror", "drive"],
        capture_output=True,
        text=True,
        env={**base_env(), "OSWORLD_TASKS": str(examples)},
    )
    assert bad.returncode == 2 and "invalid mirror 'drive': give PREFIX=REPLACEMENT" in bad.stderr
    assert not (tmp_path / "other").exists()
    # A task JSON whose download names no URL is reported, not a crash; the other tasks' files still come.
    broken = {"id": "broken", "config": [{"type": "download", "parameters": {"files": [{"path": "~/a.txt"}]}}]}
    with file_host(served) as again:
        report = fetch_cache([broken, trash_task], tmp_path / "again", [(DRIVE, again.base)])
    assert report.failed == ["task broken: its files cannot be read from its JSON: KeyError('url')"]
    assert report.fetched == 1


def test_a_cache_made_from_other_urls_is_found_by_name_and_checksum(
    tmp_path: Path, fetched: tuple[Path, dict[str, bytes]]
) -> None:
    cache, served = fetched
    # A checkout whose task JSONs name the files on another host (as OSWorld moved them to Hugging Face).
    moved = load_task_set(task_folder(tmp_path / "hub", TRASH, PHOTOS, url_base=HUB)).tasks
    trash, photos = (next(t for t in moved if t["id"] == key) for key in (TRASH, PHOTOS))
    here = host()
    without, with_cache = here, replace(here, cache=cache)
    assert "needs the network (a download step" in (skip_reason(trash, without) or "")
    for task in (trash, photos):  # listed runnable: its files are found by task and name in the manifest
        assert "download step" not in (skip_reason(task, with_cache) or ""), skip_reason(task, with_cache)
        if here.user is not None:
            assert skip_reason(task, with_cache) is None
    [poster] = [f for f in task_files(trash)]
    found = download_copy(cache, TRASH, poster.url, f"/home/user/Desktop/{POSTER}")
    assert found is not None and found.read_bytes() in served.values()
    # A file changed in place (same size): listing still counts it, using it is refused by its sha256.
    found.write_bytes(bytes(found.stat().st_size))
    with pytest.raises(CacheError, match=r"has sha256 .*, its manifest says .*: fetch the cache again"):
        download_copy(cache, TRASH, poster.url, f"/home/user/Desktop/{POSTER}")
    # A truncated file: the listing says so rather than counting the task runnable.
    found.write_bytes(b"short")
    assert f"its cached file {POSTER} is damaged: " in (skip_reason(trash, with_cache) or "")
    # OSWorld's harness's own cache has no manifest: its one <uuid5(url)>_<name> file of the task is found.
    (cache / MANIFEST_FILE).unlink()
    found.write_bytes(b"the poster")
    assert download_copy(cache, TRASH, poster.url, f"/home/user/Desktop/{POSTER}") == found
    assert "download step" not in (skip_reason(trash, with_cache) or "")
    # A task whose files the cache does not hold still needs the network.
    other = json.loads((TASKS / "os" / "0b35aee5-6f2a-4c71-b2da-aed0105fdbde.json").read_text())
    assert "needs the network (a download step" in (skip_reason({**other, "_domain": "os"}, with_cache) or "")


def test_the_listing_is_what_test_all_names_and_says_what_else_was_found(tmp_path: Path) -> None:
    examples = task_folder(tmp_path, TRASH, PHOTOS)
    extra = json.loads((TASKS / "os" / f"{TRASH}.json").read_text())
    (examples / "os" / "kept-out.json").write_text(json.dumps({**extra, "id": "kept-out"}))
    (examples / "os" / f"{TRASH}-win.json").write_text(json.dumps(extra))
    (examples / "Windows" / "excel").mkdir(parents=True)
    (examples / "Windows" / "excel" / "w1.json").write_text(json.dumps({**extra, "id": "w1"}))
    (examples / "template.json").write_text(json.dumps({**extra, "id": ""}))
    (tmp_path / "test_all.json").write_text(json.dumps({"os": [TRASH, PHOTOS, "not-in-this-copy"]}))
    listed = subprocess.run(
        [*serve_command(), "bench", "list", "osworld", "--all", "--option", f"tasks_dir={examples}"],
        capture_output=True,
        text=True,
        env=base_env(),
        timeout=120,
    )
    assert listed.returncode == 0, listed.stderr
    lines = listed.stdout.splitlines()
    assert [line.split()[0] for line in lines if not line.startswith("#")] == [f"os/{PHOTOS}", f"os/{TRASH}"]
    assert sorted(line for line in lines if line.startswith("#"))[1:] == sorted(
        [
            "# 2 tasks listed: the tasks test_all.json names",
            "# not listed: 1 Windows tasks (OSWorld's Windows set, not in test_all.json)",
            "# not listed: 1 os tasks that test_all.json does not name (not in OSWorld's test set)",
            "# not listed: 1 template (template.json: no id)",
            "# not listed: 1 Windows variants of Linux tasks (<id>-win.json, same id: OSWorld's Windows set)",
            "# not listed: 1 tasks test_all.json names that have no JSON in " + str(examples),
        ]
    )
    # The summary's scope counts what the task list names: "N of 2", the Windows and kept-out tasks not among them.
    plan = make_plan(OSWorldAdapter(examples), TaskFilter(everything=True), tmp_path / "results", force=True)
    listed_count = len(plan.pending) + len(plan.skipped)
    assert listed_count == 2
    assert scope_of(plan.title, len(plan.pending), listed_count, plan.infeasible).startswith(
        f"OSWorld local: {len(plan.pending)} of 2 tasks"
    )


@pytest.fixture(scope="module")
def task_user() -> Iterator[str]:
    with task_account() as name:
        yield name


async def test_a_task_runs_from_the_fetched_cache_of_other_urls(
    task_user: str, xdisplay: Any, tmp_path: Path, fetched: tuple[Path, dict[str, bytes]]
) -> None:
    """The poster task, its JSON naming Hugging Face where the cache was fetched from Google Drive: listed
    runnable, its setup puts the fetched poster on the Desktop and trashes it, doing nothing scores 0 and
    restoring it scores 1 by OSWorld's exact_match."""
    cache, served = fetched
    adapter = OSWorldAdapter(task_folder(tmp_path / "hub", TRASH, url_base=HUB), cache=cache)
    [task] = adapter.list_tasks(TaskFilter(everything=True))
    assert task.skip_reason is None
    environment = Environment("env-0", xdisplay.name, tmp_path / "env-0", SpawnServer())
    record = RunRecord(task_id=TRASH, instruction="x", started_at=0.0, max_steps=1, outcome="success")
    outcome = TaskOutcome(TRASH, "success", False, tmp_path, record, [])
    try:
        await adapter.reset(environment, task)
        sandbox = adapter._sandboxes["env-0"]
        trashed = sandbox.read_file(f"/home/user/.local/share/Trash/files/{POSTER}")
        assert trashed is not None and trashed in served.values()
        assert (await adapter.evaluate(environment, task, outcome)).value == 0.0
        restore = ["mv", f"/home/user/.local/share/Trash/files/{POSTER}", "/home/user/Desktop/"]
        done = subprocess.run(sandbox.command(restore), env=sandbox.env(), capture_output=True, text=True)
        assert done.returncode == 0, done.stderr
        score = await adapter.evaluate(environment, task, outcome)
        assert score.value == 1.0, score.detail
    finally:
        await adapter.close()
