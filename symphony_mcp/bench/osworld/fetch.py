"""`symphony-mcp bench osworld fetch-cache DIR`: a task set's files downloaded once, on a networked machine.

DIR gets OSWorld's own layout (cache/<task_id>/<name>, so OSWorld's harness can use it too) and a manifest
(offline.py) with each file's size and sha256, so that a checkout whose task JSONs name other URLs finds the
same files. Resumable: a file already there and matching its manifest entry is not fetched again, an
interrupted download continues from its `.part` file (HTTP Range), and the manifest is rewritten after each
file. A file the manifest already knows must come back with the same sha256; a wrong length or checksum is an
error and the file is dropped. A URL several tasks share is fetched once. DIR gets a `.gitignore` of `*` so
the files are never committed. Mirrors (`PREFIX=REPLACEMENT`) fetch a URL from elsewhere (a Hugging Face
mirror, a local server) while the cache still names it by the task's URL.
"""

from __future__ import annotations

import os
import shutil
import threading
from collections.abc import Callable, Iterable, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import httpx

from symphony_mcp.bench.osworld.offline import (
    MANIFEST_FILE,
    CacheError,
    Manifest,
    ManifestEntry,
    TaskFile,
    check,
    read_manifest,
    sha256_of,
    task_files,
)
from symphony_mcp.errors import SettingsError

TIMEOUT = httpx.Timeout(60.0, connect=20.0)


@dataclass
class FetchReport:
    """What a fetch did: files fetched now, already there, and the ones that failed with why."""

    fetched: int = 0
    present: int = 0
    failed: list[str] = field(default_factory=list)


def parse_mirror(text: str) -> tuple[str, str]:
    """`PREFIX=REPLACEMENT` as given on the command line."""
    prefix, sep, replacement = text.partition("=")
    if not sep or not prefix.startswith(("http://", "https://")) or not replacement.startswith(("http://", "https://")):
        raise SettingsError(f"invalid mirror {text!r}: give PREFIX=REPLACEMENT, both http(s) URLs")
    return prefix, replacement


def mirrored(url: str, mirrors: Sequence[tuple[str, str]]) -> str:
    """Where to fetch `url` from: the first mirror whose prefix it starts with, else itself."""
    for prefix, replacement in mirrors:
        if url.startswith(prefix):
            return replacement + url[len(prefix) :]
    return url


def fetch_cache(
    tasks: Iterable[dict[str, Any]],
    folder: Path,
    mirrors: Sequence[tuple[str, str]] = (),
    parallel: int = 4,
    on_file: Callable[[TaskFile, str], None] = lambda file, what: None,
) -> FetchReport:
    """Every file the tasks take from OSWorld's cache, into `folder` with its manifest (see the module)."""
    if parallel < 1:
        raise SettingsError(f"--parallel {parallel}: give 1 or more downloads at once")
    folder.mkdir(parents=True, exist_ok=True)
    ignore = folder / ".gitignore"
    if not ignore.exists():
        ignore.write_text("*\n", encoding="utf-8")
    try:
        manifest = read_manifest(folder)
    except CacheError as exc:
        raise CacheError(f"{exc} (fetch-cache keeps its manifest in {folder / MANIFEST_FILE})") from exc
    by_url: dict[str, list[TaskFile]] = {}
    report = FetchReport()
    for task in tasks:
        try:
            files = list(task_files(task))
        except (KeyError, TypeError, ValueError) as exc:  # a JSON not in OSWorld's format: the others still go
            report.failed.append(f"task {task.get('id')}: its files cannot be read from its JSON: {exc!r}")
            continue
        for file in files:
            by_url.setdefault(file.url, []).append(file)
    store = _Store(folder, manifest)
    try:
        _fetch_all(store, by_url, mirrors, parallel, on_file, report)
    finally:
        store.client.close()
    return report


def _fetch_all(
    store: _Store,
    by_url: dict[str, list[TaskFile]],
    mirrors: Sequence[tuple[str, str]],
    parallel: int,
    on_file: Callable[[TaskFile, str], None],
    report: FetchReport,
) -> None:
    lock = threading.Lock()

    def one(url: str) -> None:
        try:
            fetched = store.fetch(url, by_url[url], mirrors)
        except (httpx.HTTPError, OSError, CacheError) as exc:
            with lock:
                report.failed.append(f"{url}: {_describe(exc)}")
            on_file(by_url[url][0], f"failed: {_describe(exc)}")
            return
        with lock:
            report.fetched += fetched
            report.present += len(by_url[url]) - fetched
        on_file(by_url[url][0], "fetched" if fetched else "present")

    with ThreadPoolExecutor(max_workers=parallel) as pool:
        list(pool.map(one, sorted(by_url)))


