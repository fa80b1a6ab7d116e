"""OSWorld's setup steps (`config` and `evaluator.postconfig`) executed on the local desktop.

Each step `{type: X, parameters: P}` is OSWorld's `SetupController._X_setup(**P)` with the in-VM server's
behaviour (commands.py), inside the environment's sandbox as the task user: `execute`/`command`
(placeholders {CLIENT_PASSWORD}, {SCREEN_WIDTH}... filled in;
stdout/stderr saved into the task's cache when asked; `until` re-runs), `launch`, `open` (xdg-open, then
wait for a window whose title holds the file name and activate it), `activate_window` / `close_window`
(wmctrl's -a/-c matching: title contains the name, case-insensitively; `strict`: the whole title; `by_class`:
the WM_CLASS), `sleep`, `execute_with_verification`, `download` from a copy of OSWorld's cache
(offline.py), never the network, and `update_browse_history` (Chrome's History with the task's visits, from an
empty database made here rather than downloaded). As in OSWorld, a failing command, launch or window
step is logged and the setup goes on; an `open` whose window never appears and a failed verification stop
it (SetupError).
"""

from __future__ import annotations

import logging
import sqlite3
import tempfile
import time
from collections.abc import Callable
from datetime import datetime, timedelta
from pathlib import Path
from typing import Any

from symphony_mcp.bench.osworld.commands import Command, CommandResult, execute, launch
from symphony_mcp.bench.osworld.image import CHROME_PROFILE
from symphony_mcp.bench.osworld.offline import CACHE_VARIABLE, CacheError, download_copy, place
from symphony_mcp.bench.osworld.sandbox import Sandbox
from symphony_mcp.desktop.types import WindowInfo
from symphony_mcp.desktop.x11_windows import X11WindowManager
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
    }
)
UNTIL_FAILURES = 5  # OSWorld gives up an `until` loop after this many failed requests
UNTIL_SECONDS = 120.0  # ... and never stops while commands succeed without matching; here it does
POLL_SECONDS = 0.3


class SetupError(SymphonyError):
    """A step that OSWorld treats as fatal failed (the task cannot start from the state it expects)."""


