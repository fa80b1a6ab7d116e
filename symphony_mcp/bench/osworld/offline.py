"""Files OSWorld downloads, taken from a copy of OSWorld's own cache instead of the network.

OSWorld's harness keeps what it downloads in `cache/<task_id>/`: a setup `download` step's file as
`<uuid5(NAMESPACE_URL, url)>_<basename of its VM path>`, a `cloud_file` getter's gold file as `<dest>`. A
copy of that folder (from a run with the network, `symphony-mcp bench osworld fetch-cache`, or filled by
hand) makes those tasks run offline: the adapter looks a file up (OSWORLD_CACHE, or the adapter's `cache`
argument) and never fetches anything. A task whose files are not all there is listed as needing the network.

OSWorld versions moved their files (Google Drive, then a Hugging Face dataset), so the URL in one checkout's
task JSON need not be the URL a cache was made from. A file is therefore found by what it is, in this order:
OSWorld's name from the task's own URL; the cache's manifest (`manifest.json`, written by fetch-cache: each
file's task, name, URL it came from, size and sha256), by task and name, its size checked (and its sha256
when the file is used); and in a cache without a manifest, the one `<uuid>_<basename>` file of the task.
"""

from __future__ import annotations

import functools
import hashlib
import os
import re
import uuid
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Literal

from pydantic import BaseModel, Field, ValidationError

CACHE_VARIABLE = "OSWORLD_CACHE"
MANIFEST_FILE = "manifest.json"
OSWORLD_DOWNLOAD_NAME = re.compile(r"^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}_(?P<name>.+)$")
Kind = Literal["download", "cloud_file"]


class CacheError(ValueError):
    """A cache's file or manifest is not what it claims to be (wrong size or checksum, unreadable manifest)."""


@dataclass(frozen=True)
class TaskFile:
    """One file a task takes from OSWorld's cache: `name` is what stays the same across OSWorld versions (the
    basename of a download's VM path, a gold file's dest), `stored` its file name in cache/<task_id>/."""

    task_id: str
    kind: Kind
    name: str
    url: str

    @property
    def stored(self) -> str:
        if self.kind == "download":
            return f"{uuid.uuid5(uuid.NAMESPACE_URL, self.url)}_{self.name}"
        return self.name


class ManifestEntry(BaseModel):
    task_id: str
    kind: Kind
    name: str = Field(description="the basename of a download's VM path, or a gold file's dest")
    stored: str = Field(description="its file name in <cache>/<task_id>/")
    url: str = Field(description="the URL it was fetched from (that OSWorld version's)")
    size: int
    sha256: str


class Manifest(BaseModel):
    """What a cache holds, so that a checkout with other URLs finds the same files (written by fetch-cache)."""

    files: list[ManifestEntry] = Field(default_factory=list)

    def entry(self, task_id: str, kind: Kind, name: str) -> ManifestEntry | None:
        return next((e for e in self.files if (e.task_id, e.kind, e.name) == (task_id, kind, name)), None)


def task_files(task: dict[str, Any]) -> Iterator[TaskFile]:
    """Every file the task takes from the cache: its download steps' files (config and postconfig) and its
    cloud_file getters' gold files."""
    evaluator = task.get("evaluator") or {}
    for step in [*task.get("config", []), *evaluator.get("postconfig", [])]:
        if step.get("type") == "download":
            for file in step.get("parameters", {}).get("files", []):
                yield TaskFile(task["id"], "download", os.path.basename(file["path"]), file["url"])
    for getter in _getters(evaluator):
        if getter.get("type") == "cloud_file":
            urls, dests = (
                (getter["path"], getter["dest"]) if getter.get("multi") else ([getter["path"]], [getter["dest"]])
            )
            for url, dest in zip(urls, dests, strict=True):
                yield TaskFile(task["id"], "cloud_file", dest, url)


def _getters(evaluator: dict[str, Any]) -> Iterator[dict[str, Any]]:
    for key in ("result", "expected"):
        value = evaluator.get(key)
        for getter in value if isinstance(value, list) else [value]:
            if isinstance(getter, dict):
                yield getter


def read_manifest(cache: Path) -> Manifest:
    """The cache's manifest (empty when it has none: a cache OSWorld's harness made)."""
    path = cache / MANIFEST_FILE
    try:
        stamp = path.stat().st_mtime_ns
    except FileNotFoundError:
        return Manifest()
    return _parsed_manifest(path, stamp)


@functools.lru_cache(maxsize=8)
def _parsed_manifest(path: Path, stamp: int) -> Manifest:
    try:
        return Manifest.model_validate_json(path.read_bytes())
    except (OSError, ValidationError) as exc:
        raise CacheError(f"{path} is not a cache manifest of symphony-mcp (remove it or fetch again): {exc}") from exc


def find(cache: Path | None, file: TaskFile, *, verify: bool = False) -> Path | None:
    """Where the cache holds the task's file, if it does (see the module's order); `verify` checks the sha256
    the manifest records. A file whose size or checksum differs from its manifest entry raises CacheError."""
    if cache is None:
        return None
    manifest = read_manifest(cache)
    folder = cache / file.task_id
    own = folder / file.stored
    entry = manifest.entry(file.task_id, file.kind, file.name)
    if entry is not None and (entry.stored == file.stored or not own.is_file()):
        found = folder / entry.stored
        if not found.is_file():
            return None
        check(found, entry, verify=verify)
        return found
    if own.is_file():
        return own
    if file.kind == "download" and not manifest.files and folder.is_dir():
        named = [p for p in folder.iterdir() if _download_name(p.name) == file.name and p.is_file()]
        return named[0] if len(named) == 1 else None
    return None


def _download_name(stored: str) -> str | None:
    match = OSWORLD_DOWNLOAD_NAME.match(stored)
    return match["name"] if match else None


def check(path: Path, entry: ManifestEntry, *, verify: bool) -> None:
    """The file is the one the manifest names: its size always, its sha256 when `verify`."""
    size = path.stat().st_size
    if size != entry.size:
        raise CacheError(f"{path} has {size} bytes, its manifest says {entry.size}: fetch the cache again")
    if verify and (digest := sha256_of(path)) != entry.sha256:
        raise CacheError(f"{path} has sha256 {digest}, its manifest says {entry.sha256}: fetch the cache again")


def sha256_of(path: Path) -> str:
    with path.open("rb") as handle:
        return hashlib.file_digest(handle, "sha256").hexdigest()


def download_copy(cache: Path | None, task_id: str, url: str, path: str) -> Path | None:
    """Where the cache keeps a download step's file, checked against the manifest, if it is there."""
    return find(cache, TaskFile(task_id, "download", os.path.basename(path), url), verify=True)


def cloud_copy(cache: Path | None, task_id: str, dest: str, url: str = "") -> Path | None:
    """Where the cache keeps a cloud_file getter's gold file, checked against the manifest, if it is there."""
    return find(cache, TaskFile(task_id, "cloud_file", dest, url), verify=True)