class _Store:
    """The cache folder and its manifest, shared by the download threads."""

    def __init__(self, folder: Path, manifest: Manifest) -> None:
        self.folder, self.manifest = folder, manifest
        self.lock = threading.Lock()
        self.client = httpx.Client(timeout=TIMEOUT, follow_redirects=True)

    def fetch(self, url: str, files: list[TaskFile], mirrors: Sequence[tuple[str, str]]) -> int:
        """The URL's file under each task that takes it; how many were written now."""
        missing = [f for f in files if not self._present(f)]
        if not missing:
            return 0
        present = [f for f in files if f not in missing]
        if present:
            source = self._path(present[0])
        else:
            known = next((e for f in files if (e := self._entry(f)) is not None), None)
            source = self._download(mirrored(url, mirrors), self._path(missing[0]))
            if known is not None and (digest := sha256_of(source)) != known.sha256:
                source.unlink()
                raise CacheError(f"fetched a file with sha256 {digest}; the manifest says {known.sha256} (it changed)")
        size, digest = source.stat().st_size, sha256_of(source)
        for file in missing:
            if self._path(file) != source:
                _link(source, self._path(file))
        for file in files:
            self._record(ManifestEntry(**_fields(file), stored=file.stored, size=size, sha256=digest))
        return len(missing)

    def _download(self, url: str, target: Path) -> Path:
        """The file at `url` into `target`, continuing a `.part` left by an interrupted run."""
        target.parent.mkdir(parents=True, exist_ok=True)
        part = target.with_name(target.name + ".part")
        have = part.stat().st_size if part.exists() else 0
        headers = {"Range": f"bytes={have}-"} if have else {}
        with self.client.stream("GET", url, headers=headers) as response:
            if response.status_code == 416 and have:  # the part is the whole file already
                os.replace(part, target)
                return target
            response.raise_for_status()
            resumed = response.status_code == 206
            expected = response.headers.get("content-length")
            with part.open("ab" if resumed else "wb") as handle:
                for chunk in response.iter_bytes():  # as it arrives: an interrupted run keeps what came
                    handle.write(chunk)
        total = part.stat().st_size
        if expected is not None and total - (have if resumed else 0) != int(expected):
            raise CacheError(f"got {total} bytes, the server announced {expected} (interrupted: run again to resume)")
        os.replace(part, target)
        return target

    def _path(self, file: TaskFile) -> Path:
        return self.folder / file.task_id / file.stored

    def _entry(self, file: TaskFile) -> ManifestEntry | None:
        with self.lock:
            entry = self.manifest.entry(file.task_id, file.kind, file.name)
        return entry if entry is not None and entry.stored == file.stored else None

    def _present(self, file: TaskFile) -> bool:
        entry, path = self._entry(file), self._path(file)
        if entry is None or not path.is_file():
            return False
        try:
            check(path, entry, verify=True)
        except CacheError:
            path.unlink()  # damaged: fetched again
            return False
        return True

    def _record(self, entry: ManifestEntry) -> None:
        """Add or replace the file's entry and write the manifest atomically (what was fetched survives an abort)."""
        with self.lock:
            key = (entry.task_id, entry.kind, entry.name)
            kept = [e for e in self.manifest.files if (e.task_id, e.kind, e.name) != key]
            self.manifest = Manifest(files=sorted([*kept, entry], key=lambda e: (e.task_id, e.kind, e.name)))
            path = self.folder / MANIFEST_FILE
            tmp = path.with_name(f".{MANIFEST_FILE}.tmp")
            tmp.write_text(self.manifest.model_dump_json(indent=1), encoding="utf-8")
            os.replace(tmp, path)


def _fields(file: TaskFile) -> dict[str, str]:
    return {"task_id": file.task_id, "kind": file.kind, "name": file.name, "url": file.url}


def _link(source: Path, target: Path) -> None:
    """The same file under another task: a hard link where the file system allows it, else a copy."""
    target.parent.mkdir(parents=True, exist_ok=True)
    target.unlink(missing_ok=True)
    try:
        os.link(source, target)
    except OSError:
        shutil.copyfile(source, target)


def _describe(exc: BaseException) -> str:
    if isinstance(exc, httpx.HTTPStatusError):
        return f"HTTP {exc.response.status_code} from {exc.request.url}"
    if isinstance(exc, httpx.HTTPError):
        return f"{type(exc).__name__}: {exc}"
    return str(exc)
