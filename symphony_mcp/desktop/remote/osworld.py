"""The OSWorld backend: the `Desktop` of an OSWorld VM, driven through its controller (osworld_controller.py).

Input goes through xdotool on the machine, one `/execute` per action (a click ~10 ms over loopback), instead of
OSWorld's own client, which starts Python, imports pyautogui and sleeps pyautogui's pause for every action
(~230 ms). Text: the characters the keymap lacks are bound to spare keycodes first (one python3 call on the
machine), then `xdotool type` sends them at 12 ms a character; xdotool alone lost characters under load (it remaps
one scratch keycode per character, which clients read late), pyautogui drops every non-ASCII one.
Windows are listed and switched with wmctrl, which OSWorld's controller itself uses.
The coordinate contract: the machine's screen size is the one `/screen_size` reports; a screenshot of another
size (a scaled VM display) is resized to it, so screen pixels are the machine's.
"""

from __future__ import annotations

import io
import logging
import shlex
import time
from collections.abc import Sequence

from PIL import Image

from symphony_mcp.desktop.keys import normalize_keys
from symphony_mcp.desktop.remote.osworld_controller import OsworldController
from symphony_mcp.desktop.types import Launched, MachineInfo, MonitorInfo, MouseButton, WindowInfo
from symphony_mcp.desktop.x11_input import KEY_NAMES, keysym_name
from symphony_mcp.errors import InvalidInputError, PolicyError, RemoteActionError, clip
from symphony_mcp.imaging.downscale import downscale
from symphony_mcp.imaging.geometry import Point, Rect
from symphony_mcp.policy.programs import ProgramAllowList

log = logging.getLogger(__name__)
_BUTTONS: dict[MouseButton, str] = {"left": "1", "middle": "2", "right": "3"}
_WHEEL = {"up": "4", "down": "5", "left": "6", "right": "7"}
TYPE_DELAY_MS = 12  # xdotool type drops or swaps characters below this (RESEARCH-NEXT §8: 0/5 exact at 0)
_TYPED_PER_CALL = 400  # characters per /execute: 400 * 12 ms stays far below the controller's 120 s bound
_NO_DELAY = ("--delay", "0")  # xdotool's key commands sleep 12 ms per key by default; the local backend sends none
_HOVER_SETTLE_SECONDS = 0.05
_MOTION_STEP_SECONDS = 0.02
_ACTIVATE_SECONDS = 2.0
# Run on the machine by its python3 (which has python-xlib: OSWorld's controller drives pyautogui with it): binds
# each character of argv[1] that the keymap lacks to a spare keycode, so `xdotool type` finds it mapped and sends
# it without remapping a scratch keycode per character, which clients read late (characters lost, measured here).
# The bindings stay, as LocalDesktop's typer keeps its own; without spare keycodes xdotool remaps as before.
_BIND_SPARE_KEYCODES = """
import sys
from Xlib import display
d = display.Display()
first = d.display.info.min_keycode
mapping = d.get_keyboard_mapping(first, d.display.info.max_keycode - first + 1)
spare = [first + i for i, syms in enumerate(mapping) if not any(syms)]
for char in dict.fromkeys(sys.argv[1]):
    code = ord(char)
    sym = code if 0x20 <= code <= 0x7E or 0xA0 <= code <= 0xFF else 0x01000000 + code
    if spare and not d.keysym_to_keycode(sym):
        d.change_keyboard_mapping(spare.pop(0), [(sym, sym)])
d.sync()
"""
_MAPPING_SETTLE_SECONDS = 0.03
_LAUNCH = (
    'command -v -- "$1" >/dev/null || { echo "no program $1 on this machine" >&2; exit 127; }; '
    'setsid -- "$@" >/dev/null 2>&1 </dev/null & echo $!'
)


