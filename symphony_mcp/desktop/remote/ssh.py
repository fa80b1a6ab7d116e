"""The SSH backend: the `Desktop` of a macOS (MacOSArena-style) or X11 machine, driven by the agent ssh_machine.py
runs there.

Every action is one list of steps sent to the agent (one round trip); held keys are released by the agent even when
a step fails. The coordinate contract: screen coordinates are the machine's input space, which the agent reports:
on macOS that is points (pyautogui's space), while `screencapture` gives pixels, twice as many per axis on a Retina
display; the screenshot is scaled to points here, so a point of the image is a point of the screen. On X11 both
are pixels. Windows are not listed over SSH: those tools say so, the rest work.
"""

from __future__ import annotations

import io
import shlex
import zlib
from collections.abc import Sequence
from typing import Any

from PIL import Image

from symphony_mcp.desktop.keys import normalize_keys
from symphony_mcp.desktop.remote.ssh_machine import SshMachine
from symphony_mcp.desktop.types import Launched, MachineInfo, MonitorInfo, MouseButton, WindowInfo
from symphony_mcp.desktop.x11_input import KEY_NAMES, keysym_name
from symphony_mcp.errors import InvalidInputError, PolicyError, RemoteActionError, clip
from symphony_mcp.imaging.downscale import downscale
from symphony_mcp.imaging.geometry import Point, Rect
from symphony_mcp.policy.programs import ProgramAllowList

_BUTTONS: dict[MouseButton, int] = {"left": 1, "middle": 2, "right": 3}
_MAC_KEYS = {"win": "command", "winleft": "command", "winright": "command", "printscreen": "printscreen"}
_RAW_FORMATS = {"RGB+zlib": "RGB", "BGRX+zlib": "BGRX"}  # the agent's X11 screenshots: zlib'd pixels
_HOVER_SETTLE_SECONDS = 0.05
_MOTION_STEP_SECONDS = 0.02
_LAUNCH = (
    'command -v -- "$1" >/dev/null || { echo "no program $1 on this machine" >&2; exit 127; }; '
    'nohup "$@" >/dev/null 2>&1 </dev/null & echo $!'
)

Step = list[Any]


