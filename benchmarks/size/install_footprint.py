"""What a stranger's install costs: time to install from the locks with empty caches (the server alone with pip and
with uv, and the `--dev` set with pip), the venv's size, and the installed server's time to its first `initialize`
over stdio, with a DISPLAY given and starting its own Xvfb.

Run from the repository root: `.venv/bin/python -m benchmarks.size.install_footprint` (needs uv, Xvfb and openbox; about
10 minutes, most of it downloading). Venvs and caches go to a temporary folder that is removed at the end; the
machine's pip and uv caches are not used (pip --no-cache-dir, UV_CACHE_DIR in the temporary folder), so every
package is downloaded as on a fresh machine. torch comes from this machine's wheel folder as pip's configuration
says (/opt/wheels), as on every machine of this kind. The report goes to benchmarks/results/install_footprint.md.
"""

from __future__ import annotations

import argparse
import asyncio
import os
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path

from mcp import Client, StdioServerParameters

from benchmarks.common import REPO, Stats, log, machine_facts, publish_report, table
from symphony_mcp.config import DisplaySettings
from symphony_mcp.desktop.virtual_display import start_virtual_display

LOCKS = REPO / "locks"
UV = str(Path(sys.executable).parent / "uv")


def run(*command: str | Path, env: dict[str, str] | None = None) -> None:
    done = subprocess.run([str(part) for part in command], capture_output=True, text=True, env=env, check=False)
    if done.returncode:
        raise SystemExit(f"{' '.join(map(str, command))} failed:\n{done.stderr[-3000:]}")


def clean_env(**extra: str) -> dict[str, str]:
    return {**{k: v for k, v in os.environ.items() if k not in ("PYTHONPATH", "VIRTUAL_ENV")}, **extra}


def size_mb(folder: Path) -> float:
    return sum(p.lstat().st_size for p in folder.rglob("*")) / 1e6


def timed_install(label: str, venv: Path, steps: Callable[[Path], None]) -> tuple[str, float, float]:
    log(f"installing: {label}")
    started = time.perf_counter()
    steps(venv)
    seconds = time.perf_counter() - started
    return label, seconds, size_mb(venv)


def pip_steps(*locks: str, wheel: Path) -> Callable[[Path], None]:
    def steps(venv: Path) -> None:
        run(sys.executable, "-m", "venv", venv)
        pip = [venv / "bin" / "python", "-m", "pip", "install", "-q", "--no-cache-dir", "--no-deps"]
        run(*pip, "--require-hashes", *(f"-r{LOCKS / lock}" for lock in locks), env=clean_env())
        run(*pip, wheel, env=clean_env())

    return steps


def uv_steps(cache: Path, wheel: Path) -> Callable[[Path], None]:
    def steps(venv: Path) -> None:
        env = clean_env(UV_CACHE_DIR=str(cache))
        run(UV, "venv", "-q", "--python", sys.executable, venv, env=env)
        python = venv / "bin" / "python"
        run(UV, "pip", "install", "-q", "--python", python, "--require-hashes", "-r", LOCKS / "server.txt", env=env)
        run(UV, "pip", "install", "-q", "--python", python, "--no-deps", wheel, env=env)

    return steps


async def first_initialize(server: Path, display: str | None, cwd: Path) -> float:
    """Seconds from spawning the installed console script to its answer to `initialize`."""
    env = {"PATH": os.environ["PATH"], "HOME": os.environ["HOME"]} | ({"DISPLAY": display} if display else {})
    params = StdioServerParameters(command=str(server), args=["serve"], env=env, cwd=str(cwd))
    started = time.perf_counter()
    async with Client(params):
        return time.perf_counter() - started


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--repeats", type=int, default=7, help="server starts per display case (default 7)")
    parser.add_argument("--output", type=Path, default=REPO / "benchmarks/results/install_footprint.md")
    args = parser.parse_args()
    facts = machine_facts()
    with tempfile.TemporaryDirectory(prefix="install-footprint-") as scratch:
        root = Path(scratch)
        run(UV, "build", "-q", "--wheel", "--out-dir", root / "dist", REPO, env=clean_env())
        (wheel,) = (root / "dist").glob("symphony_mcp-*.whl")
        installs = [
            timed_install("server, pip (locks/server.txt + wheel)", root / "pip", pip_steps("server.txt", wheel=wheel)),
            timed_install("server, uv (locks/server.txt + wheel)", root / "uv", uv_steps(root / "uv-cache", wheel)),
            timed_install(
                "--dev set, pip (locks/dev.txt + locks/no-deps.txt + wheel)",
                root / "dev",
                pip_steps("dev.txt", "no-deps.txt", wheel=wheel),
            ),
        ]
        server = root / "pip" / "bin" / "symphony-mcp"
        given = start_virtual_display(DisplaySettings(resolution="1920x1080"))
        try:
            log("timing the first initialize")
            with_display = [asyncio.run(first_initialize(server, given.name, root)) for _ in range(args.repeats)]
            own_xvfb = [asyncio.run(first_initialize(server, None, root)) for _ in range(args.repeats)]
        finally:
            given.stop()
    starts = {"DISPLAY given": Stats(tuple(with_display)), "own Xvfb (no DISPLAY)": Stats(tuple(own_xvfb))}
    lines = [
        "# Install footprint and server start",
        "",
        *facts,
        "- Command: `.venv/bin/python -m benchmarks.size.install_footprint`",
        "- Installs into new venvs with empty caches (pip --no-cache-dir; uv with a new UV_CACHE_DIR): every package"
        " is downloaded from PyPI, torch (dev set) read from this machine's wheel folder. System packages were"
        " already installed (scripts/install.sh's apt part is not timed). Times include creating the venv.",
        "",
        *table(
            ["install", "time (s)", "venv size (MB)"],
            [[label, f"{seconds:.1f}", f"{size:,.0f}"] for label, seconds, size in installs],
        ),
        "",
        f"Time from spawning the installed `symphony-mcp serve` to its `initialize` answer over stdio, {args.repeats}"
        " starts each (the server of the pip install; its own Xvfb includes starting Xvfb and openbox):",
        "",
        *table(
            ["case", "median (s)", "min (s)", "max (s)"],
            [
                [case, f"{stats.median:.2f}", f"{min(stats.samples):.2f}", f"{max(stats.samples):.2f}"]
                for case, stats in starts.items()
            ],
        ),
        "",
    ]
    publish_report("\n".join(lines), args.output)


if __name__ == "__main__":
    main()
