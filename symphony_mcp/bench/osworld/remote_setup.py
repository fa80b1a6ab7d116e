"""OSWorld's setup steps (`config`, `evaluator.postconfig`) on a remote machine, through its own controller.

What OSWorld's `SetupController` posts, sent by symphony-mcp's controller client (desktop/remote/osworld_controller.py):
one lock per machine (parallel calls wedge the controller), a command never sent twice (a retried `/execute` runs
it again; `/run_bash_script` is never used: it runs, then answers 500), the exit status read, not the HTTP status.
Steps: `execute`/`command` (placeholders {CLIENT_PASSWORD}, {SCREEN_WIDTH}... filled in; stdout/stderr saved in the
task's cache when asked; `until` re-runs, bounded), `launch`, `open` (`/setup/open_file`, its wait for the window
bounded by `open_timeout`, not upstream's 1800 s), `activate_window` / `close_window`, `sleep`,
`execute_with_verification` (the command, then its checks polled through `/execute`), `chrome_open_tabs` and
`chrome_close_tabs` (over the machine's Chrome DevTools port, remote_chrome.py), and `download`: the file from
the copy of OSWorld's cache (offline.py), else fetched here when the network is allowed, then put on the machine with
`/setup/upload`, as OSWorld's harness does. As in OSWorld, a failing command, launch or window step is logged and the
setup goes on; an `open` that fails, a file that cannot be had and a failed verification stop it (SetupError).
"""

from __future__ import annotations

import logging
import os
import time
import uuid
from collections.abc import Callable
from pathlib import Path
from typing import Any

import httpx

from symphony_mcp.bench.osworld.commands import Command
from symphony_mcp.bench.osworld.offline import CACHE_VARIABLE, CacheError, download_copy
from symphony_mcp.bench.osworld.remote_chrome import close_tabs, open_tabs
from symphony_mcp.bench.osworld.setup import POLL_SECONDS, UNTIL_FAILURES, UNTIL_SECONDS, SetupError
from symphony_mcp.desktop.remote.osworld_controller import CommandResult, OsworldController
from symphony_mcp.errors import SymphonyError, clip

log = logging.getLogger(__name__)
REMOTE_STEPS = frozenset(
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
        "chrome_open_tabs",
        "chrome_close_tabs",
    }
)
DOWNLOAD_SECONDS = 300.0  # OSWorld's harness: a 5-minute timeout per download


class RemoteSetupRunner:
    """Runs a task's steps on one machine (its controller), with the task's cache folder here."""

    def __init__(
        self,
        controller: OsworldController,
        cache_dir: Path,
        task_id: str,
        *,
        password: str,
        open_timeout: float,
        offline: Path | None,
        network: bool,
        chrome: str,
    ) -> None:
        self.chrome = chrome  # the machine's Chrome DevTools endpoint, http://host:port (remote_chrome.py)
        self.controller = controller
        self.cache_dir = cache_dir
        self.task_id = task_id
        self.password = password
        self.open_timeout = open_timeout
        self.offline = offline  # a copy of OSWorld's download cache
        self.network = network  # files not in that copy may be fetched here
        self._screen: tuple[int, int] | None = None

    @property
    def screen_size(self) -> tuple[int, int]:
        """The machine's screen, asked once (the {SCREEN_WIDTH} placeholders, OSWorld's getters)."""
        if self._screen is None:
            self._screen = self.controller.screen_size()
        return self._screen

    def run(self, steps: list[dict[str, Any]]) -> None:
        for number, step in enumerate(steps, 1):
            kind, parameters = step["type"], step.get("parameters", {})
            handler: Callable[..., None] | None = getattr(self, f"_{kind}", None)
            if kind not in REMOTE_STEPS or handler is None:
                known = ", ".join(sorted(REMOTE_STEPS))
                raise SetupError(f"setup step {number}: type {kind!r} is not run on remote machines (run: {known})")
            try:
                handler(**parameters)
            except SetupError as exc:
                raise SetupError(f"setup step {number} ({kind}) failed: {exc}") from exc
            except SymphonyError as exc:  # the machine did not answer, or answered an error where one is fatal
                raise SetupError(f"setup step {number} ({kind}) failed on {self.controller.url}: {exc}") from exc
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
            result = self._try(command, shell)
            if result is not None:
                self._save(stdout, result.output)
                self._save(stderr, result.error)
                log.info("setup on %s: %r -> %s", self.controller.url, command, result.returncode)
            else:
                failures += 1
            if not until or _matched(until, result) or failures >= UNTIL_FAILURES or time.monotonic() > deadline:
                return
            time.sleep(POLL_SECONDS)

    _command = _execute

    def _launch(self, command: Command, shell: bool = False) -> None:
        if not command:
            raise SetupError("empty command to launch")
        try:
            self.controller.launch(command, shell)
        except SymphonyError as exc:
            log.warning("setup on %s: launching %r failed: %s", self.controller.url, command, exc)

    def _open(self, path: str) -> None:
        if not path:
            raise SetupError(f"invalid path {path!r}")
        self.controller.open_file(path, self.open_timeout)

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
        self._try(self._fill(command), shell)
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
            self.controller.upload(path, self._file(url, path).read_bytes())

    def _chrome_open_tabs(self, urls_to_open: list[str]) -> None:
        open_tabs(self.chrome, urls_to_open)

    def _chrome_close_tabs(self, urls_to_close: list[str]) -> None:
        close_tabs(self.chrome, urls_to_close)

    # Helpers.

    def _file(self, url: str, path: str) -> Path:
        """The download's file here: the offline copy's, else (network allowed) fetched into the task's cache under
        OSWorld's own name for it."""
        try:
            copy = download_copy(self.offline, self.task_id, url, path)
        except CacheError as exc:
            raise SetupError(str(exc)) from exc
        if copy is not None:
            return copy
        if not self.network:
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

    def _try(self, command: Command, shell: bool) -> CommandResult | None:
        """The command's result, or None (logged) when the controller could not run it (OSWorld goes on)."""
        try:
            return self.controller.execute(command, shell=shell)
        except SymphonyError as exc:
            log.warning("setup on %s: %r did not run: %s", self.controller.url, command, exc)
            return None

    def _verified(self, verification: dict[str, Any]) -> bool:
        window = verification.get("window_exists")
        if window:
            listing = self._try(["wmctrl", "-l"], False)
            if listing is None or window.lower() not in listing.output.lower():
                return False
        check = verification.get("command_success")
        if check:
            result = self._try(check, True)
            return result is not None and result.ok
        return True

    def _window(self, action: str, window_name: str, strict: bool, by_class: bool) -> None:
        if not window_name:
            raise SetupError(f"invalid window name {window_name!r}")
        try:
            self.controller.window_step(action, window_name, strict, by_class)
        except SymphonyError as exc:
            log.warning("setup on %s: %s window %r: %s", self.controller.url, action, window_name, clip(str(exc)))

    def _fill(self, command: Command) -> Command:
        width, height = self.screen_size
        values = {
            "{CLIENT_PASSWORD}": self.password,
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


def _matched(until: dict[str, Any], result: CommandResult | None) -> bool:
    if result is None:
        return False
    return (
        ("returncode" in until and result.returncode == until["returncode"])
        or ("stdout" in until and until["stdout"] in result.output)
        or ("stderr" in until and until["stderr"] in result.error)
    )
