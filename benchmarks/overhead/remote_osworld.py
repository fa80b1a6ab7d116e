"""The OSWorld backend against OSWorld's own client (`PythonController`), on the same controller, in one run.

Starts its own Xvfb at 1920x1080 with openbox and three text-filled xterms, and the stand-in OSWorld controller
(testkit/osworld_controller) on it over loopback. Rounds interleave the two clients, so load hits both alike:

- click: `PythonController.execute_python_command("pyautogui.click(x, y)")` (what OSWorld's agents send) vs
  `OsworldDesktop.click` (xdotool through one `/execute`);
- key: `pyautogui.press('shift')` vs `OsworldDesktop.press(['shift'])`;
- screenshot: `PythonController.get_screenshot()` vs the backend's `/screenshot` bytes, and its `grab` of the
  whole screen (the bytes decoded into the frame the tools use);
- screenshot transport: the two clients fetching one recorded screenshot (the controller's PNG) from a static HTTP
  server (testkit/file_host.py, in this process), so the controller's grab and PNG encoding, which dominate the
  route and vary with load, are left out: what the client itself costs;
- a trivial `/execute` of `true`, the floor of any command on the machine.

Targets (issue 24): click and key at <= 1/4 of the client's median, screenshot bytes (end to end, and the transport
alone) no slower than the client's.
Prints a markdown report and writes it to --output. Run from the repository root:

    python -m benchmarks.overhead.remote_osworld
"""

from __future__ import annotations

import argparse
import sys
import tempfile
from collections.abc import Callable
from pathlib import Path
from urllib.parse import urlsplit

from desktop_env.controllers.python import PythonController

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
from symphony_mcp.desktop.remote.osworld import OsworldDesktop
from symphony_mcp.desktop.remote.osworld_controller import OsworldController
from symphony_mcp.imaging.geometry import Rect
from testkit.file_host import file_host
from testkit.osworld_controller.process import running_controller

DEFAULT_OUTPUT = REPO / "benchmarks" / "results" / "remote_osworld.md"
ACTION_RATIO_TARGET = 0.25
SCREENSHOT_RATIO_TARGET = 1.0
# The screenshot cases get rounds of their own, more of them: the machine's grab and PNG encoding take most of the
# route and vary with load (p90 ~2x the median here), so 48 samples left the ratio of medians +-10% from run to run.
SCREENSHOT_ROUNDS = 144


def run(args: argparse.Namespace) -> dict[str, Stats]:
    with running_controller(Path(tempfile.mkdtemp(prefix="symphony-remote-bench-")) / "vm-home") as vm:
        upstream = PythonController("127.0.0.1", vm.port)
        controller = OsworldController(vm.url, 30)
        backend = OsworldDesktop(controller, type_interval=0.0, click_interval=0.08)
        screen = Rect(left=0, top=0, width=1920, height=1080)
        x, y = INPUT_TARGET.x, INPUT_TARGET.y
        with file_host({"/screenshot": controller.screenshot()}) as recorded:
            upstream_recorded = PythonController("127.0.0.1", int(urlsplit(recorded.base).port or 0))
            controller_recorded = OsworldController(recorded.base, 30)
            cases: dict[str, Callable[[], object]] = {
                "click: PythonController": lambda: upstream.execute_python_command(f"pyautogui.click({x}, {y})"),
                "click: OSWorld backend": lambda: backend.click(INPUT_TARGET, "left", 1, []),
                "key: PythonController": lambda: upstream.execute_python_command("pyautogui.press('shift')"),
                "key: OSWorld backend": lambda: backend.press(["shift"]),
                "screenshot: PythonController": upstream.get_screenshot,
                "screenshot: OSWorld backend, bytes": controller.screenshot,
                "screenshot: OSWorld backend, grab (decoded frame)": lambda: backend.grab(screen),
                "screenshot transport: PythonController": upstream_recorded.get_screenshot,
                "screenshot transport: OSWorld backend": controller_recorded.screenshot,
                "/execute true (floor)": lambda: controller.execute(["true"]),
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
        ("click", ratio("click: OSWorld backend", "click: PythonController"), ACTION_RATIO_TARGET),
        ("key", ratio("key: OSWorld backend", "key: PythonController"), ACTION_RATIO_TARGET),
        (
            "screenshot (bytes)",
            ratio("screenshot: OSWorld backend, bytes", "screenshot: PythonController"),
            SCREENSHOT_RATIO_TARGET,
        ),
        (
            "screenshot transport (one recorded PNG, static server)",
            ratio("screenshot transport: OSWorld backend", "screenshot transport: PythonController"),
            SCREENSHOT_RATIO_TARGET,
        ),
    ]
    return versus_report(
        "OSWorld backend vs OSWorld's PythonController, same controller",
        facts,
        [
            f"- Display: own Xvfb at {RESOLUTION}x24 with openbox and three text-filled xterms; the stand-in OSWorld "
            "controller (testkit/osworld_controller) on it over loopback, its `python` this environment's (pyautogui)",
            f"- Screenshot cases: {args.screenshot_repeats} rounds of their own after the other cases' rounds, "
            "interleaved the same way (the Repetitions line is the other cases')",
        ],
        command,
        (args.repeats, args.warmups),
        "PythonController",
        checks,
        results,
        "PythonController's click starts a Python interpreter on the machine, imports pyautogui and sleeps "
        "pyautogui's default 0.1 s pause; the backend sends one xdotool command through `/execute`. The screenshot "
        "route is the same for both (`GET /screenshot`), and the controller's grab and PNG encoding take most of it; "
        "`grab` adds decoding the PNG into the frame the tools use. The transport cases fetch the same recorded PNG "
        "from a static server: the client's own cost (PythonController opens a connection per request, the backend "
        "keeps one).",
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
    sys.exit(main())
