"""Runs code blocks on this machine, confined (confine.py), with a wall timeout that kills the whole run."""

from __future__ import annotations

import asyncio
import contextlib
import logging
import os
import signal
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from symphony_mcp.code import confine
from symphony_mcp.code.cgroups import RunGroup, remove_orphans
from symphony_mcp.code.disk import DiskWatch
from symphony_mcp.code.folders import MissingDirectoryError, OpenDirectory, normalised, open_directory
from symphony_mcp.code.output import CappedOutput
from symphony_mcp.code.types import CodeRun, Confinement, KillReason, Language
from symphony_mcp.config import CodeSettings
from symphony_mcp.errors import InvalidInputError, PolicyError

log = logging.getLogger(__name__)
# run_code's default work directory, inside the trajectory folder (task ids start with a letter or digit, so it
# names no task): what code writes stays with what the server writes, and stays out of the code's sight otherwise.
CODE_WORKDIR = "_code"
MB = 1024 * 1024
# Exit statuses a shell or bubblewrap reports for a child killed by a signal (128 + n), and the raw signal.
_SIGNAL_REASONS: dict[int, KillReason] = {signal.SIGXCPU: "cpu", signal.SIGXFSZ: "file_size"}
_MEMORY_MARKS = ("MemoryError", "Cannot allocate memory", "cannot allocate memory", "std::bad_alloc")


class LocalExecutor:
    """The `CodeExecutor` of the machine the server runs on; `default_workdir` serves calls that name none."""

    def __init__(self, settings: CodeSettings, default_workdir: Path) -> None:
        self.settings = settings
        # Resolved once: a link found later on the way to one of these was planted after the server started.
        self.default_workdir = (settings.workdir or default_workdir).expanduser().resolve()
        self.roots = [self.default_workdir, *(path.expanduser().resolve() for path in settings.writable_paths)]
        for group in remove_orphans():
            log.info("removed the cgroup %s of a code run whose server is gone", group)

    def check_language(self, language: str) -> Language:
        if language not in self.settings.languages:
            enabled = ", ".join(self.settings.languages) or "none"
            raise PolicyError(
                f"language {language!r} is not enabled (enabled: {enabled}); the setting SYMPHONY_CODE__LANGUAGES "
                "lists the languages the code tools run"
            )
        return language

    def locate_workdir(self, workdir: Path | None) -> tuple[Path, Path]:
        """The run's working directory (the default one, or one inside it or inside a writable path, `..` taken
        lexically) and the root it is in. Only the text is looked at here: `open_directory` refuses links."""
        if workdir is None:
            return self.default_workdir, self.default_workdir
        _check_text("workdir", str(workdir), nul_allowed=False)
        path = normalised(self.default_workdir / workdir.expanduser())
        inside = [root for root in self.roots if path.is_relative_to(root)]
        if not inside:
            raise InvalidInputError(
                f"workdir {str(path)[:200]!r} is outside the directories code may write: the default work "
                f"directory {str(self.default_workdir)!r} and SYMPHONY_CODE__WRITABLE_PATHS "
                f"({', '.join(map(str, self.settings.writable_paths)) or 'none'}); give a path inside one of them"
            )
        return path, max(inside, key=lambda root: len(root.parts))

    def open_workdir(self, workdir: Path | None) -> OpenDirectory:
        """The run's working directory, made if missing and held by a descriptor: a link the code planted on the
        way (also one swapped in while this runs) is refused, never followed."""
        path, root = self.locate_workdir(workdir)
        return open_directory(path, root, create=True)

    def _open_writable(self, stack: contextlib.ExitStack) -> list[OpenDirectory]:
        """The writable paths that exist, each held by a descriptor (bound by it, so a link cannot redirect it)."""
        found = []
        for root in self.roots[1:]:
            try:
                opened = open_directory(root, root)
            except MissingDirectoryError:
                continue  # an absent writable path is not bound (and cannot be written)
            stack.callback(opened.close)
            found.append(opened)
        return found

    async def run(self, language: Language, code: str, timeout_s: float, workdir: Path | None = None) -> CodeRun:
        language = self.check_language(language)
        _check_text("code", code, nul_allowed=True)
        if not 0 < timeout_s <= self.settings.max_timeout_seconds:
            raise InvalidInputError(
                f"timeout_s must be in (0, {self.settings.max_timeout_seconds:g}] seconds "
                f"(SYMPHONY_CODE__MAX_TIMEOUT_SECONDS), got {timeout_s:g}"
            )
        confinement = await asyncio.to_thread(confine.choose, self.settings)
        with contextlib.ExitStack() as stack:
            directory = await asyncio.to_thread(self.open_workdir, workdir)
            stack.callback(directory.close)
            writable = await asyncio.to_thread(self._open_writable, stack)
            block = stack.enter_context(_in_memory(code))
            plan = confine.plan(self.settings, confinement, language, block, directory, writable)
            disk = await asyncio.to_thread(self._watch_disk, stack, writable)
            return await self._run(language, confinement, plan, directory, disk, timeout_s)

    def _watch_disk(self, stack: contextlib.ExitStack, writable: list[OpenDirectory]) -> DiskWatch:
        """The run's disk watch (disk.py): SYMPHONY_CODE__DISK_MB for the default work directory and per run for
        the writable paths."""
        root = open_directory(self.default_workdir, self.default_workdir, create=True)
        stack.callback(root.close)
        return DiskWatch(root, writable, self.settings.disk_mb * MB)

    async def _run(
        self,
        language: Language,
        confinement: Confinement,
        plan: confine.Plan,
        workdir: OpenDirectory,
        disk: DiskWatch,
        timeout_s: float,
    ) -> CodeRun:
        group = RunGroup(self.settings.processes, self.settings.run_memory_mb * MB)

        def enter() -> None:
            """In the child before exec: into the run's cgroups, and into the work directory by its descriptor."""
            os.fchdir(workdir.fd)
            group.enter()

        started = time.monotonic()
        try:
            process = await asyncio.create_subprocess_exec(
                *plan.argv,
                stdin=asyncio.subprocess.DEVNULL,
                stdout=asyncio.subprocess.PIPE,
                stderr=asyncio.subprocess.PIPE,
                env=plan.env,
                pass_fds=plan.fds,
                start_new_session=True,
                preexec_fn=enter,
            )
            stdout, stderr = CappedOutput(self.settings.output_bytes), CappedOutput(self.settings.output_bytes)
            assert process.stdout is not None and process.stderr is not None
            reading = asyncio.ensure_future(
                asyncio.gather(stdout.drain(process.stdout), stderr.drain(process.stderr), process.wait())
            )
            full = asyncio.ensure_future(disk.over())
            stopped: KillReason | None = None
            try:
                either: set[asyncio.Future[Any]] = {reading, full}
                done, _ = await asyncio.wait(either, timeout=timeout_s, return_when=asyncio.FIRST_COMPLETED)
                if reading not in done:
                    stopped = "disk" if full in done else "timeout"
                    _kill(process.pid)
                    await asyncio.to_thread(group.close)
                    with contextlib.suppress(TimeoutError):
                        await asyncio.wait_for(reading, 5)  # pipes close once every process holding them is gone
            except asyncio.CancelledError:
                _kill(process.pid)
                reading.cancel()
                raise
            finally:
                full.cancel()
            limit_hit = group.reason()
        finally:
            if group.available:
                await asyncio.to_thread(group.close)
        exit_code = process.returncode
        reason = _kill_reason(exit_code, stopped, limit_hit, stderr)
        return CodeRun(
            language=language,
            exit_code=exit_code,
            stdout=stdout.text(),
            stderr=stderr.text(),
            duration_seconds=round(time.monotonic() - started, 4),
            stdout_truncated=stdout.truncated,
            stderr_truncated=stderr.truncated,
            killed=reason is not None,
            kill_reason=reason,
            confinement=confinement,
            workdir=str(workdir.path),
        )


