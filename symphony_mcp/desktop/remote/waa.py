"""The WindowsAgentArena backend: the `Desktop` of a WAA machine, driven through its server (waa_controller.py).

Pointer and keys run as pyautogui calls inside the server process (`/execute_windows`, waa_code.py): one request
per action, no interpreter started, where WAA's own client sends `/execute` of `python -c "import pyautogui; ..."`.
On Windows, text goes in as Unicode key events (SendInput), which are exact for any character, and windows are
listed, raised and closed through user32. A WAA server on Linux (the tests' stand-in; upstream's imports win32
modules and does not start there) types and lists windows as the OSWorld backend does, with xdotool and wmctrl
through `/execute`: the screen, the pointer and the server's contract are the same.
The coordinate contract: the machine's screen size is the one `/screen_size` reports; a screenshot of another size
(WAA's `/screenshot` is pyautogui's, which on a scaled Windows display may differ) is resized to it.
"""

from __future__ import annotations

import shlex
from collections.abc import Sequence

from symphony_mcp.desktop.keys import normalize_keys
from symphony_mcp.desktop.remote import waa_code
from symphony_mcp.desktop.remote.osworld import OsworldDesktop
from symphony_mcp.desktop.remote.waa_controller import WaaController
from symphony_mcp.desktop.types import Launched, MachineInfo, MouseButton, WindowInfo
from symphony_mcp.errors import InvalidInputError, PolicyError, RemoteActionError, clip
from symphony_mcp.imaging.geometry import Point, Rect
from symphony_mcp.policy.programs import ProgramAllowList

_HOVER_SETTLE_SECONDS = 0.05
_ANSWER_SECONDS = 30  # for the server to answer, beyond what the action takes on purpose
_TYPED_PER_CALL = 400  # characters per request: the server runs one request at a time
_WINDOWS_TYPE_DELAY = 0.002  # between Unicode key events, for a busy app (not measured: no Windows machine here)
# A command that ended this way at once did not start: 127 is POSIX shells' "not found", 9009 cmd.exe's.
_NOT_FOUND = {127: "no such program", 9009: "no such program"}


