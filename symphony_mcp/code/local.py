"""Runs code blocks on this machine, confined (confine.py), with a wall timeout that kills the whole run."""

from __future__ import annotations

import asyncio
import contextlib
import os
import signal
import tempfile
import time
from pathlib import Path

from symphony_mcp.code import confine
from symphony_mcp.code.output import CappedOutput
from symphony_mcp.code.pids import PidsGroup
from symphony_mcp.code.types import CodeRun, Confinement, KillReason, Language
from symphony_mcp.config import CodeSettings
from symphony_mcp.errors import InvalidInputError, PolicyError

# run_code's default work directory, inside the trajectory folder (task ids start with a letter or digit, so it
# names no task): what code writes stays with what the server writes, and stays out of the code's sight otherwise.
CODE_WORKDIR = "_code"
_SUFFIX = {"python": ".py", "bash": ".sh"}
# Exit statuses a shell or bubblewrap reports for a child killed by a signal (128 + n), and the raw signal.
_SIGNAL_REASONS: dict[int, KillReason] = {signal.SIGXCPU: "cpu", signal.SIGXFSZ: "file_size"}
_MEMORY_MARKS = ("MemoryError", "Cannot allocate memory", "cannot allocate memory", "std::bad_alloc")


class LocalExecutor:
    """The `CodeExecutor` of the machine the server runs on; `default_workdir` serves calls that name none."""

    def __init__(self, settings: CodeSettings, default_workdir: Path) -> None:
        self.settings = settings
        self.default_workdir = (settings.workdir or default_workdir).expanduser()

    def check_language(self, language: str) -> Language:
        if language not in self.settings.languages:
            enabled = ", ".join(self.settings.languages) or "none"
            raise PolicyError(
                f"language {language!r} is not enabled (enabled: {enabled}); the setting SYMPHONY_CODE__LANGUAGES "
                "lists the languages the code tools run"
            )
        return language

    def resolve_workdir(self, workdir: Path | None) -> Path:
        """The run's working directory: the default one, or one inside it or inside a writable path.

        Symbolic links are resolved before the check: a link a block made (`ln -s / escape`) must not bring the
        directory it points to into a later run as writable.
        """
        path = self.default_workdir.resolve()
        if workdir is not None:
            _check_text("workdir", str(workdir), nul_allowed=False)
            path = (path / workdir.expanduser()).resolve()
            allowed = [self.default_workdir, *self.settings.writable_paths]
            if not any(path.is_relative_to(root.resolve()) for root in allowed):
                raise InvalidInputError(
                    f"workdir {str(path)[:200]!r} is outside the directories code may write: the default work "
                    f"directory {str(self.default_workdir)!r} and SYMPHONY_CODE__WRITABLE_PATHS "
                    f"({', '.join(map(str, self.settings.writable_paths)) or 'none'}); give a path inside one of them"
                )
        path.mkdir(parents=True, exist_ok=True)
        return path

    async def run(self, language: Language, code: str, timeout_s: float, workdir: Path | None = None) -> CodeRun:
        language = self.check_language(language)
        _check_text("code", code, nul_allowed=True)
        if not 0 < timeout_s <= self.settings.max_timeout_seconds:
            raise InvalidInputError(
                f"timeout_s must be in (0, {self.settings.max_timeout_seconds:g}] seconds "
                f"(SYMPHONY_CODE__MAX_TIMEOUT_SECONDS), got {timeout_s:g}"
            )
        confinement = await asyncio.to_thread(confine.choose, self.settings)
        directory = self.resolve_workdir(workdir)
        with tempfile.TemporaryDirectory(prefix="symphony-code-") as scratch:
            block = Path(scratch) / f"block{_SUFFIX[language]}"
            block.write_text(code, encoding="utf-8")
            return await self._run(
                language,
                confinement,
                confine.plan(self.settings, confinement, language, block, directory),
                directory,
                timeout_s,
            )

    async def _run(
        self, language: Language, confinement: Confinement, plan: confine.Plan, workdir: Path, timeout_s: float
    ) -> CodeRun:
        pids = PidsGroup(self.settings.processes)
        started = time.monotonic()
        try:
            process = await asyncio.create_subprocess_exec(
                *plan.argv,
                stdin=asyncio.subprocess.DEVNULL,
                stdout=asyncio.subprocess.PIPE,
                stderr=asyncio.subprocess.PIPE,
                env=plan.env,
                cwd=workdir,
                start_new_session=True,
                preexec_fn=pids.enter if pids.available else None,
            )
            stdout, stderr = CappedOutput(self.settings.output_bytes), CappedOutput(self.settings.output_bytes)
            assert process.stdout is not None and process.stderr is not None
            reading = asyncio.gather(stdout.drain(process.stdout), stderr.drain(process.stderr), process.wait())
            timed_out = False
            try:
                await asyncio.wait_for(asyncio.shield(reading), timeout_s)
            except TimeoutError:
                timed_out = True
                _kill(process.pid)
                await asyncio.to_thread(pids.close)
                with contextlib.suppress(TimeoutError):
                    await asyncio.wait_for(reading, 5)  # pipes close once every process holding them is gone
            except asyncio.CancelledError:
                _kill(process.pid)
                reading.cancel()
                raise
            pids_full = pids.hit_limit()
        finally:
            if pids.available:
                await asyncio.to_thread(pids.close)
        exit_code = process.returncode
        reason = _kill_reason(exit_code, timed_out, pids_full, stderr)
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
            workdir=str(workdir),
        )


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


def _kill_reason(exit_code: int | None, timed_out: bool, pids_full: bool, stderr: CappedOutput) -> KillReason | None:
    if timed_out:
        return "timeout"
    if pids_full:
        return "processes"
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