class OsworldDesktop:
    """An OSWorld VM's screen, pointer, keyboard and windows. Used from the desktop thread."""

    def __init__(
        self,
        controller: OsworldController,
        type_interval: float,
        click_interval: float,
        programs: ProgramAllowList | None = None,
    ) -> None:
        self._controller = controller
        self._type_delay_ms = max(TYPE_DELAY_MS, round(type_interval * 1000))
        self._click_interval = click_interval
        self._programs = programs or ProgramAllowList()
        self._screen: Rect | None = None
        self._machine: MachineInfo | None = None

    # --- screen -------------------------------------------------------------------------------
    def machine(self) -> MachineInfo:
        """The VM as its controller describes it; the controller does not name the VM's X display."""
        if self._machine is None:
            platform = self._controller.platform()
            self._machine = MachineInfo(backend="osworld", url=self._controller.url, platform=platform, display=None)
        return self._machine

    def _screen_rect(self) -> Rect:
        if self._screen is None:
            width, height = self._controller.screen_size()
            self._screen = Rect(left=0, top=0, width=width, height=height)
        return self._screen

    def monitors(self) -> list[MonitorInfo]:
        """The machine's one screen, as the union (0) and as monitor 1."""
        screen = self._screen_rect()
        return [MonitorInfo(index=0, screen_rect=screen), MonitorInfo(index=1, screen_rect=screen, primary=True)]

    def grab(self, area: Rect) -> Image.Image:
        """The machine's screenshot decoded once; converted, resized and cropped only where it must be (each is a
        copy of the whole frame)."""
        screen = self._screen_rect()
        image: Image.Image = Image.open(io.BytesIO(self._controller.screenshot()))
        image.load()  # decoded here, so a broken PNG fails this call, not a later reader of the frame
        image = image.convert("RGB") if image.mode != "RGB" else image
        if image.size != (screen.width, screen.height):
            image = image.resize((screen.width, screen.height), Image.Resampling.BILINEAR)
        if (area.left, area.top, area.width, area.height) != (0, 0, *image.size):
            image = image.crop((area.left, area.top, area.left + area.width, area.top + area.height))
        return image

    def grab_scaled(self, area: Rect, size: tuple[int, int]) -> Image.Image:
        return downscale(self.grab(area), size)

    def cursor(self) -> Point:
        x, y = self._controller.cursor()
        return Point(x=x, y=y)

    # --- pointer ------------------------------------------------------------------------------
    def _xdotool(self, steps: list[str], what: str, timeout: float = 30) -> None:
        try:
            self._controller.check(["xdotool", *steps], what, timeout)
        except RemoteActionError as exc:
            if "No such file or directory" not in str(exc):
                raise
            raise RemoteActionError(
                f"{what} failed: xdotool is not installed on {self._controller.url}, and the OSWorld backend sends "
                "pointer and keys through it; install it there (sudo apt-get install xdotool wmctrl)"
            ) from exc

    def move(self, to: Point, duration: float = 0.0) -> None:
        steps = ["mousemove", str(to.x), str(to.y)] if duration <= 0 else self._glide(self.cursor(), to, duration)
        self._xdotool(steps, "moving the pointer", timeout=duration + 30)

    @staticmethod
    def _glide(start: Point, end: Point, duration: float) -> list[str]:
        """Motion steps from start to end over `duration`, in one xdotool chain: apps ignore a pointer that jumps."""
        count = max(2, int(duration / _MOTION_STEP_SECONDS))
        steps: list[str] = []
        for step in range(1, count + 1):
            x = round(start.x + (end.x - start.x) * step / count)
            y = round(start.y + (end.y - start.y) * step / count)
            steps += ["mousemove", str(x), str(y), "sleep", f"{duration / count:.3f}"]
        return steps

    def click(self, at: Point, button: MouseButton, count: int, hold_keys: Sequence[str]) -> None:
        # xdotool's click sleeps its --delay (default 100 ms) after every click, the last too: none here, and the
        # pause between the clicks of a double click is a step of its own
        pause = ["sleep", f"{self._click_interval:g}"]
        steps = ["mousemove", str(at.x), str(at.y)]
        for index in range(count):
            steps += [*(pause if index else []), "click", *_NO_DELAY, _BUTTONS[button]]
        self._xdotool(self._held(hold_keys, steps), f"{button} click")

    def drag(self, start: Point, end: Point, button: MouseButton, hold_keys: Sequence[str], duration: float) -> None:
        steps = [
            "mousemove",
            str(start.x),
            str(start.y),
            "mousedown",
            _BUTTONS[button],
            *self._glide(start, end, duration),
            "mouseup",
            _BUTTONS[button],
        ]
        self._xdotool(self._held(hold_keys, steps), "drag", timeout=duration + 30)

    def scroll(self, at: Point, vertical: int, horizontal: int, hold_keys: Sequence[str]) -> None:
        steps: list[str] = []
        if self.cursor() != at:
            # Apps route wheel events by the last motion they processed (LocalDesktop.scroll says more).
            steps += ["mousemove", str(at.x), str(at.y), "sleep", str(_HOVER_SETTLE_SECONDS)]
        for clicks, positive, negative in ((vertical, "up", "down"), (horizontal, "right", "left")):
            if clicks:
                steps += [
                    "click",
                    "--repeat",
                    str(abs(clicks)),
                    *_NO_DELAY,
                    _WHEEL[positive if clicks > 0 else negative],
                ]
        self._xdotool(self._held(hold_keys, steps), "scroll")

    # --- keyboard -----------------------------------------------------------------------------
    def normalize_keys(self, keys: Sequence[str]) -> list[str]:
        return normalize_keys(keys, KEY_NAMES)

    def type_text(self, text: str) -> None:
        beyond_ascii = "".join(sorted({char for char in text if not " " <= char <= "~" and char not in "\n\t"}))
        if beyond_ascii:
            bound = self._controller.execute(["python3", "-c", _BIND_SPARE_KEYCODES, beyond_ascii])
            if bound.ok:
                time.sleep(_MAPPING_SETTLE_SECONDS)
            else:  # e.g. a python3 without python-xlib: xdotool still types, remapping as it goes (it may lose some)
                log.warning(
                    "could not bind keys for %d characters on %s: %s",
                    len(beyond_ascii),
                    self._controller.url,
                    clip(bound.error.strip() or bound.output.strip()),
                )
        for start in range(0, len(text), _TYPED_PER_CALL):
            chunk = text[start : start + _TYPED_PER_CALL]
            seconds = len(chunk) * self._type_delay_ms / 1000 + 30
            self._xdotool(["type", "--delay", str(self._type_delay_ms), "--", chunk], "typing", timeout=seconds)

    def press(self, keys: Sequence[str]) -> None:
        """A chord: every key down in order, then up in reverse."""
        self._xdotool(self._held(keys, []), f"pressing {'+'.join(keys)}")

    def hold_and_press(self, hold_keys: Sequence[str], press_keys: Sequence[str]) -> None:
        steps = [step for key in press_keys for step in ("key", *_NO_DELAY, keysym_name(key))]
        self._xdotool(self._held(hold_keys, steps), "pressing keys")

    def key_down(self, key: str) -> None:
        self._xdotool(["keydown", *_NO_DELAY, keysym_name(key)], f"holding {key}")

    def key_up(self, key: str) -> None:
        self._xdotool(["keyup", *_NO_DELAY, keysym_name(key)], f"releasing {key}")

    @staticmethod
    def _held(keys: Sequence[str], steps: list[str]) -> list[str]:
        names = [keysym_name(key) for key in keys]
        downs = [step for name in names for step in ("keydown", *_NO_DELAY, name)]
        ups = [step for name in reversed(names) for step in ("keyup", *_NO_DELAY, name)]
        return [*downs, *steps, *ups]

    # --- windows and apps ---------------------------------------------------------------------
    def windows(self) -> list[WindowInfo]:
        listing = self._controller.check(
            ["bash", "-c", "wmctrl -lpGx && xprop -root _NET_ACTIVE_WINDOW"], "listing windows (wmctrl, xprop)"
        )
        return parse_windows(listing)

    def active_window(self) -> WindowInfo | None:
        return next((window for window in self.windows() if window.active), None)

    def _window(self, window_id: str) -> WindowInfo:
        wanted = _window_id(window_id)
        found = next((window for window in self.windows() if window.id == wanted), None)
        if found is None:
            raise InvalidInputError(f"no window {clip(window_id)} on {self._controller.url}; list_windows gives ids")
        return found

    def activate_window(self, window_id: str) -> WindowInfo:
        window = self._window(window_id)
        self._controller.check(["wmctrl", "-i", "-a", window.id], f"focusing window {window.id}")
        deadline = time.monotonic() + _ACTIVATE_SECONDS
        while time.monotonic() < deadline:
            current = self._window(window.id)
            if current.active:
                return current
            time.sleep(0.05)
        raise RemoteActionError(f"the window manager of {self._controller.url} did not make {window.id} active")

    def close_window(self, window_id: str) -> bool:
        window = self._window(window_id)
        self._controller.check(["wmctrl", "-i", "-c", window.id], f"closing window {window.id}")
        return True

    def open(self, target: str) -> Launched:
        """A file or folder on the machine opens with its default application (xdg-open); anything else is a
        command line, started detached. The allow-list names this host's programs, so it cannot vouch for the
        machine's: with one set, open_app is refused here."""
        if self._programs.entries is not None:
            raise PolicyError(
                "open_app is refused on a remote desktop while SYMPHONY_POLICY__OPEN_APP_ALLOW is set: the allow-list "
                "resolves programs on this host, not on the remote machine"
            )
        is_file = self._controller.execute(["test", "-e", target]).ok
        argv = ["xdg-open", target] if is_file else shlex.split(target)
        if not argv:
            raise InvalidInputError("open_app needs a command or a file path on the remote machine")
        pid = self._controller.check(["bash", "-c", _LAUNCH, "launch", *argv], f"starting {clip(argv[0])}")
        opened_with = "xdg-open (the machine's default application for it)" if is_file else None
        return Launched(pid=int(pid.strip()), command=argv, opened_with=opened_with)

    def close(self) -> None:
        """Nothing to release: the controller client is shared by every user of the machine and lives on."""


