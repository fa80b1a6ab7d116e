"""One MiniWoB++ task window: the system Chromium in kiosk mode on an environment's display, driven over CDP.

The agent must see and act on a real X window with real input, so Chromium is started as an ordinary program on
the environment's display (not by Playwright's launcher, which would own its window) and Playwright only attaches
over the DevTools protocol (`connect_over_cdp`) to load pages, seed and start episodes and read rewards. Chromium
picks its own debugging port (`--remote-debugging-port=0`) and writes it to DevToolsActivePort in its profile, so
parallel environments never race for a port.
"""

from __future__ import annotations

import asyncio
import contextlib
import math
import os
import signal
import subprocess
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import mss
from playwright.async_api import Browser, Page, Playwright
from playwright.async_api import Error as PlaywrightError
from Xlib.display import Display
from Xlib.error import DisplayError as XError

from symphony_mcp.desktop.accessibility import app_arguments, app_environment
from symphony_mcp.desktop.virtual_display import WINDOW_MANAGER_FIX, has_window_manager, tied_to_this_process
from symphony_mcp.errors import SymphonyError
from symphony_mcp.search.chromium import LAUNCH_ARGS

# Long enough for any agent run (setTimeout's limit is 2**31-1 ms; more would fire at once): the episode ends by the
# agent's doing, not by MiniWoB's 10-30 s timer, which is meant for a policy acting every few milliseconds.
EPISODE_MAX_MS = 24 * 3600 * 1000
START_TIMEOUT = 30.0
PAGE_CSS = (325, 210)  # MiniWoB's task (160x210) and its reward column beside it, in CSS px

# Seed, start the episode, and make the START cover inert (and its own colour again): after the episode ends MiniWoB
# shows the cover again and a click on it would start a new episode, resetting WOB_DONE_GLOBAL and the reward the
# agent earned.
_START_EPISODE = """([seed, maxMs]) => {
  core.EPISODE_MAX_TIME = maxMs;
  Math.seedrandom(seed);
  core.startEpisodeReal();
  core.cover_div.onclick = null;
  core.cover_div.style.backgroundColor = '';
  window.SYMPHONY_SEED = seed;
  return core.getUtterance();
}"""
_READ_REWARD = """() => ({
  seed: window.SYMPHONY_SEED === undefined ? null : window.SYMPHONY_SEED,
  done: WOB_DONE_GLOBAL, raw: WOB_RAW_REWARD_GLOBAL, reward: WOB_REWARD_GLOBAL, reason: WOB_REWARD_REASON,
})"""
MARKER = (1, 2, 3)  # the START cover's colour while an episode is being started (open_episode)
_MARK_COVER = "color => { core.cover_div.style.backgroundColor = color; }"
# The kiosk window fills the screen once the window manager has made it full-screen.
_FULL_SCREEN = "() => innerWidth >= screen.width && innerHeight >= screen.height"  # CSS px, both


class TaskWindowError(SymphonyError, RuntimeError):
    """The task window could not be started or used; the message says why."""


@dataclass(frozen=True)
class EpisodeResult:
    done: bool
    raw_reward: float
    reward: float  # MiniWoB's time-discounted reward (meaningless with EPISODE_MAX_MS; kept for the record)
    reason: str | None


def fitted_zoom(zoom: float, screen: tuple[int, int]) -> float:
    """`zoom`, or the largest that still shows the whole page on a screen of `screen` pixels (e.g. 1280x800)."""
    fits = min(screen[0] / PAGE_CSS[0], screen[1] / PAGE_CSS[1])
    return zoom if zoom <= fits else math.floor(fits * 100) / 100


def screen_size(display: str) -> tuple[int, int]:
    """The X screen's size in pixels."""
    try:
        connection = Display(display)
    except (XError, OSError) as exc:
        raise TaskWindowError(f"cannot open display {display} for the task window: {exc}") from None
    try:
        screen = connection.screen()
        return screen.width_in_pixels, screen.height_in_pixels
    finally:
        connection.close()


