"""`python -m testkit.osworld_controller --port N [--bash-script-500] [--wedge-when-parallel]` on $DISPLAY."""

from __future__ import annotations

import argparse

import uvicorn

from testkit.osworld_controller.app import Faults, build_app

parser = argparse.ArgumentParser(description=__doc__)
parser.add_argument("--port", type=int, required=True)
parser.add_argument("--bash-script-500", action="store_true", help="answer 500 after running /run_bash_script")
parser.add_argument("--wedge-when-parallel", action="store_true", help="wedge for good on concurrent requests")
args = parser.parse_args()
faults = Faults(bash_script_500=args.bash_script_500, wedge_when_parallel=args.wedge_when_parallel)
uvicorn.run(build_app(faults), host="127.0.0.1", port=args.port, log_level="warning")
