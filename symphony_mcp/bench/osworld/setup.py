"""OSWorld's setup steps (`config` and `evaluator.postconfig`), dispatched once for every kind of machine.

Each step `{type: X, parameters: P}` is OSWorld's `SetupController._X_setup(**P)`, run here over a `SetupMachine`:
what a machine does for a step (run a command, launch, open, act on a window, read and put a file). Two machines
implement it: a local environment's sandbox, as the task user (local_setup.py), and a remote machine through its
OSWorld controller (remote_setup.py). Steps: `execute`/`command` (placeholders {CLIENT_PASSWORD}, {SCREEN_WIDTH}...
filled in; stdout/stderr saved into the task's cache when asked; `until` re-runs, bounded), `launch`, `open` (the
file or application, then its window waited for, at most `open_timeout`), `activate_window` / `close_window`
(wmctrl's matching), `sleep`, `execute_with_verification` (the command, then its checks polled), `download` (the
file from a copy of OSWorld's cache, offline.py, else fetched on this host where the machine allows the network,
then put on the machine as `/setup/upload` does), `update_browse_history` (Chrome's History with the task's visits,
from the empty database the machine's Chrome made) and `chrome_open_tabs` / `chrome_close_tabs` (over the machine's
Chrome DevTools port, remote_chrome.py). Which of them a machine runs is its `steps` (LOCAL_STEPS, REMOTE_STEPS).
As in OSWorld, a failing command, launch or window step is logged and the setup goes on; an `open` whose window
never appears, a file that cannot be had and a failed verification stop it (SetupError).
"""

from __future__ import annotations

import logging
import os
import sqlite3
import tempfile
import time
import uuid
from collections.abc import Callable
from datetime import datetime, timedelta
from pathlib import Path
from typing import Any, Generic, Literal, Protocol, TypeVar

import httpx

from symphony_mcp.bench.osworld.commands import Command, CommandResult
from symphony_mcp.bench.osworld.image import CHROME_PROFILE
from symphony_mcp.bench.osworld.offline import CACHE_VARIABLE, CacheError, download_copy
from symphony_mcp.bench.osworld.remote_chrome import close_tabs, open_tabs
from symphony_mcp.errors import SymphonyError

log = logging.getLogger(__name__)
SETUP_STEPS = frozenset(
    {
        "execute",
        "command",
        "launch",
        "open",
        "activate_window",
        "close_window",
        "sleep",
        "execute_with_verification",
        "download",
        "update_browse_history",
        "chrome_open_tabs",
        "chrome_close_tabs",
    }
)
CHROME_TAB_STEPS = frozenset({"chrome_open_tabs", "chrome_close_tabs"})
# A local environment's tasks with tab steps open live sites, which it never reaches.
LOCAL_STEPS = SETUP_STEPS - CHROME_TAB_STEPS
# OSWorld's VMs get the empty history database from OSWorld's file host; a local environment's first Chrome run made
# the one it uses (image.py).
REMOTE_STEPS = SETUP_STEPS - {"update_browse_history"}
CHROME_HISTORY = f"~/{CHROME_PROFILE}/Default/History"
UNTIL_FAILURES = 5  # OSWorld gives up an `until` loop after this many failed requests
UNTIL_SECONDS = 120.0  # ... and never stops while commands succeed without matching; here it does
POLL_SECONDS = 0.3
DOWNLOAD_SECONDS = 300.0  # OSWorld's harness: a 5-minute timeout per download
WindowAction = Literal["activate", "close"]


class SetupError(SymphonyError):
    """A step that OSWorld treats as fatal failed (the task cannot start from the state it expects)."""


class SetupMachine(Protocol):
    """Where a task's steps act: what each step needs of a machine, and what the machine allows."""

    name: str  # where the steps run, in messages
    password: str  # the task user's ({CLIENT_PASSWORD})
    steps: frozenset[str]  # which of SETUP_STEPS it runs
    devtools: str | None  # its Chrome's DevTools endpoint (http://host:port) for the tab steps
    network: bool  # a download missing from the copy of OSWorld's cache may be fetched on this host

    @property
    def screen_size(self) -> tuple[int, int]: ...

    def execute(self, command: Command, shell: bool) -> CommandResult:
        """Run to completion as `/execute` does; `ok` False (and logged) when it could not run."""
        ...

    def launch(self, command: Command, shell: bool) -> None:
        """Start without waiting, as `/setup/launch` does; a failure is logged."""
        ...

    def open(self, path: str, timeout: float) -> None:
        """Open a file (or an application on PATH), then wait for its window; SetupError when none comes."""
        ...

    def window(self, action: WindowAction, name: str, strict: bool, by_class: bool) -> None:
        """Activate or close the window wmctrl's matching finds; none matching (or a failure) is logged."""
        ...

    def window_exists(self, name: str) -> bool:
        """Whether a window's title holds the name, whatever its case."""
        ...

    def read_file(self, path: str) -> bytes | None:
        """A file's bytes (`~` as the task user's home), None when it cannot be read."""
        ...

    def put_file(self, path: str, data: bytes) -> None:
        """Write a file where the task's path says, as `/setup/upload` does (missing folders made)."""
        ...


