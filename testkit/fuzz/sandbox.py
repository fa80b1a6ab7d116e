"""A throw-away tree to run the server under fuzz in, and the files it created outside its trajectory folder.

The server runs over stdio with HOME, its working directory, TMPDIR and the trajectory folder inside the tree,
on a virtual display of its own. open_app runs commands as the server's user (root here): the server's
allow-list (policy.open_app_allow) names two harmless programs, and PATH holds only those and what the server
needs to start its display, so neither alone stands between a random target and the machine. The server runs
with a group id nobody else uses, so every file it or its children create anywhere carries that group: a scan
finds them whatever else the machine writes meanwhile.
"""

from __future__ import annotations

import os
import random
import shutil
import sys
import tempfile
from collections.abc import Iterable, Iterator
from dataclasses import dataclass, field
from pathlib import Path

from mcp import StdioServerParameters

from symphony_mcp.code.local import CODE_WORKDIR
from symphony_mcp.search.docs_index import build_index

# Programs the server needs on PATH to start its own display (Xvfb, openbox) and to confine run_code's python
# (bwrap, prlimit: without them run_code refuses and fuzzed code never runs), and harmless ones open_app may
# start. No shell, no xterm (`xterm -e /abs/path` runs any program), no xdg-open (opens any file in any app).
SERVER_PROGRAMS = ("Xvfb", "openbox", "bwrap", "prlimit")
HARMLESS_PROGRAMS = ("xmessage", "true")
# Shared places a stray file would most likely land in, scanned in depth at the end of a run.
SHARED_AREAS = (Path("/tmp"), Path("/var/tmp"), Path("/dev/shm"), Path.home())
RESOLUTION = "1024x768"
_DOC_PAGES = (
    ("freeze", "Freezing rows or columns", "Choose View - Freeze Cells - Freeze First Row."),
    ("filter", "Applying AutoFilter", "Select the columns, then choose Data - AutoFilter."),
    ("numbers", "Page numbers", "Choose Insert - Field - Page Number in the footer."),
)


