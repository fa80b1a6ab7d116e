"""`python -m testkit.waa_server --port N` on $DISPLAY."""

from __future__ import annotations

import argparse

import uvicorn

from testkit.waa_server.app import build_app

parser = argparse.ArgumentParser(description=__doc__)
parser.add_argument("--port", type=int, required=True)
args = parser.parse_args()
uvicorn.run(build_app(), host="127.0.0.1", port=args.port, log_level="warning")