class TaskWindow:
    """Chromium showing MiniWoB++ task pages full-screen at `zoom` on `display`; one per environment."""

    def __init__(self, executable: str, display: str, profile: Path, zoom: float) -> None:
        self.executable, self.display, self.profile, self.zoom = executable, display, profile, zoom
        self.process: subprocess.Popen[bytes] | None = None
        self._browser: Browser | None = None
        self._page: Page | None = None

    @property
    def alive(self) -> bool:
        return (
            self.process is not None
            and self.process.poll() is None
            and self._browser is not None
            and self._browser.is_connected()
            and self._page is not None
            and not self._page.is_closed()
        )

    async def start(self, playwright: Playwright) -> None:
        if not await asyncio.to_thread(has_window_manager, self.display):  # else the full-screen wait times out
            raise TaskWindowError(
                f"display {self.display} has no window manager, and the kiosk window fills the screen only under "
                f"one: {WINDOW_MANAGER_FIX}"
            )
        self.profile.mkdir(parents=True, exist_ok=True)
        port_file = self.profile / "DevToolsActivePort"
        port_file.unlink(missing_ok=True)
        browser = app_arguments([self.executable, *LAUNCH_ARGS])  # its page in the accessibility tree (elements)
        command = [
            *tied_to_this_process(),  # a killed runner leaves no browser behind
            *browser,
            "--kiosk",
            f"--force-device-scale-factor={self.zoom:g}",
            f"--user-data-dir={self.profile}",
            "--remote-debugging-address=127.0.0.1",
            "--remote-debugging-port=0",
            "--noerrdialogs",
            "--disable-session-crashed-bubble",
            "--disable-infobars",
            "about:blank",
        ]
        self.process = subprocess.Popen(
            command,
            # XDG_CONFIG_HOME: the crash handler's database goes into the profile, not ~/.config/chromium.
            env=app_environment(
                {**os.environ, "DISPLAY": self.display, "XDG_CONFIG_HOME": str(self.profile / "config")}
            ),
            stdin=subprocess.DEVNULL,
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
            start_new_session=True,  # its own process group: close() ends the browser's helpers with it
        )
        try:
            port = await self._debugging_port(port_file)
            self._browser = await playwright.chromium.connect_over_cdp(f"http://127.0.0.1:{port}")
            context = self._browser.contexts[0]
            self._page = context.pages[0] if context.pages else await context.new_page()
            await self._wait(_FULL_SCREEN, "the window to fill the screen")
        except BaseException:
            await self.close()
            raise

    async def _debugging_port(self, port_file: Path) -> int:
        deadline = time.monotonic() + START_TIMEOUT
        assert self.process is not None
        while time.monotonic() < deadline:
            if self.process.poll() is not None:
                raise TaskWindowError(
                    f"Chromium ({self.executable}) exited with status {self.process.returncode} on display "
                    f"{self.display}; is the display running?"
                )
            with contextlib.suppress(OSError, ValueError, IndexError):  # absent, or written but still empty
                return int(port_file.read_text().split()[0])
            await asyncio.sleep(0.05)
        raise TaskWindowError(f"Chromium did not open its debugging port within {START_TIMEOUT:g} s")

    async def _wait(self, predicate: str, what: str) -> None:
        try:
            await self.page.wait_for_function(predicate, timeout=START_TIMEOUT * 1000, polling=50)
        except PlaywrightError as exc:
            raise TaskWindowError(f"timed out waiting for {what}: {exc.message.splitlines()[0]}") from None

    @property
    def page(self) -> Page:
        if self._page is None:
            raise TaskWindowError("the task window is not started")
        return self._page

    async def open_episode(self, url: str, seed: int) -> str:
        """Load a task page and start its episode with `seed`; returns the utterance once the X screen shows it.

        Chromium paints to the X window a moment after the page's own frame, and under load a screenshot taken
        right away showed the previous task. So the new page's START cover is first given a colour nothing else
        has (MARKER) and seen on the screen, then the episode is started and the marker seen gone.
        """
        try:
            await self.page.goto(url, wait_until="load", timeout=START_TIMEOUT * 1000)
            await self._wait("() => typeof core === 'object' && core.cover_div !== null", "MiniWoB's start screen")
            await self.page.bring_to_front()
            await self.page.evaluate(_MARK_COVER, f"rgb{MARKER}")
            await self._on_screen(True, "the task page")
            utterance: str = await self.page.evaluate(_START_EPISODE, [seed, EPISODE_MAX_MS])
            await self._wait("() => WOB_TASK_READY === true", "the task to be ready")
            await self._on_screen(False, "the started episode")
        except PlaywrightError as exc:
            raise TaskWindowError(f"could not start the episode at {url}: {exc.message.splitlines()[0]}") from None
        return utterance

    async def _on_screen(self, marked: bool, what: str) -> None:
        """Wait until the X screen shows the START cover in MARKER's colour (marked) or no longer (not marked)."""
        spot = {"left": round(10 * self.zoom), "top": round(10 * self.zoom), "width": 1, "height": 1}  # off the text
        deadline = time.monotonic() + START_TIMEOUT
        with mss.MSS(display=self.display) as screen:
            while (screen.grab(spot).pixel(0, 0) == MARKER) != marked:
                if time.monotonic() > deadline:
                    raise TaskWindowError(
                        f"the screen of {self.display} did not show {what} within {START_TIMEOUT:g} s"
                    )
                await asyncio.sleep(0.01)

    async def read_episode(self, url: str, seed: int) -> EpisodeResult | str:
        """The episode's result from the page, or why it cannot be read (the page was left or reloaded)."""
        if not self.alive:
            return "the task window was closed"
        if self.page.url != url:
            return f"the task page was left (the window shows {self.page.url})"
        try:
            state: dict[str, Any] = await self.page.evaluate(_READ_REWARD)
        except PlaywrightError as exc:
            if not self.alive:  # it went away after the check above
                return "the task window was closed"
            return f"the page could not be read: {exc.message.splitlines()[0]}"
        if state["seed"] != seed:
            return "the task page was reloaded after the episode started"
        return EpisodeResult(bool(state["done"]), float(state["raw"]), float(state["reward"]), state["reason"])

    async def close(self) -> None:
        """Disconnect and end Chromium with every process it started (renderers, zygotes, GPU and crash handlers)."""
        browser, self._browser, self._page = self._browser, None, None
        if browser is not None:
            with contextlib.suppress(PlaywrightError):
                await browser.close()  # for a CDP connection: disconnects, Chromium keeps running
        process, self.process = self.process, None
        if process is None:
            return
        with contextlib.suppress(ProcessLookupError):
            os.killpg(process.pid, signal.SIGTERM)
        with contextlib.suppress(subprocess.TimeoutExpired):
            await asyncio.to_thread(process.wait, 10)
        with contextlib.suppress(ProcessLookupError):  # the browser, if stuck, and any helper left behind
            os.killpg(process.pid, signal.SIGKILL)
        await asyncio.to_thread(process.wait)
        # Chromium's crash handler runs in a session of its own and ends a moment after the browser: wait for it,
        # so that a closed window leaves no process behind.
        deadline = time.monotonic() + 10
        while (left := processes_of(self.profile)) and time.monotonic() < deadline:
            await asyncio.sleep(0.05)
        for pid in left:
            with contextlib.suppress(ProcessLookupError):
                os.kill(pid, signal.SIGKILL)


def processes_of(profile: Path) -> list[int]:
    """Live processes started for this profile: the browser and its helpers (--user-data-dir) and its crash
    handler (--database inside it)."""
    found = []
    names = (f"--user-data-dir={profile}".encode(), f"{profile}/".encode())
    for proc in Path("/proc").glob("[0-9]*"):
        with contextlib.suppress(OSError, IndexError):
            arguments = (proc / "cmdline").read_bytes().split(b"\0")
            mine = any(arg == names[0] or names[1] in arg for arg in arguments)
            if mine and (proc / "stat").read_text().rsplit(")", 1)[1].split()[0] != "Z":
                found.append(int(proc.name))
    return found
