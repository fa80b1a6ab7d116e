"""The WAA backend against the requests WindowsAgentArena's own client sends, on the same server, in one run.

Starts its own Xvfb at 1920x1080 with openbox and three text-filled xterms, and the stand-in WAA server
(testkit/waa_server) on it over loopback. WAA's client (`desktop_env/controllers/python.py`) cannot be imported
here (no copy of its source on this machine; it hard-codes port 5000), so its requests are sent as it builds them,
with `requests.post` and no session, as it does. Rounds interleave the cases, so load hits both alike:

- click: WAA's `execute_python_command("pyautogui.click(x, y)")` (`/execute` of `python -c` with its prefix
  `import pyautogui; import time; pyautogui.FAILSAFE = False; ...`) vs `WaaDesktop.click` (pyautogui inside the
  server through one `/execute_windows`);
- key: `pyautogui.press('shift')` the same two ways;
- screenshot: WAA's `get_screenshot()` (`GET /screenshot`) vs the backend's bytes of the same route, and its `grab`
  of the whole screen (the bytes decoded into the frame the tools use);
- screenshot transport: the two clients fetching one recorded screenshot (the server's PNG) from a static HTTP
  server (testkit/file_host.py, in this process): what the client itself costs, without the server's grab and PNG
  encoding;
- floors: `/execute_windows` of `pass` and `/execute` of `true`.

Targets (issue 24): click and key at <= 1/4 of the client's median, screenshot bytes (end to end, and the transport
alone) no slower than the client's.
Prints a markdown report and writes it to --output. Run from the repository root:

    python -m benchmarks.overhead.remote_waa
"""

from __future__ import annotations

import argparse
import tempfile
from collections.abc import Callable
from pathlib import Path

import requests

from benchmarks.common import (
    INPUT_TARGET,
    REPO,
    RESOLUTION,
    Stats,
    interleaved,
    output_parser,
    publish_desktop_benchmark,
    versus_report,
)
from symphony_mcp.desktop.remote.waa import WaaDesktop
from symphony_mcp.desktop.remote.waa_controller import WaaController
from symphony_mcp.imaging.geometry import Rect
from testkit.file_host import file_host
from testkit.waa_server.process import running_waa_server

DEFAULT_OUTPUT = REPO / "benchmarks" / "results" / "remote_waa.md"
ACTION_RATIO_TARGET = 0.25
SCREENSHOT_RATIO_TARGET = 1.0
# The screenshot cases get rounds of their own, more of them: the machine's grab and PNG encoding take most of the
# route and vary with load (p90 ~2x the median here), so 48 samples left the ratio of medians +-10% from run to run.
SCREENSHOT_ROUNDS = 144
SHOT = "/screenshot"
WAA_PREFIX = "import pyautogui; import time; pyautogui.FAILSAFE = False; {command}"  # its PythonController's


def waa_client_command(url: str, command: str) -> object:
    """WAA's `PythonController.execute_python_command`, request for request."""
    payload = {"command": ["python", "-c", WAA_PREFIX.format(command=command)], "shell": False}
    return requests.post(f"{url}/execute", json=payload, timeout=90).json()


