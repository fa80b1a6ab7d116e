"""`python -m testkit.osworld_controller --port N [--bash-script-500] [--wedge-when-parallel]
[--accessibility-500]` on $DISPLAY."""

from __future__ import annotations

import argparse

import uvicorn

from testkit.osworld_controller.app import Faults, build_app

parser = argparse.ArgumentParser(description=__doc__)
parser.add_argument("--port", type=int, required=True)
parser.add_argument("--bash-script-500", action="store_true", help="answer 500 after running /run_bash_script")
parser.add_argument("--wedge-when-parallel", action="store_true", help="wedge for good on concurrent requests")
parser.add_argument("--accessibility-500", action="store_true", help="answer 500 to /accessibility")
args = parser.parse_args()
faults = Faults(
    bash_script_500=args.bash_script_500,
    wedge_when_parallel=args.wedge_when_parallel,
    accessibility_500=args.accessibility_500,
)
uvicorn.run(build_app(faults), host="127.0.0.1", port=args.port, log_level="warning")
