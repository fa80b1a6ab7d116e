"""A task's trajectory on disk, written as it happens: `traj.jsonl` (one line per step) and `step_N.png`.

The layout follows OSWorld's result directories. One writer thread does every write of a task in
order, off the action's path: a step's screenshot is PNG-encoded and renamed into place, then its
line is appended and flushed. So every line on disk has its whole screenshot, and a killed process
loses at most the step in flight. An annotation of the latest step rewrites only that line.
"""

from __future__ import annotations

import json
import logging
import os
import threading
from collections.abc import Callable
from concurrent.futures import Future, ThreadPoolExecutor
from pathlib import Path
from typing import Any

from PIL import Image
from pydantic import BaseModel, Field, ValidationError

from symphony_mcp.desktop.records import ActionRecord
from symphony_mcp.memory.judgements import Reflection, StepVerdict
from symphony_mcp.memory.layout import TRAJECTORY_FILE

log = logging.getLogger(__name__)
MAX_QUEUED_WRITES = 8  # ~50 MB of 1080p frames; past this, recording waits for the writer


class TrajectoryStep(BaseModel):
    step_num: int = Field(description="1-based; step 0 is the observation before the first action")
    action_timestamp: str = Field(description="when the action started, %Y%m%d@%H%M%S (OSWorld's format)")
    action: str
    summary: str
    record: ActionRecord
    screenshot_file: str | None = Field(None, description="the screen after the action, relative to the task")
    thought: str | None = None
    plan: str | None = None
    tool_output: str | None = None
    record_ms: float = Field(0.0, description="time spent recording the step (capture, loop print, write)")
    verdict: StepVerdict | None = None
    reflection: Reflection | None = None
    milestone: bool = False
    loop: bool = Field(False, description="a loop was detected at this step")


class TrajectoryWriter:
    """Writes one task directory; the only writer of that directory."""

    def __init__(self, directory: Path) -> None:
        self.directory = directory
        directory.mkdir(parents=True, exist_ok=True)
        self._path = directory / TRAJECTORY_FILE
        self._file = self._path.open("ab")
        self._offsets: list[int] = []  # where each step's line starts
        self._thread = ThreadPoolExecutor(max_workers=1, thread_name_prefix="trajectory-writer")
        self._pending: list[Future[None]] = []
        self._lock = threading.Lock()

    def save_image(self, name: str, image: Image.Image) -> None:
        self._submit(lambda: _write_png(self.directory / name, image))

    def append(self, step: TrajectoryStep, image: Image.Image | None) -> None:
        """Queue the step's screenshot (if any), then its line."""

        def write() -> None:
            if image is not None and step.screenshot_file:
                _write_png(self.directory / step.screenshot_file, image)
            self._file.seek(0, os.SEEK_END)
            self._offsets.append(self._file.tell())
            self._file.write(_line(step))
            self._file.flush()

        self._submit(write)

    def update(self, step: TrajectoryStep, steps: list[TrajectoryStep]) -> None:
        """Queue a rewrite of one step's line: in place when it is the last one, else the whole file atomically."""
        snapshot = list(steps)
        self._submit(lambda: self._rewrite(step, snapshot))

    @property
    def backlog(self) -> int:
        with self._lock:
            return sum(not f.done() for f in self._pending)

    def wait_for_room(self) -> None:
        """Block until fewer than MAX_QUEUED_WRITES writes are queued (steps faster than PNG encoding)."""
        while True:
            with self._lock:
                pending = [f for f in self._pending if not f.done()]
            if len(pending) < MAX_QUEUED_WRITES:
                return
            pending[0].exception()  # waits for the oldest

    def flush(self) -> None:
        """Wait until everything queued is on disk; raise the first write error."""
        with self._lock:
            pending, self._pending = self._pending, []
        for future in pending:
            future.result()

    def close(self) -> None:
        try:
            self.flush()
        finally:
            self._thread.shutdown(wait=True)
            self._file.close()

    def _submit(self, job: Callable[[], None]) -> None:
        future = self._thread.submit(job)
        future.add_done_callback(_log_failure)
        with self._lock:
            self._pending = [f for f in self._pending if not f.done()] + [future]

    def _rewrite(self, step: TrajectoryStep, steps: list[TrajectoryStep]) -> None:
        # Jobs run in order, so the step's own append has run and `steps` holds exactly the written steps.
        index = step.step_num - 1
        if index == len(self._offsets) - 1:
            self._file.truncate(self._offsets[index])
            self._file.seek(0, os.SEEK_END)
            self._file.write(_line(step))
            self._file.flush()
            return
        tmp = self._path.with_suffix(".jsonl.tmp")
        offsets = []
        with tmp.open("wb") as out:
            for each in steps:
                offsets.append(out.tell())
                out.write(_line(each))
        self._file.close()
        os.replace(tmp, self._path)
        self._file = self._path.open("ab")
        self._offsets = offsets


def read_trajectory(directory: Path) -> list[TrajectoryStep]:
    """The steps on disk; a torn last line (the step in flight at a crash) is ignored."""
    path = directory / TRAJECTORY_FILE
    if not path.exists():
        return []
    steps: list[TrajectoryStep] = []
    lines = path.read_bytes().splitlines()
    for number, line in enumerate(lines, 1):
        if not line.strip():
            continue
        try:
            steps.append(TrajectoryStep.model_validate_json(line))
        except ValidationError:
            if number == len(lines):
                log.warning("%s: ignoring the incomplete last line (a step in flight)", path)
                break
            raise
    return steps


def write_json_atomically(path: Path, data: Any) -> None:
    tmp = path.with_suffix(path.suffix + ".tmp")
    tmp.write_text(json.dumps(data, indent=2, ensure_ascii=False), encoding="utf-8")
    os.replace(tmp, path)


def _log_failure(future: Future[None]) -> None:
    if future.exception() is not None:
        log.error("writing the trajectory failed: %s", future.exception())


def _line(step: TrajectoryStep) -> bytes:
    return step.model_dump_json().encode("utf-8") + b"\n"


def _write_png(path: Path, image: Image.Image) -> None:
    tmp = path.with_suffix(".png.tmp")
    image.save(tmp, "PNG", compress_level=1)
    os.replace(tmp, path)