class WaaDesktop(OsworldDesktop):
    """A WAA machine's screen, pointer, keyboard and windows. Used from the desktop thread."""

    def __init__(
        self,
        controller: WaaController,
        type_interval: float,
        click_interval: float,
        programs: ProgramAllowList | None = None,
    ) -> None:
        super().__init__(controller, type_interval, click_interval, programs)
        self._waa = controller
        self._key_names: list[str] | None = None

    def machine(self) -> MachineInfo:
        if self._machine is None:
            platform = self._waa.platform()
            self._machine = MachineInfo(backend="waa", url=self._waa.url, platform=platform, display=None)
        return self._machine

    @property
    def _windows_machine(self) -> bool:
        return self.machine().platform == "win32"

    def _act(self, hold_keys: Sequence[str], body: str, what: str, seconds: float = 0.0) -> None:
        self._waa.run(waa_code.held(hold_keys, body), what, timeout=seconds + _ANSWER_SECONDS)

    # --- pointer ------------------------------------------------------------------------------
    def move(self, to: Point, duration: float = 0.0) -> None:
        self._act([], waa_code.move(to.x, to.y, duration), "moving the pointer", duration)

    def click(self, at: Point, button: MouseButton, count: int, hold_keys: Sequence[str]) -> None:
        self._act(hold_keys, waa_code.click(at.x, at.y, button, count, self._click_interval), f"{button} click")

    def drag(self, start: Point, end: Point, button: MouseButton, hold_keys: Sequence[str], duration: float) -> None:
        body = waa_code.drag((start.x, start.y), (end.x, end.y), button, duration)
        self._act(hold_keys, body, "drag", duration)

    def scroll(self, at: Point, vertical: int, horizontal: int, hold_keys: Sequence[str]) -> None:
        # Apps route wheel events by the last motion they processed (LocalDesktop.scroll says more).
        moved = None if self.cursor() == at else (at.x, at.y)
        body = waa_code.scroll(moved, _HOVER_SETTLE_SECONDS, vertical, horizontal, self.machine().platform)
        self._act(hold_keys, body, "scroll")

    # --- keyboard -----------------------------------------------------------------------------
    def normalize_keys(self, keys: Sequence[str]) -> list[str]:
        """Key names as the machine's pyautogui knows them (asked once)."""
        if self._key_names is None:
            self._key_names = [str(name) for name in self._waa.ask(waa_code.KEY_NAMES, "listing key names")]
        return normalize_keys(keys, self._key_names)

    def type_text(self, text: str) -> None:
        if not self._windows_machine:
            super().type_text(text)  # xdotool through /execute, as on an OSWorld VM
            return
        delay = max(_WINDOWS_TYPE_DELAY, self._type_delay_ms / 1000 - 0.012)
        for start in range(0, len(text), _TYPED_PER_CALL):
            chunk = text[start : start + _TYPED_PER_CALL]
            self._waa.run(waa_code.type_unicode(chunk, delay), "typing", timeout=len(chunk) * delay + _ANSWER_SECONDS)

    def press(self, keys: Sequence[str]) -> None:
        self._act(keys, "", f"pressing {'+'.join(keys)}")

    def hold_and_press(self, hold_keys: Sequence[str], press_keys: Sequence[str]) -> None:
        self._act(hold_keys, waa_code.keys(press_keys), "pressing keys")

    def key_down(self, key: str) -> None:
        self._waa.run(waa_code.key(key, down=True), f"holding {key}")

    def key_up(self, key: str) -> None:
        self._waa.run(waa_code.key(key, down=False), f"releasing {key}")

    # --- windows and apps ---------------------------------------------------------------------
    def windows(self) -> list[WindowInfo]:
        if not self._windows_machine:
            return super().windows()
        listed = self._waa.ask(waa_code.WINDOWS, "listing windows")
        return [
            WindowInfo(
                id=entry["id"],
                title=entry["title"],
                app=entry["app"],
                pid=entry["pid"] or None,
                rect=Rect(
                    left=entry["rect"][0],
                    top=entry["rect"][1],
                    width=max(1, entry["rect"][2]),
                    height=max(1, entry["rect"][3]),
                ),
                active=entry["active"],
            )
            for entry in listed
        ]

    def _listed(self, window_id: str) -> WindowInfo:
        found = next((window for window in self.windows() if window.id == window_id.lower()), None)
        if found is None:
            raise InvalidInputError(f"no window {clip(window_id)} on {self._waa.url}; list_windows gives ids")
        return found

    def activate_window(self, window_id: str) -> WindowInfo:
        if not self._windows_machine:
            return super().activate_window(window_id)
        window = self._listed(window_id)
        if not self._waa.ask(waa_code.activate_window(int(window.id, 16)), f"focusing window {window.id}"):
            raise RemoteActionError(f"Windows on {self._waa.url} did not bring window {window.id} to the front")
        return self._listed(window.id)

    def close_window(self, window_id: str) -> bool:
        if not self._windows_machine:
            return super().close_window(window_id)
        window = self._listed(window_id)
        return bool(self._waa.ask(waa_code.close_window(int(window.id, 16)), f"closing window {window.id}"))

    def open(self, target: str) -> Launched:
        """A command line, or a file or folder on the machine (opened with its default application: `start` on
        Windows, xdg-open elsewhere), started detached through the machine's shell."""
        if self._programs.entries is not None:
            raise PolicyError(
                "open_app is refused on a remote desktop while SYMPHONY_POLICY__OPEN_APP_ALLOW is set: the allow-list "
                "resolves programs on this host, not on the remote machine"
            )
        if not target.strip():
            raise InvalidInputError("open_app needs a command or a file path on the remote machine")
        is_file = bool(self._waa.ask(f"import os\nanswer = os.path.exists({target!r})", "looking for the file"))
        if is_file:
            command = f'start "" "{target}"' if self._windows_machine else f"xdg-open {shlex.quote(target)}"
        else:
            command = target
        started = self._waa.ask(waa_code.start(command), f"starting {clip(target)}")
        status = started["status"]
        if status not in (None, 0):
            why = _NOT_FOUND.get(status, "it ended at once")
            raise RemoteActionError(
                f"starting {clip(target)} failed on {self._waa.url} (exit status {status}: {why} on this machine)"
            )
        opened_with = "the machine's default application for it" if is_file else None
        return Launched(pid=int(started["pid"]), command=[command], opened_with=opened_with)