@contextlib.contextmanager
def _in_memory(code: str) -> Iterator[int]:
    """The code in a memfd, read from its start: nothing on disk for a killed server to leave behind."""
    fd = os.memfd_create("symphony-code-block", os.MFD_CLOEXEC)
    try:
        data = memoryview(code.encode("utf-8"))
        while data:
            data = data[os.write(fd, data) :]
        os.lseek(fd, 0, os.SEEK_SET)
        yield fd
    finally:
        os.close(fd)


def _check_text(name: str, text: str, nul_allowed: bool) -> None:
    """Text that cannot become a file's bytes or a path (a lone surrogate, a NUL byte in a path) is the caller's
    mistake, said as such, not an internal error from deep in the OS layer."""
    try:
        text.encode("utf-8")
    except UnicodeEncodeError as exc:
        raise InvalidInputError(
            f"{name} is not valid Unicode text: a lone surrogate at character {exc.start}; send text as UTF-8"
        ) from exc
    if not nul_allowed and "\0" in text:
        raise InvalidInputError(f"{name} holds a NUL character at position {text.index(chr(0))}; paths cannot")


def _kill(pid: int) -> None:
    """Kill the run's process group (with bubblewrap or unshare, its PID namespace dies with it)."""
    with contextlib.suppress(ProcessLookupError, PermissionError):
        os.killpg(pid, signal.SIGKILL)


def _kill_reason(
    exit_code: int | None, stopped: KillReason | None, limit_hit: KillReason | None, stderr: CappedOutput
) -> KillReason | None:
    """Why the run ended early: stopped here (timeout, disk), a cgroup limit, a signal or the error it printed."""
    if stopped is not None:
        return stopped
    if limit_hit is not None:
        return limit_hit
    if exit_code is None or exit_code == 0:
        return None
    signum = -exit_code if exit_code < 0 else exit_code - 128 if exit_code > 128 else None
    if signum in _SIGNAL_REASONS:
        return _SIGNAL_REASONS[signum]
    tail = bytes(stderr.kept[-2000:]).decode("utf-8", errors="replace")
    if any(mark in tail for mark in _MEMORY_MARKS):
        return "memory"
    if "File too large" in tail:  # Python ignores SIGXFSZ: the write fails with EFBIG instead
        return "file_size"
    if "Resource temporarily unavailable" in tail and "fork" in tail:
        return "processes"
    return None
