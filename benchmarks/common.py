"""What the benchmarks share: their desktop, timing, the stdio server they spawn, and the report's parts.

`benchmark_desktop()` starts its own Xvfb at 1920x1080 (a free display number, never an existing display)
with openbox and three text-filled xterms (XTERMS), the desktop every benchmark here measures on.
"""

from __future__ import annotations

import argparse
import contextlib
import datetime
import hashlib
import os
import platform
import random
import shlex
import statistics
import subprocess
import sys
import time
from collections.abc import Callable, Iterator, Mapping, Sequence
from dataclasses import dataclass
from importlib.metadata import version
from pathlib import Path
from typing import Any, TypeVar

from mcp import Client, StdioServerParameters
from mcp.types import CallToolResult

from symphony_mcp.config import DisplaySettings
from symphony_mcp.desktop.capture import ScreenCapturer
from symphony_mcp.desktop.virtual_display import start_virtual_display
from symphony_mcp.imaging.geometry import Point, Rect

REPO = Path(__file__).resolve().parent.parent
RESOLUTION = "1920x1080"
# Where input goes: the interactive bash prompt of the bottom-right xterm (see XTERMS).
INPUT_TARGET = Point(x=1440, y=850)
INTERLEAVE_SEED = 24  # interleaved(): the rounds' shuffled orders, the same in every run
XTERM_FONT = ("-fa", "DejaVu Sans Mono", "-fs", "10")
# (geometry in characters, extra xterm options, shell command): a listing, source code, a prompt.
XTERMS: tuple[tuple[str, tuple[str, ...], str], ...] = (
    ("116x62+0+0", (), "ls -la --color=always /usr/bin; exec sleep infinity"),
    (
        "116x34+965+0",
        ("-bg", "white", "-fg", "black"),
        f"cat {REPO / 'symphony_mcp/desktop/actions.py'}; exec sleep infinity",
    ),
    ("116x25+965+625", (), "python3 -c 'import this'; exec bash --norc"),
)


@dataclass(frozen=True)
class Stats:
    samples: tuple[float, ...]

    @property
    def median(self) -> float:
        return statistics.median(self.samples)

    @property
    def p90(self) -> float:
        return statistics.quantiles(self.samples, n=10, method="inclusive")[-1]

    @property
    def p95(self) -> float:
        return statistics.quantiles(self.samples, n=20, method="inclusive")[-1]

    @property
    def p99(self) -> float:
        return statistics.quantiles(self.samples, n=100, method="inclusive")[-1]


Results = TypeVar("Results")


def interleaved(cases: Mapping[str, Callable[[], object]], repeats: int, warmups: int) -> dict[str, Stats]:
    """Every case once per round, rounds repeated, so the cases share whatever load the machine has; the order is
    shuffled each round (seeded: a rerun repeats it), so no case always follows the same one (a screenshot right
    after a spawned interpreter). A rotation would not do: it keeps the cyclic order, so each case would follow
    the same neighbour in every round but one. Times in ms."""
    for _ in range(warmups):
        for operation in cases.values():
            operation()
    order = random.Random(INTERLEAVE_SEED)
    names = list(cases)
    samples: dict[str, list[float]] = {name: [] for name in cases}
    for _ in range(repeats):
        order.shuffle(names)
        for name in names:
            samples[name].append(timed(cases[name]))
    return {name: Stats(tuple(values)) for name, values in samples.items()}


def log(message: str) -> None:
    print(message, file=sys.stderr, flush=True)


def elapsed_ms(start: float) -> float:
    return (time.perf_counter() - start) * 1000


# --- the desktop ---------------------------------------------------------------------------------
@contextlib.contextmanager
def benchmark_desktop() -> Iterator[str]:
    """Own Xvfb + openbox + text-filled xterms, drawn; DISPLAY points at it while the context is open."""
    display = start_virtual_display(DisplaySettings(resolution=RESOLUTION))
    previous = os.environ.get("DISPLAY")
    os.environ["DISPLAY"] = display.name
    xterms: list[subprocess.Popen[bytes]] = []
    try:
        with contextlib.closing(ScreenCapturer()) as capturer:
            area = capturer.monitor_rect(1)
            empty = capturer.grab(area).tobytes()
            for geometry, options, command in XTERMS:
                xterms.append(
                    subprocess.Popen(
                        ["xterm", *XTERM_FONT, *options, "-geometry", geometry, "-e", "bash", "-c", command],
                        stdin=subprocess.DEVNULL,
                        stdout=subprocess.DEVNULL,
                        stderr=subprocess.DEVNULL,
                    )
                )
            wait_until_drawn(capturer, area, empty)
        yield display.name
    finally:
        for xterm in xterms:
            xterm.terminate()
            xterm.wait(timeout=5)
        display.stop()
        if previous is None:
            os.environ.pop("DISPLAY", None)
        else:
            os.environ["DISPLAY"] = previous