Machine = TypeVar("Machine", bound=SetupMachine)


class SetupRunner(Generic[Machine]):
    """Runs a task's steps on one machine, with the task's cache folder on this host."""

    def __init__(
        self, machine: Machine, cache_dir: Path, task_id: str, offline: Path | None, open_timeout: float
    ) -> None:
        self.machine = machine
        self.cache_dir = cache_dir
        self.task_id = task_id
        self.offline = offline  # a copy of OSWorld's download cache (offline.py)
        self.open_timeout = open_timeout

    def run(self, steps: list[dict[str, Any]]) -> None:
        for number, step in enumerate(steps, 1):
            kind, parameters = step["type"], step.get("parameters", {})
            if kind not in SETUP_STEPS:
                known = ", ".join(sorted(SETUP_STEPS))
                raise SetupError(f"setup step {number}: unknown type {kind!r} (known: {known})")
            if kind not in self.machine.steps:
                runs = ", ".join(sorted(self.machine.steps))
                raise SetupError(f"setup step {number}: type {kind!r} is not run on {self.machine.name} (run: {runs})")
            handler: Callable[..., None] = getattr(self, f"_{kind}")
            try:
                handler(**parameters)
            except SetupError as exc:
                raise SetupError(f"setup step {number} ({kind}) failed: {exc}") from exc
            except SymphonyError as exc:  # the machine did not answer, or answered an error where one is fatal
                raise SetupError(f"setup step {number} ({kind}) failed on {self.machine.name}: {exc}") from exc
            except TypeError as exc:  # parameters that the step does not take
                raise SetupError(f"setup step {number} ({kind}) has bad parameters: {exc}") from exc

    # The steps, named as in OSWorld's task JSONs.

    def _execute(
        self,
        command: Command,
        stdout: str = "",
        stderr: str = "",
        shell: bool = False,
        until: dict[str, Any] | None = None,
    ) -> None:
        if not command:
            raise SetupError("empty command")
        command = self._fill(command)
        deadline = time.monotonic() + UNTIL_SECONDS
        failures = 0
        while True:
            result = self.machine.execute(command, shell)
            if result.ok:
                self._save(stdout, result.output)
                self._save(stderr, result.error)
                log.info("setup on %s: %r -> %s", self.machine.name, command, result.returncode)
            else:
                failures += 1
            if not until or _reached(until, result) or failures >= UNTIL_FAILURES or time.monotonic() > deadline:
                return
            time.sleep(POLL_SECONDS)

    _command = _execute

    def _launch(self, command: Command, shell: bool = False) -> None:
        if not command:
            raise SetupError("empty command to launch")
        self.machine.launch(command, shell)

    def _open(self, path: str) -> None:
        if not path:
            raise SetupError(f"invalid path {path!r}")
        self.machine.open(path, self.open_timeout)

    def _activate_window(self, window_name: str, strict: bool = False, by_class: bool = False) -> None:
        self._window("activate", window_name, strict, by_class)

    def _close_window(self, window_name: str, strict: bool = False, by_class: bool = False) -> None:
        self._window("close", window_name, strict, by_class)

    def _sleep(self, seconds: float) -> None:
        time.sleep(seconds)

    def _execute_with_verification(
        self,
        command: Command,
        verification: dict[str, Any] | None = None,
        max_wait_time: float = 10,
        check_interval: float = 1.0,
        shell: bool = False,
    ) -> None:
        if not command:
            raise SetupError("empty command")
        self.machine.execute(self._fill(command), shell)
        verification = verification or {}
        deadline = time.monotonic() + max_wait_time
        while not self._verified(verification):
            if time.monotonic() > deadline:
                raise SetupError(f"verification {verification} did not pass within {max_wait_time:g} s")
            time.sleep(check_interval)

    def _download(self, files: list[dict[str, str]]) -> None:
        for file in files:
            url, path = file.get("url", ""), file.get("path", "")
            if not url or not path:
                raise SetupError(f"invalid URL ({url!r}) or path ({path!r})")
            self.machine.put_file(path, self._file(url, path).read_bytes())

    def _update_browse_history(self, history: list[dict[str, Any]]) -> None:
        """OSWorld's step: an empty Chrome history database with these visits becomes the profile's History. OSWorld
        downloads the empty database from its file host; here it is the one the machine's Chrome made, emptied."""
        made = self.machine.read_file(CHROME_HISTORY)
        if made is None:
            raise SetupError(f"no Chrome history database at {CHROME_HISTORY} (Chrome has not run on the machine)")
        with tempfile.TemporaryDirectory() as folder:
            database = Path(folder) / "History"
            database.write_bytes(made)
            _add_visits(database, history)
            self.machine.put_file(CHROME_HISTORY, database.read_bytes())

    def _chrome_open_tabs(self, urls_to_open: list[str]) -> None:
        open_tabs(self._devtools(), urls_to_open)

    def _chrome_close_tabs(self, urls_to_close: list[str]) -> None:
        close_tabs(self._devtools(), urls_to_close)

    # Helpers.

    def _window(self, action: WindowAction, window_name: str, strict: bool, by_class: bool) -> None:
        if not window_name:
            raise SetupError(f"invalid window name {window_name!r}")
        self.machine.window(action, window_name, strict, by_class)

    def _verified(self, verification: dict[str, Any]) -> bool:
        window = verification.get("window_exists")
        if window and not self.machine.window_exists(window):
            return False
        check = verification.get("command_success")
        if check:
            result = self.machine.execute(check, True)
            return result.ok and result.returncode == 0
        return True

    def _file(self, url: str, path: str) -> Path:
        """The download's file here: the offline copy's, else (the machine allows the network) fetched into the
        task's cache under OSWorld's own name for it."""
        try:
            copy = download_copy(self.offline, self.task_id, url, path)
        except CacheError as exc:
            raise SetupError(str(exc)) from exc
        if copy is not None:
            return copy
        if not self.machine.network:
            raise SetupError(f"no copy of {url} for {path} in OSWorld's cache ({CACHE_VARIABLE}) and no network")
        target = self.cache_dir / f"{uuid.uuid5(uuid.NAMESPACE_URL, url)}_{os.path.basename(path)}"
        if not target.is_file():
            self.cache_dir.mkdir(parents=True, exist_ok=True)
            partial = target.with_name(f".{target.name}.part")
            try:
                with httpx.stream("GET", url, follow_redirects=True, timeout=DOWNLOAD_SECONDS) as response:
                    response.raise_for_status()
                    with partial.open("wb") as out:
                        for chunk in response.iter_bytes():
                            out.write(chunk)
            except httpx.HTTPError as exc:
                partial.unlink(missing_ok=True)
                raise SetupError(f"downloading {url}: {exc}") from exc
            partial.replace(target)
        return target

    def _devtools(self) -> str:
        if self.machine.devtools is None:
            raise SetupError(f"{self.machine.name} has no Chrome DevTools endpoint")
        return self.machine.devtools

    def _fill(self, command: Command) -> Command:
        width, height = self.machine.screen_size
        values = {
            "{CLIENT_PASSWORD}": self.machine.password,
            "{SCREEN_WIDTH_HALF}": str(width // 2),
            "{SCREEN_HEIGHT_HALF}": str(height // 2),
            "{SCREEN_WIDTH}": str(width),
            "{SCREEN_HEIGHT}": str(height),
        }

        def fill(text: str) -> str:
            for placeholder, value in values.items():
                text = text.replace(placeholder, value)
            return text

        return fill(command) if isinstance(command, str) else [fill(part) for part in command]

    def _save(self, name: str, text: str) -> None:
        if name:
            self.cache_dir.mkdir(parents=True, exist_ok=True)
            (self.cache_dir / name).write_text(text, encoding="utf-8")


CHROME_EPOCH = datetime(1601, 1, 1)  # Chrome's timestamps: microseconds since then
TYPED_LINK = 805306368  # the visit transition OSWorld's step writes


def _add_visits(database: Path, history: list[dict[str, Any]]) -> None:
    """Empty the history, then add each visit as OSWorld's step does (one url row and one visit row each)."""
    connection = sqlite3.connect(database)
    try:
        connection.execute("DELETE FROM visits")
        connection.execute("DELETE FROM urls")
        for item in history:
            visited = datetime.now() - timedelta(seconds=item["visit_time_from_now_in_seconds"])
            stamp = int((visited - CHROME_EPOCH).total_seconds() * 1_000_000)
            cursor = connection.execute(
                "INSERT INTO urls (url, title, visit_count, typed_count, last_visit_time, hidden) "
                "VALUES (?, ?, 1, 0, ?, 0)",
                (item["url"], item["title"], stamp),
            )
            connection.execute(
                "INSERT INTO visits (url, visit_time, from_visit, transition, segment_id, visit_duration) "
                "VALUES (?, ?, 0, ?, 0, 0)",
                (cursor.lastrowid, stamp, TYPED_LINK),
            )
        connection.commit()
    finally:
        connection.close()


def _reached(until: dict[str, Any], result: CommandResult) -> bool:
    if not result.ok:
        return False
    return (
        ("returncode" in until and result.returncode == until["returncode"])
        or ("stdout" in until and until["stdout"] in result.output)
        or ("stderr" in until and until["stderr"] in result.error)
    )
