"""Python that the WAA backend runs inside the machine's server process (`/execute_windows`), one action per request.

Pointer and keys go through the pyautogui the server has already imported (its pause set to 0), on every platform.
Windows-only pieces use user32 through ctypes, where pyautogui falls short there: `typewrite` drops non-ASCII, and
its wheel sends raw wheel units (1/120 of a notch) and scrolls vertically when asked for horizontal.
Each builder returns source text with its values inlined as Python literals (repr), never formatted into code.
"""

from __future__ import annotations

from collections.abc import Sequence

WHEEL_DELTA = 120  # one notch of a Windows wheel, in its wheel units

# WAA's server leaves pyautogui's fail-safe on: a call with the pointer in a screen corner would raise.
_HELD = """
import time, pyautogui
pyautogui.FAILSAFE = False
_held = {held!r}
for _key in _held:
    pyautogui.keyDown(_key, _pause=False)
try:
{body}
finally:
    for _key in reversed(_held):
        pyautogui.keyUp(_key, _pause=False)
"""


def _indent(source: str) -> str:
    return "\n".join("    " + line for line in source.strip("\n").splitlines())


def held(hold_keys: Sequence[str], body: str) -> str:
    """`body` run with `hold_keys` down (released in reverse order, whatever the body did)."""
    return _HELD.format(held=list(hold_keys), body=_indent(body or "pass"))


def move(x: int, y: int, duration: float) -> str:
    return f"pyautogui.moveTo({x!r}, {y!r}, duration={duration!r}, _pause=False)"


def click(x: int, y: int, button: str, count: int, interval: float) -> str:
    return (
        f"pyautogui.moveTo({x!r}, {y!r}, _pause=False)\n"
        f"for _index in range({count!r}):\n"
        f"    if _index:\n"
        f"        time.sleep({interval!r})\n"
        f"    pyautogui.click(button={button!r}, _pause=False)"
    )


def drag(start: tuple[int, int], end: tuple[int, int], button: str, duration: float) -> str:
    return (
        f"pyautogui.moveTo({start[0]!r}, {start[1]!r}, _pause=False)\n"
        f"pyautogui.mouseDown(button={button!r}, _pause=False)\n"
        f"try:\n"
        f"    pyautogui.moveTo({end[0]!r}, {end[1]!r}, duration={duration!r}, _pause=False)\n"
        f"finally:\n"
        f"    pyautogui.mouseUp(button={button!r}, _pause=False)"
    )


def scroll(at: tuple[int, int] | None, settle: float, vertical: int, horizontal: int, platform: str) -> str:
    """Wheel notches at the pointer (moved to `at` first); on Windows through user32, in whole notches."""
    lines = [f"pyautogui.moveTo({at[0]!r}, {at[1]!r}, _pause=False)", f"time.sleep({settle!r})"] if at else []
    if platform == "win32":
        lines += [
            "import ctypes",
            f"for _flag, _notches in ((0x0800, {vertical!r}), (0x1000, {horizontal!r})):",
            "    if _notches:",
            f"        ctypes.windll.user32.mouse_event(_flag, 0, 0, _notches * {WHEEL_DELTA}, 0)",
        ]
    else:
        lines += [
            *([f"pyautogui.scroll({vertical!r}, _pause=False)"] if vertical else []),
            *([f"pyautogui.hscroll({horizontal!r}, _pause=False)"] if horizontal else []),
        ]
    return "\n".join(lines)


def keys(press: Sequence[str]) -> str:
    return "\n".join(f"pyautogui.press({key!r}, _pause=False)" for key in press)


def key(name: str, down: bool) -> str:
    return held([], f"pyautogui.{'keyDown' if down else 'keyUp'}({name!r}, _pause=False)")


KEY_NAMES = "import pyautogui\nanswer = sorted(pyautogui.KEYBOARD_KEYS)"
SERVER_PYTHON = "import sys\nanswer = sys.executable"

# Windows: each UTF-16 unit as a KEYEVENTF_UNICODE key (exact for any character, surrogate pairs included), Enter
# and Tab as their virtual keys (a Unicode CR or TAB is not a key press to most apps). SendInput's count of events
# inserted says whether Windows took them (0: blocked, e.g. by UIPI against an elevated window).
_TYPE_UNICODE = """
import ctypes, time
from ctypes import wintypes

class _Key(ctypes.Structure):
    _fields_ = [("wVk", wintypes.WORD), ("wScan", wintypes.WORD), ("dwFlags", wintypes.DWORD),
                ("time", wintypes.DWORD), ("dwExtraInfo", ctypes.c_size_t)]

class _Mouse(ctypes.Structure):
    _fields_ = [("dx", wintypes.LONG), ("dy", wintypes.LONG), ("mouseData", wintypes.DWORD),
                ("dwFlags", wintypes.DWORD), ("time", wintypes.DWORD), ("dwExtraInfo", ctypes.c_size_t)]

class _Union(ctypes.Union):
    _fields_ = [("ki", _Key), ("mi", _Mouse)]

class _Input(ctypes.Structure):
    _fields_ = [("type", wintypes.DWORD), ("u", _Union)]

_user32 = ctypes.WinDLL("user32", use_last_error=True)
_text = {text!r}
_units = _text.encode("utf-16-le")
for _i in range(0, len(_units), 2):
    _unit = int.from_bytes(_units[_i:_i + 2], "little")
    _virtual = {{10: 0x0D, 9: 0x09}}.get(_unit)
    _pair = (_Input * 2)()
    for _n, _flags in enumerate((0, 2)):
        _pair[_n].type = 1
        if _virtual:
            _pair[_n].u.ki = _Key(_virtual, 0, _flags, 0, 0)
        else:
            _pair[_n].u.ki = _Key(0, _unit, 4 | _flags, 0, 0)
    if _user32.SendInput(2, _pair, ctypes.sizeof(_Input)) != 2:
        raise OSError("SendInput inserted no key: " + str(ctypes.get_last_error()))
    time.sleep({delay!r})
"""