def wait_until_drawn(capturer: ScreenCapturer, area: Rect, empty: bytes, timeout: float = 15.0) -> None:
    """Wait until the frame differs from the empty desktop and has stopped changing."""
    deadline = time.monotonic() + timeout
    previous = empty
    while time.monotonic() < deadline:
        time.sleep(0.5)
        current = capturer.grab(area).tobytes()
        if current == previous != empty:
            return
        previous = current
    raise RuntimeError(f"the xterms did not finish drawing within {timeout:g} s; are xterm and its fonts installed?")


# --- measurements --------------------------------------------------------------------------------
async def call_tool(client: Client, name: str, arguments: dict[str, Any]) -> tuple[float, CallToolResult]:
    start = time.perf_counter()
    result = await client.call_tool(name, arguments)
    took = elapsed_ms(start)
    if result.is_error:
        raise RuntimeError(f"tool {name} failed: {result.content}")
    return took, result


def timed(operation: Callable[[], object]) -> float:
    start = time.perf_counter()
    operation()
    return elapsed_ms(start)


def stdio_server(display: str) -> StdioServerParameters:
    """`symphony-mcp serve` on our display; the stdio client passes only HOME/PATH/... by itself.

    PYTHONPATH goes along too: with a shared editable install, it is what makes the server run the checkout being
    measured (the same code as the in-process reference) rather than the one the install points at."""
    env = {"DISPLAY": display, "PATH": os.environ["PATH"]}
    env |= {key: value for key, value in os.environ.items() if key.startswith("SYMPHONY_") or key == "PYTHONPATH"}
    return StdioServerParameters(
        command=str(Path(sys.executable).parent / "symphony-mcp"),  # this environment's, not PATH's first
        args=["serve", "--display", display, "--virtual-display", "never", "--log-level", "WARNING"],
        env=env,
    )


def stdio_server_of(display: str, code: Path) -> StdioServerParameters:
    """`stdio_server` running the `symphony_mcp` found in `code` (an older version for a before/after run)."""
    params = stdio_server(display)
    env = dict(params.env or {})
    env["PYTHONPATH"] = os.pathsep.join([str(code), str(REPO)])
    return params.model_copy(update={"env": env})


# --- the run and its report ----------------------------------------------------------------------------------
def output_parser(description: str | None, default_output: Path) -> argparse.ArgumentParser:
    """A benchmark's argument parser, with the `--output` every one of them has."""
    parser = argparse.ArgumentParser(description=description, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--output", type=Path, default=default_output, help="markdown results file")
    return parser


def publish_desktop_benchmark(
    measure: Callable[[str], Results], render: Callable[[Results, str, list[str]], str], output: Path
) -> int:
    """Measure on a fresh benchmark desktop (`measure` gets its display name), then print and write the report
    `render(results, command, machine facts)`; the command and the facts are read before anything starts."""
    command = invocation()
    facts = machine_facts()
    with benchmark_desktop() as display:
        log(f"benchmark display {display}")
        results = measure(display)
    publish_report(render(results, command, facts), output)
    return 0


def latency_table(results: Mapping[str, Stats]) -> list[str]:
    """Per case its median, p90 and fastest call, in ms."""
    rows = [[name, f"{s.median:.1f}", f"{s.p90:.1f}", f"{min(s.samples):.1f}"] for name, s in results.items()]
    return table(["case", "median", "p90", "min"], rows)


def ratio_targets_table(checks: Sequence[tuple[str, float, float]]) -> list[str]:
    """Per check (name, ratio of medians, the most it may be) the ratio and whether it is met."""
    rows = [[name, f"{value:.3f}", f"<= {limit:g}", verdict(value <= limit)] for name, value, limit in checks]
    return table(["case", "ratio", "target", "verdict"], rows)


def child_pids() -> set[int]:
    """Process ids of this process's children (every thread's)."""
    return {
        int(pid)
        for task in Path(f"/proc/{os.getpid()}/task").iterdir()
        for pid in (task / "children").read_text().split()
    }


def process_cpu_ms(pid: int) -> float:
    """User + system CPU time of a process so far, all threads (clock-tick resolution: take differences over many
    calls). On a loaded machine the wall time says how long other processes held the cores as much as what a call
    cost; this does not."""
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) * 1000 / os.sysconf("SC_CLK_TCK")


# --- old code against new code in one run ----------------------------------------------------------
BEFORE_AFTER = (("before", "before (--before)"), ("after", "after (this checkout)"))


@dataclass(frozen=True)
class CodeServer:
    """A `symphony-mcp serve` of one code version behind the stdio client, and its process id (for its CPU time)."""

    client: Client
    pid: int


def add_before_after_options(parser: argparse.ArgumentParser, output: Path) -> None:
    parser.add_argument("--before", type=Path, required=True, help="directory holding the old symphony_mcp")
    parser.add_argument("--output", type=Path, default=output, help="markdown results file")