class SetupRunner:
    """Runs a task's steps in one environment (its sandbox: the task user, the display)."""

    def __init__(
        self,
        sandbox: Sandbox,
        cache_dir: Path,
        screen_size: tuple[int, int],
        open_timeout: float = 120.0,
        offline: Path | None = None,
    ) -> None:
        self.offline = offline  # a copy of OSWorld's download cache (offline.py)
        self.task_id = ""
        self.sandbox = sandbox
        self.cache_dir = cache_dir
        self.screen_size = screen_size
        self.open_timeout = open_timeout

    def run(self, steps: list[dict[str, Any]]) -> None:
        for number, step in enumerate(steps, 1):
            kind, parameters = step["type"], step.get("parameters", {})
            handler: Callable[..., None] | None = getattr(self, f"_{kind}", None)
            if kind not in SETUP_STEPS or handler is None:
                known = ", ".join(sorted(SETUP_STEPS))
                raise SetupError(f"setup step {number}: unknown type {kind!r} (known: {known})")
            try:
                handler(**parameters)
            except SetupError as exc:
                raise SetupError(f"setup step {number} ({kind}) failed: {exc}") from exc
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
            result = execute(self.sandbox, command, shell)
            if result.ok:
                self._save(stdout, result.output)
                self._save(stderr, result.error)
                log.info("setup: %r -> %s", command, result.returncode)
            else:
                failures += 1
                log.warning("setup: %r did not run: %s", command, result.error)
            if not until or _reached(until, result) or failures >= UNTIL_FAILURES or time.monotonic() > deadline:
                return
            time.sleep(POLL_SECONDS)

    _command = _execute

    def _launch(self, command: Command, shell: bool = False) -> None:
        if not command:
            raise SetupError("empty command to launch")
        launch(self.sandbox, command, shell)

    def _open(self, path: str) -> None:
        if not path:
            raise SetupError(f"invalid path {path!r}")
        target = Path(self.sandbox.user.expand(path))
        if execute(self.sandbox, ["test", "-e", str(target)]).returncode == 0:
            self._launch(["xdg-open", str(target)])
            names = (target.name, target.stem)
        else:  # OSWorld opens an application name on PATH too
            found = execute(self.sandbox, ["sh", "-c", 'command -v "$0"', path])
            if not found.ok or found.returncode != 0:
                raise SetupError(f"application or file not found: {path}")
            self._launch([path])
            names = (path, path)
        deadline = time.monotonic() + self.open_timeout
        while time.monotonic() < deadline:
            window = self._find(lambda w: names[0] in w.title or names[1] in w.title)
            if window is not None:
                self._activate(window)
                return
            time.sleep(POLL_SECONDS)
        raise SetupError(f"no window for {target.name} appeared within {self.open_timeout:g} s")

    def _activate_window(self, window_name: str, strict: bool = False, by_class: bool = False) -> None:
        self._on_window(window_name, strict, by_class, self._activate, "activated")

    def _close_window(self, window_name: str, strict: bool = False, by_class: bool = False) -> None:
        self._on_window(window_name, strict, by_class, self._close, "closed")

    def _on_window(
        self, window_name: str, strict: bool, by_class: bool, act: Callable[[WindowInfo], object], done: str
    ) -> None:
        """OSWorld's window steps: a window that does not match is logged, not an error (as its controller does)."""
        if not window_name:
            raise SetupError(f"invalid window name {window_name!r}")
        window = self._find(_matcher(window_name, strict, by_class))
        if window is None:
            log.warning("setup: no window matches %r; nothing %s", window_name, done)
            return
        act(window)

    def _download(self, files: list[dict[str, str]]) -> None:
        for file in files:
            url, path = file.get("url", ""), file.get("path", "")
            if not url or not path:
                raise SetupError(f"invalid URL ({url!r}) or path ({path!r})")
            try:
                source = download_copy(self.offline, self.task_id, url, path)
            except CacheError as exc:
                raise SetupError(str(exc)) from exc
            if source is None:
                raise SetupError(f"no offline copy of {url} for {path} (OSWorld's cache, {CACHE_VARIABLE})")
            place(self.sandbox, source, path)

    def _update_browse_history(self, history: list[dict[str, Any]]) -> None:
        """OSWorld's step: an empty Chrome history database with these visits becomes the profile's History. OSWorld
        downloads the empty database from its file host; here it is the one the environment's first Chrome run made
        (image.py), emptied."""
        profile_history = str(self.sandbox.user.home / CHROME_PROFILE / "Default" / "History")
        made = self.sandbox.read_file(profile_history)
        if made is None:
            raise SetupError(
                f"no Chrome history database at {profile_history} (Chrome has not run in this environment)"
            )
        with tempfile.TemporaryDirectory() as folder:
            database = Path(folder) / "History"
            database.write_bytes(made)
            _add_visits(database, history)
            self.sandbox.write_file(profile_history, database.read_bytes())

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
        execute(self.sandbox, self._fill(command), shell)
        verification = verification or {}
        deadline = time.monotonic() + max_wait_time
        while True:
            if self._verified(verification):
                return
            if time.monotonic() > deadline:
                raise SetupError(f"verification {verification} did not pass within {max_wait_time:g} s")
            time.sleep(check_interval)

    # Helpers.

    def _verified(self, verification: dict[str, Any]) -> bool:
        window = verification.get("window_exists")
        if window and self._find(_matcher(window, False, False)) is None:
            return False
        check = verification.get("command_success")
        if check:
            result = execute(self.sandbox, check, True)
            return result.ok and result.returncode == 0
        return True

    def _fill(self, command: Command) -> Command:
        width, height = self.screen_size
        values = {
            "{CLIENT_PASSWORD}": self.sandbox.user.password,
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

    def _find(self, match: Callable[[WindowInfo], bool]) -> WindowInfo | None:
        windows: list[WindowInfo] = self._windows(lambda manager: manager.list_windows())
        return next((w for w in windows if match(w)), None)

    def _close(self, window: WindowInfo, timeout: float = 2.0) -> Any:
        return self._windows(lambda manager: manager.request_close(window.id, timeout))

    def _activate(self, window: WindowInfo) -> None:
        self._windows(lambda manager: manager.activate(window.id))

    def _windows(self, action: Callable[[X11WindowManager], Any]) -> Any:
        manager = X11WindowManager(self.sandbox.display)
        try:
            return action(manager)
        except SymphonyError as exc:
            log.warning("setup: window manager: %s", exc)
            return []
        finally:
            manager.close()


def _matcher(name: str, strict: bool, by_class: bool) -> Callable[[WindowInfo], bool]:
    """wmctrl's matching: the title (or class) contains the name case-insensitively, or equals it (-F)."""

    def match(window: WindowInfo) -> bool:
        text = window.app if by_class else window.title
        return text == name if strict else name.lower() in text.lower()

    return match


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
