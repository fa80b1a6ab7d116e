"""The audit log: one JSON line per tool call, so the person whose desktop it is can see what clients did.

Arguments are kept in a capped form (long texts cut, long lists shortened, the whole line bounded);
results are never written, so no screenshot, OCR text or file content reaches the log. The file is
private to the user (mode 0600) and rotates by size: `audit.jsonl`, then `.1`, `.2`, ... up to a count.
"""

from __future__ import annotations

import json
import logging
import os
import time
from datetime import UTC, datetime
from pathlib import Path
from typing import Any, Literal

from pydantic import BaseModel

log = logging.getLogger(__name__)

Outcome = Literal["ok", "error", "refused", "asked", "declined", "unconfirmed", "timeout"]
MAX_TEXT = 200  # characters kept of any one string
MAX_ITEMS = 20  # items kept of any one list or object
MAX_LINE = 4_000  # characters of the arguments as written


class AuditEntry(BaseModel):
    time: str
    session: str
    tool: str
    arguments: Any
    outcome: Outcome
    error: str | None = None
    duration_ms: float


def capped(value: Any, depth: int = 0) -> Any:
    """A JSON-able copy of `value` that says what it left out."""
    if isinstance(value, str):
        return value if len(value) <= MAX_TEXT else f"{value[:MAX_TEXT]}... ({len(value)} characters)"
    if isinstance(value, bool | int | float) or value is None:
        return value
    if depth >= 4:
        return f"({type(value).__name__} nested too deep)"
    if isinstance(value, dict):
        items = list(value.items())
        kept = {capped(str(k)): capped(v, depth + 1) for k, v in items[:MAX_ITEMS]}
        if len(items) > MAX_ITEMS:
            kept["..."] = f"{len(items) - MAX_ITEMS} more keys"
        return kept
    if isinstance(value, list | tuple):
        kept_list = [capped(v, depth + 1) for v in value[:MAX_ITEMS]]
        return kept_list + ([f"... {len(value) - MAX_ITEMS} more items"] if len(value) > MAX_ITEMS else [])
    return capped(repr(value), depth)


class AuditLog:
    """Appends entries to a size-capped set of files; a failure to write is logged, never raised to a caller."""

    def __init__(self, path: Path, max_bytes: int, files: int) -> None:
        self.path = path.expanduser()
        self.max_bytes = max_bytes
        self.files = files

    def write(
        self,
        *,
        session: str,
        tool: str,
        arguments: Any,
        outcome: Outcome,
        started: float,
        error: str | None = None,
    ) -> None:
        arguments = capped(arguments)
        if len(text := json.dumps(arguments, ensure_ascii=False)) > MAX_LINE:
            arguments = f"{text[:MAX_LINE]}... ({len(text)} characters)"
        entry = AuditEntry(
            time=datetime.fromtimestamp(started, UTC).isoformat(timespec="milliseconds"),
            session=capped(session),
            tool=capped(tool),
            arguments=arguments,
            outcome=outcome,
            error=None if error is None else capped(error),
            duration_ms=round((time.time() - started) * 1000, 2),
        )
        line = entry.model_dump_json(exclude_none=True) + "\n"
        try:
            self._append(line.encode())
        except OSError:
            log.exception("cannot write the audit log %s", self.path)

    def _append(self, data: bytes) -> None:
        self.path.parent.mkdir(parents=True, exist_ok=True)
        try:
            size = self.path.stat().st_size
        except FileNotFoundError:
            size = 0
        if size and size + len(data) > self.max_bytes:
            self._rotate()
        fd = os.open(self.path, os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o600)
        try:
            os.write(fd, data)
        finally:
            os.close(fd)

    def _rotate(self) -> None:
        """audit.jsonl -> .1 -> .2 ...; the oldest beyond `files` is dropped."""
        older = [self.path.with_name(f"{self.path.name}.{n}") for n in range(1, self.files)]
        if not older:
            self.path.unlink(missing_ok=True)
            return
        older[-1].unlink(missing_ok=True)
        for newer, next_older in zip(reversed(older[:-1]), reversed(older[1:]), strict=True):
            if newer.exists():
                newer.rename(next_older)
        self.path.rename(older[0])