def type_unicode(text: str, delay: float) -> str:
    return _TYPE_UNICODE.format(text=text, delay=delay)


# Windows: the visible top-level windows with a title, as user32 lists them (front to back).
WINDOWS = """
import ctypes
from ctypes import wintypes
_user32 = ctypes.windll.user32
_found = []
_active = _user32.GetForegroundWindow()

@ctypes.WINFUNCTYPE(wintypes.BOOL, wintypes.HWND, wintypes.LPARAM)
def _each(hwnd, _):
    if _user32.IsWindowVisible(hwnd) and _user32.GetWindowTextLengthW(hwnd):
        title = ctypes.create_unicode_buffer(512)
        _user32.GetWindowTextW(hwnd, title, 512)
        klass = ctypes.create_unicode_buffer(256)
        _user32.GetClassNameW(hwnd, klass, 256)
        pid = wintypes.DWORD()
        _user32.GetWindowThreadProcessId(hwnd, ctypes.byref(pid))
        rect = wintypes.RECT()
        _user32.GetWindowRect(hwnd, ctypes.byref(rect))
        _found.append({"id": hex(hwnd), "title": title.value, "app": klass.value, "pid": pid.value,
                       "rect": [rect.left, rect.top, rect.right - rect.left, rect.bottom - rect.top],
                       "active": hwnd == _active})
    return True

_user32.EnumWindows(_each, 0)
answer = _found
"""


def activate_window(hwnd: int) -> str:
    """Restore and raise; Windows may refuse SetForegroundWindow to a background process, so minimise and restore
    is the fallback (as WAA's own `/setup/activate_window` does)."""
    return (
        "import ctypes, time\n_user32 = ctypes.windll.user32\n"
        f"_hwnd = {hwnd!r}\n"
        "if _user32.IsIconic(_hwnd):\n    _user32.ShowWindow(_hwnd, 9)\n"
        "if not _user32.SetForegroundWindow(_hwnd):\n"
        "    _user32.ShowWindow(_hwnd, 6)\n    time.sleep(0.2)\n    _user32.ShowWindow(_hwnd, 9)\n"
        "answer = _user32.GetForegroundWindow() == _hwnd"
    )


def close_window(hwnd: int) -> str:
    """WM_CLOSE, as the window's close button sends it (the app may ask to save first)."""
    return f"import ctypes\nanswer = bool(ctypes.windll.user32.PostMessageW({hwnd!r}, 0x0010, 0, 0))"


def start(command: str) -> str:
    """A command line started through the machine's shell, detached; its pid, and its status if it ended at once
    (a program that is not there ends within the wait, with a shell's "not found" status)."""
    return (
        "import subprocess, sys\n"
        "_detach = {'creationflags': 0x00000008 | 0x00000200} if sys.platform == 'win32' "
        "else {'start_new_session': True}\n"
        f"_process = subprocess.Popen({command!r}, shell=True, stdin=subprocess.DEVNULL, "
        "stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, **_detach)\n"
        "try:\n    _status = _process.wait(timeout=0.5)\nexcept subprocess.TimeoutExpired:\n    _status = None\n"
        "answer = {'pid': _process.pid, 'status': _status}"
    )


# The path as the server's `/file` and `/setup/upload` read it (both expand ~ and environment variables), and what is
# there (links followed, as those routes follow them): `kind` is None for nothing there, `error` an OSError's text.
_FILE_STAT = """
import os, stat
_path = os.path.expandvars(os.path.expanduser({path!r}))
answer = {{"path": _path, "absolute": os.path.isabs(_path), "kind": None, "size": 0, "error": None}}
try:
    _found = os.stat(_path)
except (FileNotFoundError, NotADirectoryError):
    pass
except OSError as _failure:
    answer["error"] = _failure.strerror or str(_failure)
else:
    answer["size"] = _found.st_size
    _kinds = {{stat.S_IFREG: "file", stat.S_IFDIR: "directory"}}
    answer["kind"] = _kinds.get(stat.S_IFMT(_found.st_mode), "other")
"""


def file_stat(path: str) -> str:
    """`answer`: the expanded path, whether it is absolute, its kind (file, directory, other or None) and size."""
    return _FILE_STAT.format(path=path)


def make_parents(path: str) -> str:
    """Make the folders above `path` (an expanded path): WAA's `/setup/upload` saves without making them."""
    return f"import os\nos.makedirs(os.path.dirname({path!r}) or '.', exist_ok=True)"
