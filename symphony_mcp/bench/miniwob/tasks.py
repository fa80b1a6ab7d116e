"""MiniWoB++'s task list: the HTML files of the `miniwob` package, one task id per task and seed.

Only the package's HTML tasks are used (installed with `pip install --no-deps miniwob`: its Python side would pull
gymnasium and selenium). A task id is `<task>.seed-<n>`, so a seed is part of what a result belongs to and a rerun
of the same id replays the same episode.
"""

from __future__ import annotations

import importlib.util
import re
from dataclasses import dataclass
from pathlib import Path

from symphony_mcp.bench.types import BenchTask, TaskFilter
from symphony_mcp.errors import InvalidInputError, SymphonyError

BENCHMARK = "miniwob"
INSTALL_HINT = "pip install --no-deps 'miniwob>=1.1,<2'"
# Tasks a screen-based agent can do with clicks and typing on what it sees, each checked to load and to be solved
# through the server's tools (one episode per task and seed).
DEFAULT_SUBSET = (
    "click-button",
    "click-link",
    "click-test",
    "click-test-2",
    "click-option",
    "click-checkboxes",
    "choose-list",
    "enter-text",
    "enter-password",
    "focus-text",
    "login-user",
    "navigate-tree",
)
_TASK_ID = re.compile(r"^(?P<name>[a-z0-9-]+)\.seed-(?P<seed>[0-9]{1,9})$")


class MiniWobMissingError(SymphonyError, RuntimeError):
    """The `miniwob` package (its HTML tasks) is not installed."""


def html_directory() -> Path:
    """The folder of MiniWoB++'s task pages inside the installed `miniwob` package."""
    # Found, not imported: miniwob/__init__ imports gymnasium, which a --no-deps install does not have (so
    # importlib.resources.files("miniwob"), which imports the package, fails where the data is present).
    spec = importlib.util.find_spec("miniwob")
    if spec is None or not spec.submodule_search_locations:
        raise MiniWobMissingError(f"MiniWoB++ is not installed: {INSTALL_HINT}")
    root = Path(next(iter(spec.submodule_search_locations)))
    folder = root / "html" / "miniwob"
    if not (folder / "click-button.html").is_file():
        raise MiniWobMissingError(f"the miniwob package at {root} has no HTML tasks in {folder}: {INSTALL_HINT}")
    return folder


def task_names(folder: Path) -> list[str]:
    """Every task of the package, sorted (its HTML file names without .html)."""
    return sorted(path.stem for path in folder.glob("*.html"))


def family(name: str) -> str:
    """A task's family, used as its domain: click-button -> click, email-inbox-forward -> email."""
    return name.split("-", 1)[0]


@dataclass(frozen=True)
class TaskRef:
    name: str
    seed: int

    @property
    def task_id(self) -> str:
        return f"{self.name}.seed-{self.seed}"


def parse_task_id(task_id: str) -> TaskRef:
    match = _TASK_ID.fullmatch(task_id)
    if match is None:
        raise InvalidInputError(
            f"{task_id!r} is not a MiniWoB++ task id: use <task>.seed-<n>, e.g. click-button.seed-0"
        )
    return TaskRef(match["name"], int(match["seed"]))


def select(folder: Path, selection: TaskFilter, seeds: tuple[int, ...]) -> list[BenchTask]:
    """The tasks a filter selects: ids as given (any seed), else the domains' or default subset's tasks x seeds."""
    known = task_names(folder)
    if selection.task_ids:
        refs = [parse_task_id(task_id) for task_id in selection.task_ids]
        unknown = sorted({ref.name for ref in refs} - set(known))
        if unknown:
            raise InvalidInputError(
                f"unknown MiniWoB++ tasks {unknown}; the package has {len(known)}, e.g. {known[:5]}"
            )
    else:
        names = known if selection.everything or selection.domains else list(DEFAULT_SUBSET)
        if selection.domains:
            names = [name for name in names if family(name) in selection.domains]
        refs = [TaskRef(name, seed) for name in names for seed in seeds]
    return [
        BenchTask(BENCHMARK, family(ref.name), ref.task_id, data={"task": ref.name, "seed": ref.seed}) for ref in refs
    ]
