"""The agent the SSH backend uploads once to the remote machine and runs for the whole session (ssh.py).

It is self-contained (the standard library plus the machine's own input module) because it runs under the
machine's python3, not this package's. Two modes:

- `serve`: JSON lines on stdin/stdout, one request and one answer at a time. An answer is `{"ok": true, ...}` or
  `{"ok": false, "error": "..."}`; a screenshot's answer names a byte count and those bytes follow it raw.
  Input runs as one list of steps per action (keys down, move, buttons, keys up), so an action costs one round
  trip; keys and buttons a failed step left down are released before the error is answered.
  On macOS input goes through pyautogui (as MacOSArena's image has it), text through the pasteboard (pbcopy, then
  cmd+v; the previous pasteboard is put back), screenshots through `screencapture -x`, and the screen is measured in
  points (pyautogui's space; the screenshot is in pixels, twice as many on Retina: the backend scales it).
  On X11 input goes through XTest (python-xlib), each character typed through its own key (bound to a spare keycode
  when the keymap lacks it), and screenshots are the root window's pixels.
- `run SECONDS WORKDIR LANGUAGE`: runs the code read from stdin in WORKDIR (made if missing) in a new session,
  kills that session after SECONDS and exits with the code's status (128 + signal when a signal ended it).
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import tempfile
import time
import zlib
from typing import Any, BinaryIO

_MAPPING_SETTLE_SECONDS = 0.05  # clients re-read the keymap on MappingNotify: keys sent sooner may use the old one
_KILLED = 128 + signal.SIGKILL


class X11Input:
    """Pointer, keys, text and pixels of the X display in $DISPLAY."""

    def __init__(self) -> None:
        from Xlib import XK, X, display
        from Xlib.ext import xtest

        XK.load_keysym_group("xf86")
        self.X, self.XK, self.xtest = X, XK, xtest
        self.display = display.Display()
        self.root = self.display.screen().root
        self._spare: list[int] | None = None

    def screen(self) -> tuple[int, int]:
        screen = self.display.screen()
        return screen.width_in_pixels, screen.height_in_pixels

    def cursor(self) -> tuple[int, int]:
        pointer = self.root.query_pointer()
        return pointer.root_x, pointer.root_y

    def move(self, x: int, y: int) -> None:
        self.xtest.fake_input(self.display, self.X.MotionNotify, x=x, y=y)
        self.display.flush()

    def button(self, number: int, down: bool) -> None:
        self.xtest.fake_input(self.display, self.X.ButtonPress if down else self.X.ButtonRelease, number)
        self.display.flush()

    def wheel(self, vertical: int, horizontal: int) -> None:
        for clicks, positive, negative in ((vertical, 4, 5), (horizontal, 7, 6)):
            for _ in range(abs(clicks)):
                self.button(positive if clicks > 0 else negative, True)
                self.button(positive if clicks > 0 else negative, False)

    def key(self, name: str, down: bool) -> None:
        """`name` is an X keysym name (the backend converts its key vocabulary)."""
        keysym = self.XK.string_to_keysym(name)
        if not keysym:
            raise ValueError(f"no X keysym named {name!r}")
        keycode = self.display.keysym_to_keycode(keysym) or self._bind([keysym])[keysym]
        self.xtest.fake_input(self.display, self.X.KeyPress if down else self.X.KeyRelease, keycode)
        self.display.flush()

    def type(self, text: str, interval: float) -> None:
        keysyms = [_keysym_of(char) for char in text]
        for start in range(0, len(keysyms), 64):  # bind at most 64 missing characters at a time
            batch = keysyms[start : start + 64]
            bound = self._bind(list(dict.fromkeys(batch)))
            for keysym in batch:
                self._type_one(keysym, bound)
                time.sleep(interval)

    def _type_one(self, keysym: int, bound: dict[int, int]) -> None:
        if keysym in bound:
            levels = [(0, bound[keysym])]
        else:
            levels = sorted((index, code) for code, index in self.display.keysym_to_keycodes(keysym) if index < 2)
        index, keycode = levels[0]
        shift = self.display.keysym_to_keycode(self.XK.string_to_keysym("Shift_L")) if index == 1 else 0
        press, release = self.X.KeyPress, self.X.KeyRelease
        events = [(press, shift), (press, keycode), (release, keycode), (release, shift)]
        for kind, code in events:
            if code:
                self.xtest.fake_input(self.display, kind, code)
        self.display.flush()

    def _bind(self, keysyms: list[int]) -> dict[int, int]:
        """Spare keycodes for the keysyms no key reaches at level 0 or 1 (those are typed with their own key)."""
        missing = [sym for sym in keysyms if not any(i < 2 for _, i in self.display.keysym_to_keycodes(sym))]
        if not missing:
            return {}
        first = self.display.display.info.min_keycode
        if self._spare is None:
            count = self.display.display.info.max_keycode - first + 1
            mapping = self.display.get_keyboard_mapping(first, count)
            self._spare = [first + i for i, syms in enumerate(mapping) if not any(syms)]
        if len(missing) > len(self._spare):
            raise ValueError(f"the keymap has {len(self._spare)} spare keycodes for {len(missing)} characters")
        bound = dict(zip(missing, self._spare, strict=False))
        for keysym, keycode in bound.items():
            self.display.change_keyboard_mapping(keycode, [(keysym, keysym)])
        self.display.sync()
        time.sleep(_MAPPING_SETTLE_SECONDS)
        return bound

    def settle(self) -> None:
        """Wait until the X server has processed every event sent (answering earlier would race the next read)."""
        self.display.sync()

    def grab(self, x: int, y: int, width: int, height: int) -> tuple[str, bytes]:
        """The pixels, zlib'd at level 1: that shrinks a desktop 10-200x for ~40 ms of CPU, where the raw 6-8 MB of a
        1080p screen take hundreds of ms through the SSH cipher. Pillow's XCB grab when the machine has it (~60 ms
        for 1080p, measured), else python-xlib's, which parses the reply in Python (~160 ms)."""
        try:
            from PIL import ImageGrab

            grabbed = ImageGrab.grab(bbox=(x, y, x + width, y + height), xdisplay=os.environ.get("DISPLAY"))
            return "RGB+zlib", zlib.compress(grabbed.convert("RGB").tobytes(), 1)
        except ImportError:
            image = self.root.get_image(x, y, width, height, self.X.ZPixmap, 0xFFFFFFFF)
            return "BGRX+zlib", zlib.compress(image.data, 1)


