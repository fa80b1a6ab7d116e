"""A task's trajectory on disk, written as it happens: `traj.jsonl` (one line per step) and `step_N.png`.

The layout follows OSWorld's result directories. A step's line is appended and flushed to the OS on
the recording call, before the action's answer leaves: a killed server (even `kill -9`, which keeps
the page cache) loses at most the step in flight. Lines are not fsync'ed per step: that guards only
against an OS crash or power loss and costs 0.2-1 ms a step here (more on slow disks); the file is
fsync'ed once when the task ends. Screenshots follow on one writer thread (PNG encoding takes
~40 ms), written to a temporary name and renamed, so a screenshot on disk is whole, but a line can
name a screenshot that is not there yet, or never will be if the server died first: readers treat
a missing screenshot as missing, not as an error, and the next server to find the task
(`settle_after_crash`) removes the half-written files and marks such steps' screenshots as lost.
An annotation of the latest step rewrites only that line; of an older step, the whole file atomically.
"""

from __future__ import annotations

import json
import logging
import os
import tempfile
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
    screenshot_lost: bool = Field(
        False, description="the server recording the step stopped (killed, crashed) before writing its screenshot"
    )
    thought: str | None = None
    plan: str | None = None
    tool_output: str | None = None
    record_ms: float = Field(0.0, description="time spent recording the step (capture, loop print, write)")
    verdict: StepVerdict | None = None
    reflection: Reflection | None = None
    milestone: bool = False
    loop: bool = Field(False, description="a loop was detected at this step")

    @property
    def intent(self) -> str | None:
        """What the step meant to achieve, for the memoryer: the plan (record_step's intent) before the thought,
        which holds all the reasoning (a planner's analysis sections with their headers)."""
        return self.plan or self.thought


class TrajectoryWriter:
    """Writes one task directory; the only writer of that directory.

    Lines are written on the caller's thread under a lock, straight to the file descriptor (one
    `pwrite`: microseconds, nothing buffered in the process); screenshots go to the writer thread.
    """

    def __init__(self, directory: Path) -> None:
        self.directory = directory
        directory.mkdir(parents=True, exist_ok=True)
        self._path = directory / TRAJECTORY_FILE
        self._fd: int | None = _open_lines(self._path)
        self._end = os.lseek(self._fd, 0, os.SEEK_END)
        self._offsets: list[int] = []  # where each step's line starts
        self._lines = threading.Lock()
        self._thread = ThreadPoolExecutor(max_workers=1, thread_name_prefix="trajectory-writer")
        self._pending: list[Future[None]] = []
        self._lock = threading.Lock()

    def save_image(self, name: str, image: Image.Image) -> None:
        self._submit(lambda: _write_png(self.directory / name, image))

    def append(self, step: TrajectoryStep, image: Image.Image | None) -> None:
        """Write the step's line now (it is with the OS when this returns); queue its screenshot, if any."""
        line = _line(step)
        with self._lines:
            _write_at(self._open_fd(), line, self._end)
            self._offsets.append(self._end)
            self._end += len(line)
        if image is not None and step.screenshot_file:
            self.save_image(step.screenshot_file, image)

    def update(self, step: TrajectoryStep, steps: list[TrajectoryStep]) -> None:
        """Rewrite one step's line now: in place when it is the last one, else the whole file atomically.

        In place, the new line is written over the old one before the file is cut to its end, so a
        kill in between leaves the new line whole, followed at worst by the old line's tail, which
        reads as a torn last line.
        """
        index = step.step_num - 1
        with self._lines:
            fd = self._open_fd()
            if index == len(self._offsets) - 1:
                line = _line(step)
                _write_at(fd, line, self._offsets[index])
                self._end = self._offsets[index] + len(line)
                os.ftruncate(fd, self._end)
                return
            tmp = self._path.with_suffix(".jsonl.tmp")
            offsets = []
            with tmp.open("wb") as out:
                for each in steps:
                    offsets.append(out.tell())
                    out.write(_line(each))
                end = out.tell()
            os.replace(tmp, self._path)
            os.close(fd)
            self._fd = _open_lines(self._path)
            self._offsets, self._end = offsets, end

    @property
    def backlog(self) -> int:
        with self._lock:
            return sum(not f.done() for f in self._pending)

    def wait_for_room(self) -> None:
        """Block until fewer than MAX_QUEUED_WRITES screenshots are queued (steps faster than PNG encoding)."""
        while True:
            with self._lock:
                pending = [f for f in self._pending if not f.done()]
            if len(pending) < MAX_QUEUED_WRITES:
                return
            pending[0].exception()  # waits for the oldest

    def flush(self) -> None:
        """Wait until every queued screenshot is on disk; raise the first write error."""
        with self._lock:
            pending, self._pending = self._pending, []
        for future in pending:
            future.result()

    def close(self) -> None:
        """Write the queued screenshots, then fsync the lines: a finished task survives a power loss too."""
        try:
            self.flush()
        finally:
            self._thread.shutdown(wait=True)
            with self._lines:
                fd, self._fd = self._fd, None
                if fd is not None:
                    try:
                        os.fsync(fd)
                    finally:
                        os.close(fd)

    def _open_fd(self) -> int:
        # A step can still be recording when its task is closed (shutdown); its fd number may be reused by then.
        if self._fd is None:
            raise RuntimeError(f"the trajectory in {self.directory} is closed")
        return self._fd

    def _submit(self, job: Callable[[], None]) -> None:
        future = self._thread.submit(job)
        future.add_done_callback(_log_failure)
        with self._lock:
            self._pending = [f for f in self._pending if not f.done()] + [future]