class SshDesktop:
    """A remote machine's screen, pointer and keyboard over SSH. Used from the desktop thread."""

    def __init__(
        self,
        machine: SshMachine,
        type_interval: float,
        click_interval: float,
        programs: ProgramAllowList | None = None,
        display: str = ":0",
    ) -> None:
        self._machine = machine
        self._type_interval = type_interval
        self._click_interval = click_interval
        self._programs = programs or ProgramAllowList()
        self._display = display

    @property
    def _mac(self) -> bool:
        return self._machine.hello().platform == "darwin"

    # --- screen -------------------------------------------------------------------------------
    def machine(self) -> MachineInfo:
        """The machine as its agent reports it; the X display the agent uses on X11 (a Mac has none)."""
        return MachineInfo(
            backend="ssh",
            url=str(self._machine.target),
            platform=self._machine.hello().platform,
            display=None if self._mac else self._display,
        )

    def _screen_rect(self) -> Rect:
        width, height = self._machine.hello().screen
        return Rect(left=0, top=0, width=width, height=height)

    def monitors(self) -> list[MonitorInfo]:
        """The machine's main screen, as the union (0) and as monitor 1."""
        screen = self._screen_rect()
        return [MonitorInfo(index=0, screen_rect=screen), MonitorInfo(index=1, screen_rect=screen, primary=True)]

    def grab(self, area: Rect) -> Image.Image:
        region = {"x": area.left, "y": area.top, "width": area.width, "height": area.height}
        reply, data = self._machine.request({"op": "grab", **region}, "taking a screenshot", read=True)
        if reply["format"] in _RAW_FORMATS:
            pixels = zlib.decompress(data)
            return Image.frombytes("RGB", (area.width, area.height), pixels, "raw", _RAW_FORMATS[reply["format"]])
        image = Image.open(io.BytesIO(data)).convert("RGB")
        screen = self._screen_rect()
        if image.size != (screen.width, screen.height):  # Retina: pixels to points
            image = image.resize((screen.width, screen.height), Image.Resampling.LANCZOS)
        return image.crop((area.left, area.top, area.left + area.width, area.top + area.height))

    def grab_scaled(self, area: Rect, size: tuple[int, int]) -> Image.Image:
        return downscale(self.grab(area), size)

    def cursor(self) -> Point:
        reply, _ = self._machine.request({"op": "cursor"}, "reading the pointer", read=True)
        x, y = reply["at"]
        return Point(x=x, y=y)

    # --- pointer ------------------------------------------------------------------------------
    def _steps(self, steps: list[Step], what: str, seconds: float = 0.0) -> None:
        self._machine.request({"op": "steps", "steps": steps}, what, seconds=seconds)

    def move(self, to: Point, duration: float = 0.0) -> None:
        steps = [["move", to.x, to.y]] if duration <= 0 else _glide(self.cursor(), to, duration)
        self._steps(steps, "moving the pointer", duration)

    def click(self, at: Point, button: MouseButton, count: int, hold_keys: Sequence[str]) -> None:
        steps: list[Step] = [["move", at.x, at.y]]
        for clicked in range(count):
            if clicked:
                steps.append(["sleep", self._click_interval])
            steps += [["down", _BUTTONS[button]], ["up", _BUTTONS[button]]]
        self._steps(self._held(hold_keys, steps), f"{button} click", count * self._click_interval)

    def drag(self, start: Point, end: Point, button: MouseButton, hold_keys: Sequence[str], duration: float) -> None:
        number = _BUTTONS[button]
        steps = [["move", start.x, start.y], ["down", number], *_glide(start, end, duration), ["up", number]]
        self._steps(self._held(hold_keys, steps), "drag", duration)

    def scroll(self, at: Point, vertical: int, horizontal: int, hold_keys: Sequence[str]) -> None:
        steps: list[Step] = []
        if self.cursor() != at:  # apps route wheel events by the last motion they processed (LocalDesktop.scroll)
            steps += [["move", at.x, at.y], ["sleep", _HOVER_SETTLE_SECONDS]]
        steps.append(["wheel", vertical, horizontal])
        self._steps(self._held(hold_keys, steps), "scroll")

    # --- keyboard -----------------------------------------------------------------------------
    def normalize_keys(self, keys: Sequence[str]) -> list[str]:
        return normalize_keys(keys, KEY_NAMES)

    def _key(self, key: str) -> str:
        """The agent's name of a key: pyautogui's on macOS, the X keysym's on X11."""
        return _MAC_KEYS.get(key, key) if self._mac else keysym_name(key)

    def type_text(self, text: str) -> None:
        seconds = len(text) * self._type_interval
        self._steps([["type", text, self._type_interval]], "typing", seconds)

    def press(self, keys: Sequence[str]) -> None:
        """A chord: every key down in order, then up in reverse."""
        self._steps(self._held(keys, []), f"pressing {'+'.join(keys)}")

    def hold_and_press(self, hold_keys: Sequence[str], press_keys: Sequence[str]) -> None:
        steps = [step for key in press_keys for step in self._held([key], [])]
        self._steps(self._held(hold_keys, steps), "pressing keys")

    def key_down(self, key: str) -> None:
        self._steps([["keydown", self._key(key)]], f"holding {key}")

    def key_up(self, key: str) -> None:
        self._steps([["keyup", self._key(key)]], f"releasing {key}")

    def _held(self, keys: Sequence[str], steps: list[Step]) -> list[Step]:
        names = [self._key(key) for key in keys]
        return [*(["keydown", n] for n in names), *steps, *(["keyup", n] for n in reversed(names))]

    # --- windows and apps ---------------------------------------------------------------------
    def _no_windows(self) -> RemoteActionError:
        return RemoteActionError(
            f"windows are not listed or switched over SSH ({self._machine.target}); use screenshot and click, or "
            "open_app to bring an application forward"
        )

    def windows(self) -> list[WindowInfo]:
        raise self._no_windows()

    def active_window(self) -> WindowInfo | None:
        return None

    def activate_window(self, window_id: str) -> WindowInfo:
        raise self._no_windows()

    def close_window(self, window_id: str) -> bool:
        raise self._no_windows()

    def open(self, target: str) -> Launched:
        """macOS: `open` (a path or URL with its default application, anything else as an application's name);
        X11: xdg-open for a path on the machine, anything else a command line. The allow-list names this host's
        programs, so it cannot vouch for the machine's: with one set, open_app is refused here."""
        if self._programs.entries is not None:
            raise PolicyError(
                "open_app is refused on a remote desktop while SYMPHONY_POLICY__OPEN_APP_ALLOW is set: the allow-list "
                "resolves programs on this host, not on the remote machine"
            )
        exists = self._machine.run(["test", "-e", target], b"", 30, 0).status == 0
        if self._mac:
            argv = ["open", target] if exists or "://" in target else ["open", "-a", target]
        else:
            argv = ["xdg-open", target] if exists else shlex.split(target)
        if not argv:
            raise InvalidInputError("open_app needs a command or a file path on the remote machine")
        launch = ["env", f"DISPLAY={self._display}", "sh", "-c", _LAUNCH, "launch", *argv]
        result = self._machine.run(launch, b"", 30, 4096)
        if result.status != 0:
            error = result.stderr.decode("utf-8", "replace").strip()
            raise RemoteActionError(f"starting {clip(argv[0])} failed (exit status {result.status}): {clip(error)}")
        opened_with = f"{argv[0]} (the machine's default application for it)" if exists else None
        return Launched(pid=int(result.stdout.split()[-1]), command=argv, opened_with=opened_with)

    def close(self) -> None:
        """Nothing to release: the connection is shared with the code executor and lives on."""


def _glide(start: Point, end: Point, duration: float) -> list[Step]:
    """Motion steps from start to end over `duration`: apps ignore a pointer that jumps."""
    count = max(2, int(duration / _MOTION_STEP_SECONDS))
    steps: list[Step] = []
    for step in range(1, count + 1):
        x = round(start.x + (end.x - start.x) * step / count)
        y = round(start.y + (end.y - start.y) * step / count)
        steps += [["move", x, y], ["sleep", duration / count]]
    return steps
