"""What huge input costs the server: time to the answer, the answer's size, and the server's memory (issue 12).

A stdio server (on a virtual display of its own, with a running task) is spawned and sent raw JSON-RPC
lines, one huge argument per call: a 50 MB record_step thought, 10,000 hotkey keys, a
10 MB phrase, a 1 MB open_app target, 100,000 extra region keys, a 1 MB resource URI. For each: the
seconds to the reply, the reply's size, the server's resident memory after the call and its peak so far
(VmRSS, VmHWM from /proc), and the bytes the call added to the server's log.

Run from the repository root: `.venv/bin/python -m benchmarks.robustness.input_bounds` (no display needed). To measure
another source tree with the same environment too, e.g. the code before the bounds: `--before /tmp/prebounds`
(a `git worktree add /tmp/prebounds <commit>`). The report goes to stdout and benchmarks/results/input_bounds.md.
"""

from __future__ import annotations

import argparse
import json
import os
import select
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

from benchmarks.common import REPO, machine_facts, table

INIT = {
    "jsonrpc": "2.0",
    "id": 1,
    "method": "initialize",
    "params": {
        "protocolVersion": "2025-06-18",
        "capabilities": {},
        "clientInfo": {"name": "input-bounds-benchmark", "version": "0"},
    },
}
# A running task with one step, so record_step has a step to annotate (on the server's own virtual display).
SETUP = [("start_task", {"instruction": "input bounds benchmark"}), ("wait", {"seconds": 0})]
REGION_KEYS = {"left": 0, "top": 0, "width": 0, "height": 1} | {f"k{i}": i for i in range(100_000)}
CASES: list[tuple[str, str, dict[str, Any]]] = [
    ("50 MB record_step thought", "tools/call", {"name": "record_step", "arguments": {"thought": "t" * 50_000_000}}),
    ("10,000 hotkey keys", "tools/call", {"name": "hotkey", "arguments": {"keys": ["a"] * 10_000}}),
    ("10 MB find_text phrase", "tools/call", {"name": "find_text", "arguments": {"phrase": "p" * 10_000_000}}),
    ("1 MB open_app target", "tools/call", {"name": "open_app", "arguments": {"target": "/" + "x" * 1_000_000}}),
    ("100,000 extra region keys", "tools/call", {"name": "screenshot", "arguments": {"region": REGION_KEYS}}),
    ("1 MB resource URI", "resources/read", {"uri": "trajectory://" + "a" * 1_000_000 + "/steps"}),
]


def memory_mb(pid: int) -> tuple[float, float]:
    """(resident, peak resident) of a process, in MB."""
    fields = dict(line.split(":", 1) for line in Path(f"/proc/{pid}/status").read_text().splitlines() if ":" in line)
    return int(fields["VmRSS"].split()[0]) / 1024, int(fields["VmHWM"].split()[0]) / 1024


def read_line(process: subprocess.Popen[bytes], timeout: float = 120.0) -> bytes:
    assert process.stdout is not None
    ready, _, _ = select.select([process.stdout], [], [], timeout)
    if not ready:
        raise TimeoutError(f"no reply within {timeout} s")
    return process.stdout.readline()


def send(process: subprocess.Popen[bytes], message: dict[str, Any]) -> None:
    assert process.stdin is not None
    process.stdin.write(json.dumps(message).encode() + b"\n")
    process.stdin.flush()


def measure(source: Path | None) -> list[list[str]]:
    env = {key: os.environ[key] for key in ("PATH", "HOME", "LANG") if key in os.environ}
    if source is not None:
        env["PYTHONPATH"] = str(source)
    rows = []
    with tempfile.TemporaryDirectory() as scratch:
        log = Path(scratch) / "server.log"
        env["SYMPHONY_MEMORY__TRAJECTORY_DIR"] = str(Path(scratch) / "trajectories")
        with log.open("wb") as log_file:
            process = subprocess.Popen(
                [sys.executable, "-m", "symphony_mcp.cli", "serve", "--virtual-display", "always"],
                env=env,
                cwd=scratch,
                stdin=subprocess.PIPE,
                stdout=subprocess.PIPE,
                stderr=log_file,
            )
            try:
                send(process, INIT)
                read_line(process)
                for request_id, (name, arguments) in enumerate(SETUP, start=100):
                    send(
                        process,
                        {
                            "jsonrpc": "2.0",
                            "id": request_id,
                            "method": "tools/call",
                            "params": {"name": name, "arguments": arguments},
                        },
                    )
                    assert not json.loads(read_line(process))["result"].get("isError"), name
                rss, _ = memory_mb(process.pid)
                rows.append(["(after start, a task and one step)", "", "", f"{rss:.0f}", "", ""])
                for request_id, (label, method, params) in enumerate(CASES, start=2):
                    logged = log.stat().st_size
                    start = time.perf_counter()
                    send(process, {"jsonrpc": "2.0", "id": request_id, "method": method, "params": params})
                    reply = read_line(process)
                    seconds = time.perf_counter() - start
                    rss, peak = memory_mb(process.pid)
                    outcome = json.loads(reply)
                    kind = "error" if "error" in outcome or outcome.get("result", {}).get("isError") else "result"
                    rows.append(
                        [
                            label,
                            f"{seconds:.2f}",
                            f"{len(reply):,} ({kind})",
                            f"{rss:.0f}",
                            f"{peak:.0f}",
                            f"{log.stat().st_size - logged:,}",
                        ]
                    )
                longest = max(
                    (
                        len(line)
                        for trajectory in (Path(scratch) / "trajectories").rglob("traj.jsonl")
                        for line in trajectory.read_bytes().splitlines()
                    ),
                    default=0,
                )
                rows.append(["(longest trajectory line, bytes)", "", f"{longest:,}", "", "", ""])
            finally:
                process.terminate()
                process.wait(timeout=10)
    return rows


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--before", type=Path, help="also measure this source tree (e.g. the code before the bounds)")
    parser.add_argument("--output", type=Path, default=REPO / "benchmarks" / "results" / "input_bounds.md")
    args = parser.parse_args()
    header = ["call", "seconds to reply", "reply bytes", "RSS after (MB)", "peak RSS (MB)", "log bytes"]
    command = "`.venv/bin/python -m benchmarks.robustness.input_bounds" + (
        f" --before {args.before}`" if args.before else "`"
    )
    lines = ["# Huge input over stdio", "", f"- Command: {command}", *machine_facts(), ""]
    runs = [("This source", None)] + (
        [(f"Before: {args.before} ({_commit(args.before)})", args.before)] if args.before else []
    )
    for title, source in runs:
        lines += [f"## {title}", "", *table(header, measure(source)), ""]
    report = "\n".join(lines)
    print(report)
    args.output.parent.mkdir(parents=True, exist_ok=True)
    args.output.write_text(report, encoding="utf-8")


def _commit(tree: Path) -> str:
    return subprocess.run(
        ["git", "-C", str(tree), "log", "-1", "--format=%h %s"], capture_output=True, text=True
    ).stdout.strip()


if __name__ == "__main__":
    main()
