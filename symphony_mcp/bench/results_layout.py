"""The results layout of a benchmark run (OSWorld's): `<results>/<benchmark>/<domain>/<task_id>/`.

Each task folder holds what `run_task` leaves (run.json, traj.jsonl, step PNGs), then the benchmark's
score as text (SCORE_FILE) and the runner's TaskEvaluation (EVALUATION_FILE), both replaced atomically,
the evaluation last: a folder with it is finished, one without it is run again on resume.
"""

from __future__ import annotations

import os
from pathlib import Path

from pydantic import ValidationError

from symphony_mcp.bench.types import EVALUATION_FILE, SCORE_FILE, BenchTask, TaskEvaluation


def benchmark_dir(results: Path, benchmark: str) -> Path:
    return results / benchmark


def domain_dir(results: Path, task: BenchTask) -> Path:
    return benchmark_dir(results, task.benchmark) / task.domain


def task_dir(results: Path, task: BenchTask) -> Path:
    return domain_dir(results, task) / task.task_id


def read_evaluation(directory: Path) -> TaskEvaluation | None:
    """The task's evaluation when it finished (an unreadable one counts as unfinished: it runs again)."""
    try:
        return TaskEvaluation.model_validate_json((directory / EVALUATION_FILE).read_bytes())
    except (OSError, ValidationError):
        return None


def write_evaluation(directory: Path, evaluation: TaskEvaluation) -> None:
    """The score as text, then the evaluation: each written to a temporary file and renamed over."""
    directory.mkdir(parents=True, exist_ok=True)
    _replace(directory / SCORE_FILE, f"{evaluation.score}\n")
    _replace(directory / EVALUATION_FILE, evaluation.model_dump_json(indent=1))


def _replace(path: Path, text: str) -> None:
    tmp = path.with_name(f".{path.name}.tmp")
    with tmp.open("w", encoding="utf-8") as out:
        out.write(text)
        out.flush()
        os.fsync(out.fileno())
    os.replace(tmp, path)
