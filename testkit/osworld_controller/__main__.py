"""`python -m testkit.osworld_controller --port N [--bash-script-500] [--wedge-when-parallel]
[--accessibility-500] [--accessibility-file PATH] [--screenshot-flood]` on $DISPLAY."""

from __future__ import annotations

import argparse

import uvicorn

from testkit.osworld_controller.app import Faults, build_app

parser = argparse.ArgumentParser(description=__doc__)
parser.add_argument("--port", type=int, required=True)
parser.add_argument("--bash-script-500", action="store_true", help="answer 500 after running /run_bash_script")
parser.add_argument("--wedge-when-parallel", action="store_true", help="wedge for good on concurrent requests")
parser.add_argument("--accessibility-500", action="store_true", help="answer 500 to /accessibility")
parser.add_argument("--accessibility-file", help="answer this file's text as the /accessibility tree")
parser.add_argument("--screenshot-flood", action="store_true", help="answer /screenshot with bytes without end")
args = parser.parse_args()
faults = Faults(
    bash_script_500=args.bash_script_500,
    wedge_when_parallel=args.wedge_when_parallel,
    accessibility_500=args.accessibility_500,
    accessibility_file=args.accessibility_file,
    screenshot_flood=args.screenshot_flood,
)
uvicorn.run(build_app(faults), host="127.0.0.1", port=args.port, log_level="warning")