def _keysym_of(char: str) -> int:
    code = ord(char)
    if char == "\n":
        return 0xFF0D  # Return
    if char == "\t":
        return 0xFF09  # Tab
    return code if 0x20 <= code <= 0x7E or 0xA0 <= code <= 0xFF else 0x01000000 + code


class MacInput:
    """Pointer and keys through pyautogui (points), text through the pasteboard, pixels through screencapture."""

    def __init__(self) -> None:
        import pyautogui

        pyautogui.FAILSAFE = False
        pyautogui.PAUSE = 0
        self.gui: Any = pyautogui

    def screen(self) -> tuple[int, int]:
        width, height = self.gui.size()
        return int(width), int(height)

    def cursor(self) -> tuple[int, int]:
        x, y = self.gui.position()
        return int(x), int(y)

    def move(self, x: int, y: int) -> None:
        self.gui.moveTo(x, y)

    def button(self, number: int, down: bool) -> None:
        name = {1: "left", 2: "middle", 3: "right"}[number]
        (self.gui.mouseDown if down else self.gui.mouseUp)(button=name)

    def wheel(self, vertical: int, horizontal: int) -> None:
        if vertical:
            self.gui.scroll(vertical)
        if horizontal:
            self.gui.hscroll(horizontal)

    def key(self, name: str, down: bool) -> None:
        (self.gui.keyDown if down else self.gui.keyUp)(name)

    def type(self, text: str, interval: float) -> None:
        previous = subprocess.run(["pbpaste"], capture_output=True, check=False).stdout
        subprocess.run(["pbcopy"], input=text.encode("utf-8"), check=True)
        self.gui.hotkey("command", "v")
        time.sleep(max(interval, 0.1))  # the application reads the pasteboard after the keys
        subprocess.run(["pbcopy"], input=previous, check=True)

    def settle(self) -> None:
        """pyautogui's calls return once the events are posted."""

    def grab(self, x: int, y: int, width: int, height: int) -> tuple[str, bytes]:
        """The whole screen in pixels as PNG: the backend scales it to points and crops."""
        with tempfile.TemporaryDirectory() as folder:
            path = os.path.join(folder, "screen.png")
            subprocess.run(["screencapture", "-x", "-t", "png", path], check=True, capture_output=True)
            with open(path, "rb") as file:
                return "PNG", file.read()