def run(args: argparse.Namespace) -> dict[str, Stats]:
    with running_waa_server(Path(tempfile.mkdtemp(prefix="symphony-waa-bench-")) / "vm-home") as vm:
        controller = WaaController(vm.url, 30)
        backend = WaaDesktop(controller, type_interval=0.0, click_interval=0.08)
        screen = Rect(left=0, top=0, width=1920, height=1080)
        x, y = INPUT_TARGET.x, INPUT_TARGET.y
        backend.normalize_keys(["shift"])  # the machine's key names, asked once
        with file_host({SHOT: controller.screenshot()}) as recorded:
            controller_recorded = WaaController(recorded.base, 30)
            cases: dict[str, Callable[[], object]] = {
                "click: WAA client": lambda: waa_client_command(vm.url, f"pyautogui.click({x}, {y})"),
                "click: WAA backend": lambda: backend.click(INPUT_TARGET, "left", 1, []),
                "key: WAA client": lambda: waa_client_command(vm.url, "pyautogui.press('shift')"),
                "key: WAA backend": lambda: backend.press(["shift"]),
                "screenshot: WAA client": lambda: requests.get(f"{vm.url}/screenshot", timeout=90).content,
                "screenshot: WAA backend, bytes": controller.screenshot,
                "screenshot: WAA backend, grab (decoded frame)": lambda: backend.grab(screen),
                "screenshot transport: WAA client": lambda: (
                    requests.get(f"{recorded.base}/screenshot", timeout=90).content
                ),
                "screenshot transport: WAA backend": controller_recorded.screenshot,
                "/execute_windows pass (floor)": lambda: controller.run("pass", "nothing"),
            }
            shots = {name: cases.pop(name) for name in list(cases) if name.startswith("screenshot")}
            results = interleaved(cases, args.repeats, args.warmups)
            results |= interleaved(shots, args.screenshot_repeats, args.warmups)
            controller_recorded.close()
        controller.close()
        return results


def render(results: dict[str, Stats], args: argparse.Namespace, command: str, facts: list[str]) -> str:
    def ratio(ours: str, theirs: str) -> float:
        return results[ours].median / results[theirs].median

    checks = [
        ("click", ratio("click: WAA backend", "click: WAA client"), ACTION_RATIO_TARGET),
        ("key", ratio("key: WAA backend", "key: WAA client"), ACTION_RATIO_TARGET),
        (
            "screenshot (bytes)",
            ratio("screenshot: WAA backend, bytes", "screenshot: WAA client"),
            SCREENSHOT_RATIO_TARGET,
        ),
        (
            "screenshot transport (one recorded PNG, static server)",
            ratio("screenshot transport: WAA backend", "screenshot transport: WAA client"),
            SCREENSHOT_RATIO_TARGET,
        ),
    ]
    return versus_report(
        "WAA backend vs WindowsAgentArena's client requests, same server",
        facts,
        [
            f"- Display: own Xvfb at {RESOLUTION}x24 with openbox and three text-filled xterms; the stand-in WAA "
            "server (testkit/waa_server) on it over loopback, its `python` this environment's (pyautogui)",
            "- WAA's client: its requests as its `PythonController` builds them (`requests.post`, no session); the "
            "client itself is not importable here (no copy of its source; it hard-codes port 5000)",
            f"- Screenshot cases: {args.screenshot_repeats} rounds of their own after the other cases' rounds, "
            "interleaved the same way (the Repetitions line is the other cases')",
        ],
        command,
        (args.repeats, args.warmups),
        "WAA client",
        checks,
        results,
        "WAA's client action starts a Python interpreter on the machine and imports pyautogui, whose default 0.1 s "
        "pause then runs in that child; the backend runs the pyautogui call inside the server process (imported "
        "once, its pause 0) through `/execute_windows`. The screenshot route is the same for both, and the server's "
        "grab and PNG encoding take most of it; the transport cases fetch the same recorded PNG from a static server: "
        "the client's own cost (WAA's client opens a connection per request, the backend keeps one).",
    )


def parse_args(argv: list[str] | None = None) -> argparse.Namespace:
    parser = output_parser(__doc__, DEFAULT_OUTPUT)
    parser.add_argument("--repeats", type=int, default=48, help="measured rounds of the actions")
    parser.add_argument(
        "--screenshot-repeats", type=int, default=SCREENSHOT_ROUNDS, help="measured rounds of the screenshot cases"
    )
    parser.add_argument("--warmups", type=int, default=2, help="unmeasured rounds first")
    return parser.parse_args(argv)


def main(argv: list[str] | None = None) -> int:
    args = parse_args(argv)
    return publish_desktop_benchmark(
        lambda _display: run(args), lambda results, command, facts: render(results, args, command, facts), args.output
    )


if __name__ == "__main__":
    raise SystemExit(main())