def read_trajectory(directory: Path) -> list[TrajectoryStep]:
    """The steps on disk; a torn last line (the step in flight at a crash) is ignored.

    A step's `screenshot_file` may be missing on disk: it is written after the line.
    """
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


def settle_after_crash(directory: Path) -> list[int]:
    """Make a task whose server died mid-write honest on disk; returns the steps whose screenshot was lost.

    Removes the files it was writing (`*.tmp`: a screenshot before its rename, a rewrite of the lines or of
    task.json) and marks each step whose screenshot never reached the disk as lost (`screenshot_lost`, no
    `screenshot_file`), rewriting the lines atomically; a torn last line (the step in flight) is dropped.
    Only for a task no live server writes.
    """
    for leftover in directory.glob("*.tmp"):
        leftover.unlink(missing_ok=True)
    steps = read_trajectory(directory)
    lost = [s.step_num for s in steps if s.screenshot_file and not (directory / s.screenshot_file).exists()]
    if lost:
        marked = [
            s.model_copy(update={"screenshot_file": None, "screenshot_lost": True}) if s.step_num in lost else s
            for s in steps
        ]
        descriptor, temporary = tempfile.mkstemp(dir=directory, prefix=f"{TRAJECTORY_FILE}.", suffix=".tmp")
        try:
            with os.fdopen(descriptor, "wb") as out:
                out.writelines(_line(step) for step in marked)
            os.replace(temporary, directory / TRAJECTORY_FILE)
        except BaseException:
            Path(temporary).unlink(missing_ok=True)
            raise
    return lost


def write_json_atomically(path: Path, data: Any) -> None:
    tmp = path.with_suffix(path.suffix + ".tmp")
    tmp.write_text(json.dumps(data, indent=2, ensure_ascii=False), encoding="utf-8")
    os.replace(tmp, path)


def _log_failure(future: Future[None]) -> None:
    if future.exception() is not None:
        log.error("writing the trajectory failed: %s", future.exception())


def _line(step: TrajectoryStep) -> bytes:
    return step.model_dump_json().encode("utf-8") + b"\n"


def _open_lines(path: Path) -> int:
    # Not O_APPEND: Linux's pwrite ignores the offset on such files, and annotations write in place.
    return os.open(path, os.O_RDWR | os.O_CREAT | os.O_CLOEXEC, 0o644)


def _write_at(fd: int, data: bytes, offset: int) -> None:
    view = memoryview(data)
    while view:
        written = os.pwrite(fd, view, offset)
        view, offset = view[written:], offset + written


def _write_png(path: Path, image: Image.Image) -> None:
    tmp = path.with_suffix(".png.tmp")
    image.save(tmp, "PNG", compress_level=1)
    os.replace(tmp, path)