class Agent:
    def __init__(self, device: Any) -> None:
        self.device = device

    def answer(self, request: dict[str, Any]) -> tuple[dict[str, Any], bytes]:
        op = request.get("op")
        if op == "hello":
            width, height = self.device.screen()
            return {"platform": sys.platform, "screen": [width, height], "pid": os.getpid()}, b""
        if op == "cursor":
            return {"at": list(self.device.cursor())}, b""
        if op == "grab":
            image_format, data = self.device.grab(request["x"], request["y"], request["width"], request["height"])
            return {"format": image_format, "bytes": len(data)}, data
        if op == "steps":
            self.steps(request["steps"])
            return {}, b""
        raise ValueError(f"unknown op {op!r}")

    def steps(self, steps: list[list[Any]]) -> None:
        held_keys: list[str] = []
        held_buttons: list[int] = []
        try:
            for name, *args in steps:
                if name == "move":
                    self.device.move(int(args[0]), int(args[1]))
                elif name in ("down", "up"):
                    self.device.button(int(args[0]), name == "down")
                    _track(held_buttons, int(args[0]), name == "down")
                elif name in ("keydown", "keyup"):
                    self.device.key(str(args[0]), name == "keydown")
                    _track(held_keys, str(args[0]), name == "keydown")
                elif name == "wheel":
                    self.device.wheel(int(args[0]), int(args[1]))
                elif name == "type":
                    self.device.type(str(args[0]), float(args[1]))
                elif name == "sleep":
                    time.sleep(float(args[0]))
                else:
                    raise ValueError(f"unknown step {name!r}")
            self.device.settle()
        except Exception:
            for key in reversed(held_keys):
                self.device.key(key, False)
            for number in held_buttons:
                self.device.button(number, False)
            raise


def _track(held: list[Any], item: Any, down: bool) -> None:
    if down:
        held.append(item)
    elif item in held:
        held.remove(item)


def serve(stdin: BinaryIO, stdout: BinaryIO) -> None:
    device = MacInput() if sys.platform == "darwin" else X11Input()
    agent = Agent(device)
    for line in stdin:
        data = b""
        try:
            reply, data = agent.answer(json.loads(line))
            reply["ok"] = True
        except Exception as exc:
            reply = {"ok": False, "error": f"{type(exc).__name__}: {exc}"}
        stdout.write(json.dumps(reply).encode() + b"\n" + data)
        stdout.flush()


def run(seconds: float, workdir: str, language: str) -> int:
    code = sys.stdin.buffer.read().decode("utf-8")
    os.makedirs(os.path.expanduser(workdir), exist_ok=True)
    argv = [sys.executable, "-c", code] if language == "python" else ["bash", "-c", code]
    child = subprocess.Popen(argv, cwd=os.path.expanduser(workdir), stdin=subprocess.DEVNULL, start_new_session=True)
    try:
        status = child.wait(timeout=seconds)
    except subprocess.TimeoutExpired:
        os.killpg(child.pid, signal.SIGKILL)
        child.wait()
        return _KILLED
    return 128 - status if status < 0 else status


if __name__ == "__main__":
    if sys.argv[1] == "serve":
        serve(sys.stdin.buffer, sys.stdout.buffer)
    else:
        sys.exit(run(float(sys.argv[2]), sys.argv[3], sys.argv[4]))