def _window_id(text: str) -> str:
    try:
        return hex(int(text, 16))
    except ValueError:
        raise InvalidInputError(f"a window id is hex such as 0x1e00003, got {clip(text)}") from None


def _wm_class(text: str) -> str:
    """The class half of wmctrl's `instance.Class` (either half may hold dots: `org.gnome.Foo.Org.gnome.Foo`)."""
    parts = text.split(".")
    half = len(parts) // 2
    if len(parts) % 2 == 0 and [p.lower() for p in parts[:half]] == [p.lower() for p in parts[half:]]:
        return ".".join(parts[half:])
    return text.split(".", 1)[-1]


def parse_windows(listing: str) -> list[WindowInfo]:
    """Windows from `wmctrl -lpGx` lines followed by xprop's `_NET_ACTIVE_WINDOW(WINDOW): window id # 0x...`."""
    lines = listing.splitlines()
    active = next((line.rsplit("#", 1)[-1].strip() for line in lines if line.startswith("_NET_ACTIVE_WINDOW")), "")
    active_id = _window_id(active.split(",")[0]) if active.startswith("0x") else None
    windows = []
    for line in lines:
        fields = line.split(None, 8)
        if len(fields) < 8 or not fields[0].startswith("0x"):
            continue
        wid, desktop, pid, x, y, width, height, wm_class = fields[:8]
        title = fields[8].split(None, 1)[1] if len(fields) == 9 and " " in fields[8] else ""
        window_id = _window_id(wid)
        windows.append(
            WindowInfo(
                id=window_id,
                title=title,
                app=_wm_class(wm_class),
                pid=int(pid) if int(pid) > 0 else None,
                rect=Rect(left=int(x), top=int(y), width=max(1, int(width)), height=max(1, int(height))),
                active=window_id == active_id,
                desktop=int(desktop),
            )
        )
    return windows