@dataclass
class Sandbox:
    root: Path
    gid: int = field(default_factory=lambda: random.randint(40_000, 59_999))
    baseline: frozenset[Path] = frozenset()
    # An OpenAI-compatible endpoint for the grounder and coder roles (testkit's stand-in model): with it, the tools
    # that take a description locate it and act, and code_agent runs its loop (its answers are never usable code,
    # so it ends after two turns) instead of failing for want of a model.
    model_url: str | None = None

    @property
    def home(self) -> Path:
        return self.root / "home"

    @property
    def cwd(self) -> Path:
        return self.root / "cwd"

    @property
    def tmp(self) -> Path:
        return self.root / "tmp"

    @property
    def trajectories(self) -> Path:
        return self.root / "trajectories"

    @property
    def bin(self) -> Path:
        return self.root / "bin"

    @property
    def docs_index(self) -> Path:
        return self.root / "docs.sqlite"

    def prepare(self) -> Sandbox:
        for directory in (self.home, self.cwd, self.tmp, self.trajectories, self.bin):
            directory.mkdir(parents=True, exist_ok=True)
        for program in (*SERVER_PROGRAMS, *HARMLESS_PROGRAMS):
            found = shutil.which(program)
            if found is None:
                raise RuntimeError(f"{program} is not installed; the fuzz sandbox needs it")
            (self.bin / program).symlink_to(found)
        self._index_docs()
        self._odd_workdirs()
        return self

    def _odd_workdirs(self) -> None:
        """What values.ODD_WORKDIRS names in the code work directory (where relative workdirs resolve): a file,
        a fifo and a symlink to the file, none of them a directory to run in."""
        work = self.trajectories / CODE_WORKDIR
        work.mkdir(parents=True, exist_ok=True)
        (work / "odd-file").write_text("not a directory\n")
        os.mkfifo(work / "odd-fifo")
        (work / "odd-link").symlink_to(work / "odd-file")

    def _index_docs(self) -> None:
        """A small offline docs index, so search_docs answers from real pages (engine=local, no network)."""
        docs = self.root / "docs"
        docs.mkdir(exist_ok=True)
        for name, title, body in _DOC_PAGES:
            (docs / f"{name}.html").write_text(
                f"<html><head><title>{title}</title></head><body><h1>{title}</h1><p>{body}</p></body></html>",
                encoding="utf-8",
            )
        build_index([docs], self.docs_index)

    def env(self) -> dict[str, str]:
        grounder = {}
        if self.model_url:
            grounder = {
                "SYMPHONY_MODELS__GROUNDER__BASE_URL": self.model_url,
                "SYMPHONY_MODELS__GROUNDER__MODEL": "fuzz-grounder",
                "SYMPHONY_MODELS__GROUNDER__MAX_RETRIES": "0",
                "SYMPHONY_GROUNDING__FAMILY": "pixels",
                "SYMPHONY_MODELS__CODER__BASE_URL": self.model_url,
                "SYMPHONY_MODELS__CODER__MODEL": "fuzz-coder",
                "SYMPHONY_MODELS__CODER__MAX_RETRIES": "0",
            }
        return {
            **grounder,
            "HOME": str(self.home),
            "TMPDIR": str(self.tmp),
            "PATH": str(self.bin),
            "LANG": "C.UTF-8",
            "PYTHONDONTWRITEBYTECODE": "1",  # the venv's caches are not the server's doing
            # The code under test: a checkout other than the venv's editable install is put first on the path.
            **{name: os.environ[name] for name in ("PYTHONPATH",) if name in os.environ},
            # Waits are bounded by the server's setting: a short one keeps the run's calls short, and not below
            # open_app's default wait for a window (4 s), which would fail every open_app that omits it.
            "SYMPHONY_INPUT__MAX_WAIT_SECONDS": "5",
            "SYMPHONY_POLICY__OPEN_APP_ALLOW": '["xmessage", "true"]',
            "SYMPHONY_OCR__WARM_UP": "false",
            # No pause after actions for apps to react: the invariants are checked on the X server, not in apps.
            "SYMPHONY_INPUT__SETTLE_SECONDS": "0",
            "SYMPHONY_SEARCH__ENGINE": "local",
            "SYMPHONY_SEARCH__DOCS_INDEX": str(self.docs_index),
        }

    def server_params(self, *args: str) -> StdioServerParameters:
        """`symphony-mcp serve` over stdio, as this tree's user: own group id, own display, own folders."""
        script = Path(sys.executable).parent / "symphony-mcp"
        serve = [str(script)] if script.exists() else [sys.executable, "-m", "symphony_mcp.cli"]
        setpriv = shutil.which("setpriv")
        if setpriv is None:
            raise RuntimeError("setpriv (util-linux) is needed to give the server its own group id")
        return StdioServerParameters(
            command=setpriv,
            args=[
                f"--regid={self.gid}",
                "--clear-groups",
                "--",
                *serve,
                "serve",
                "--virtual-display",
                "always",
                "--resolution",
                RESOLUTION,
                "--trajectory-dir",
                str(self.trajectories),
                *args,
            ],
            env=self.env(),
            cwd=self.cwd,
        )

    def owned(self, areas: Iterable[Path], deep: bool) -> set[Path]:
        """Files and directories carrying the server's group id in `areas` (their top level unless `deep`)."""
        found: set[Path] = set()
        for area in areas:
            for path in _walk(area) if deep else _top(area):
                try:
                    if path.lstat().st_gid == self.gid:
                        found.add(path)
                except OSError:
                    continue
        return found

    def mark_baseline(self) -> None:
        """What the server made while starting (its display's lock and socket, the window manager's files)."""
        self.baseline = frozenset(
            self.owned([self.root], deep=True) | self.owned([Path("/tmp"), Path("/tmp/.X11-unix")], deep=False)
        )

    def stray_files(self, deep: bool = False) -> list[Path]:
        """Files the server created since the baseline outside its trajectory folder: in its own tree always,
        in the shared areas at their top level, or in depth when `deep` (seconds on a busy machine)."""
        areas = [self.root, *(SHARED_AREAS if deep else (Path("/tmp"), Path("/tmp/.X11-unix")))]
        found = self.owned([self.root], deep=True) | self.owned(areas[1:], deep=deep)
        return sorted(p for p in found - self.baseline if not p.is_relative_to(self.trajectories))


def _top(area: Path) -> Iterator[Path]:
    try:
        yield from area.iterdir()
    except OSError:
        return


def _walk(area: Path) -> Iterator[Path]:
    for directory, dirs, files in os.walk(area, onerror=lambda _: None):
        base = Path(directory)
        yield base
        for name in (*dirs, *files):
            yield base / name


def make_sandbox(model_url: str | None = None) -> Sandbox:
    return Sandbox(Path(tempfile.mkdtemp(prefix="symphony-fuzz-")), model_url=model_url).prepare()