async def start_code_servers(stack: contextlib.AsyncExitStack, display: str, before: Path) -> dict[str, CodeServer]:
    """Two stdio servers on `display`: "before" runs the `symphony_mcp` in `before` (e.g.
    `git archive <commit> symphony_mcp | tar -x -C DIR`), "after" this checkout; closed with `stack`."""
    servers = {}
    for name, code in (("before", before), ("after", REPO)):
        running = child_pids()
        client = await stack.enter_async_context(Client(stdio_server_of(display, code)))
        (pid,) = {p for p in child_pids() - running if b"symphony-mcp" in Path(f"/proc/{p}/cmdline").read_bytes()}
        servers[name] = CodeServer(client, pid)
    return servers


# --- the report ----------------------------------------------------------------------------------
def versus_report(
    title: str,
    facts: list[str],
    setup: list[str],
    command: str,
    rounds: tuple[int, int],
    against: str,
    checks: Sequence[tuple[str, float, float]],
    results: Mapping[str, Stats],
    closing: str,
) -> str:
    """The report of a backend measured against another client of the same machine in interleaved rounds: the
    facts, the `setup` lines, the ratio targets (ours / `against`), every case's latency, and a closing note."""
    repeats, warmups = rounds
    lines = [
        f"# {title}",
        "",
        f"- Date: {datetime.datetime.now(datetime.UTC):%Y-%m-%d %H:%M} UTC",
        *facts,
        *setup,
        f"- Command: `{command}`",
        f"- Repetitions: {repeats} rounds after {warmups} warm-up rounds, the cases interleaved in each round, their "
        f"order shuffled each round (seed {INTERLEAVE_SEED}); times in ms",
        "",
        f"## Targets (ratio of medians, backend / {against})",
        "",
        *ratio_targets_table(checks),
        "",
        "## Latency per call",
        "",
        *latency_table(results),
        "",
        closing,
    ]
    return "\n".join(lines) + "\n"


def verdict(ok: bool) -> str:
    return "PASS" if ok else "FAIL"


def table(header: Sequence[str], rows: Sequence[Sequence[str]]) -> list[str]:
    lines = ["| " + " | ".join(header) + " |", "|" + "|".join("---" for _ in header) + "|"]
    return lines + ["| " + " | ".join(row) + " |" for row in rows]


def interpreter() -> str:
    """The Python that ran this, as typed from the working directory when it lives below it (e.g. .venv/bin/python)."""
    executable = Path(sys.executable)
    if executable.is_relative_to(Path.cwd()):
        return str(executable.relative_to(Path.cwd()))
    return str(executable)


def invocation() -> str:
    """How this benchmark was started, as its report records it: `python -m benchmarks.<room>.<name> [options]`."""
    spec = sys.modules["__main__"].__spec__
    started = ["-m", spec.name] if spec is not None else [sys.argv[0]]
    return shlex.join([interpreter(), *started, *sys.argv[1:]])


def publish_report(report: str, output: Path) -> None:
    """Print the markdown report and write it to the results file."""
    print(report)
    output.parent.mkdir(parents=True, exist_ok=True)
    output.write_text(report)
    log(f"wrote {output}")


def machine_facts() -> list[str]:
    cpu = next(
        (
            line.split(":", 1)[1].strip()
            for line in Path("/proc/cpuinfo").read_text().splitlines()
            if "model name" in line
        ),
        platform.processor(),
    )
    load = ", ".join(f"{value:.2f}" for value in os.getloadavg())
    packages = ", ".join(f"{name} {version(name)}" for name in ("mss", "pillow", "mcp", "pyautogui", "symphony-mcp"))
    return [
        f"- Machine: {os.cpu_count()} CPUs (nproc; {cpu}), {platform.system()} {platform.release()}, "
        f"load average at start {load}",
        f"- Python {platform.python_version()}; {packages}",
        f"- Package source: {source_state()}",
    ]


def source_state() -> str:
    """The commit benchmarked, and whether the package had uncommitted changes (it is installed editable)."""

    def git(*args: str) -> str:
        return subprocess.run(["git", "-C", str(REPO), *args], capture_output=True, text=True, check=False).stdout

    commit = git("rev-parse", "--short", "HEAD").strip() or "unknown"
    changed = git("status", "--porcelain", "--", "symphony_mcp").splitlines()
    if not changed:
        return f"git {commit}"
    digest = hashlib.sha256()
    for path in sorted((REPO / "symphony_mcp").rglob("*.py")):
        digest.update(str(path.relative_to(REPO)).encode() + b"\0" + path.read_bytes())
    return (
        f"git {commit} plus uncommitted changes in {len(changed)} file(s) under symphony_mcp/ "
        f"(sha256 of its .py files, paths and contents: {digest.hexdigest()[:12]})"
    )
