"""OCR grounding benchmark: latency, memory and grounding accuracy of each engine on real screens.

    python -m benchmarks.ocr_grounding.run [--engines tesseract,rapidocr,easyocr] [--output PATH]

The screen set (benchmarks/ocr_grounding/screens.py: Python docs in Chromium, a Tk form, xterms,
with ground truth from the DOM, widget geometry and the terminal grid) is rendered once per size;
each engine is then measured in a subprocess of its own, so peak memory is that engine's alone.
Per engine and size:
- full frame: a frame with an empty cache (engine already loaded), median over the screens;
- small change: the same screen after one line of text was edited, cache warm from the original;
- repeated frame: the edited frame again;
- accuracy: a target counts when the best match for its phrase has its click point inside one
  of the phrase's true boxes (no hint of where to look is given).
"""

from __future__ import annotations

import argparse
import datetime
import json
import os
import platform
import resource
import statistics
import subprocess
import sys
import tempfile
import time
from dataclasses import asdict, dataclass
from pathlib import Path

from symphony_mcp.imaging.geometry import Rect
from symphony_mcp.vision.ocr.matching import find_phrase
from symphony_mcp.vision.ocr.pipeline import OcrPipeline

from benchmarks.ocr_grounding.screens import Screen, load_screen_set, write_screen_set

SIZES = ("1920x1080", "1280x720")
TARGETS = {
    "accuracy at 1080p": ">= 97%",
    "full 1080p frame": "<= 1.0 s",
    "small change": "<= 0.25 s",
    "repeated frame": "<= 0.02 s",
}


@dataclass
class SizeResult:
    size: str
    screens: int
    full_s: list[float]
    change_s: list[float]
    repeat_s: list[float]
    targets: int
    grounded: int
    misses: list[str]


@dataclass
class EngineResult:
    engine: str
    load_s: float
    peak_rss_mb: float
    sizes: list[SizeResult]


def measure_screen(pipeline: OcrPipeline, screen: Screen) -> tuple[float, float, float, list[str]]:
    """(full s, change s, repeat s, phrases not grounded) for one screen."""
    area = Rect(left=0, top=0, width=screen.image.width, height=screen.image.height)
    pipeline.clear()
    start = time.perf_counter()
    result = pipeline.read(screen.image, area)
    full = time.perf_counter() - start
    missed = []
    for target in screen.targets:
        matches = find_phrase(result, target.phrase)
        if not (matches and target.hit(matches[0].center.x, matches[0].center.y)):
            missed.append(target.phrase)
    changed = screen.change().image
    start = time.perf_counter()
    pipeline.read(changed, area)
    change = time.perf_counter() - start
    start = time.perf_counter()
    pipeline.read(changed, area)
    repeat = time.perf_counter() - start
    return full, change, repeat, missed


def measure_engine(engine: str, screen_dirs: list[Path]) -> EngineResult:
    from symphony_mcp.vision.ocr.engine import engine_spec

    pipeline = OcrPipeline(engine_spec(engine))
    start = time.perf_counter()
    pipeline.warm_up()
    load = time.perf_counter() - start
    sizes = []
    for directory in screen_dirs:
        screens = load_screen_set(directory)
        full, change, repeat, targets, misses = [], [], [], 0, []
        for screen in screens:
            f, c, r, missed = measure_screen(pipeline, screen)
            full.append(f)
            change.append(c)
            repeat.append(r)
            targets += len(screen.targets)
            misses += [f"{screen.name}: {phrase}" for phrase in missed]
            print(
                f"{engine} {directory.name} {screen.name}: full {f:.3f}s change {c:.3f}s repeat {r:.4f}s "
                f"missed {len(missed)}/{len(screen.targets)}",
                file=sys.stderr,
            )
        grounded = targets - len(misses)
        sizes.append(SizeResult(directory.name, len(screens), full, change, repeat, targets, grounded, misses))
    pipeline.close()
    peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
    return EngineResult(engine, load, peak, sizes)


def run_child(engine: str, screen_dirs: list[Path]) -> EngineResult:
    """Measure one engine in a fresh interpreter so its peak memory is its own."""
    with tempfile.NamedTemporaryFile(suffix=".json") as out:
        subprocess.run(
            [
                sys.executable,
                "-m",
                "benchmarks.ocr_grounding.run",
                "--measure",
                engine,
                "--json",
                out.name,
                *map(str, screen_dirs),
            ],
            check=True,
            env={**os.environ, "OMP_THREAD_LIMIT": "1"},
        )
        data = json.loads(Path(out.name).read_text())
    data["sizes"] = [SizeResult(**size) for size in data["sizes"]]
    return EngineResult(**data)


def median(values: list[float]) -> float:
    return statistics.median(values) if values else float("nan")


def report(results: list[EngineResult], command: str, screens_s: float) -> str:
    lines = [
        "# OCR grounding benchmark",
        "",
        f"- Date: {datetime.datetime.now(datetime.UTC):%Y-%m-%d %H:%M} UTC",
        f"- Machine: {os.cpu_count()} CPUs, Python {platform.python_version()}, {platform.platform()}",
        f"- Command: `{command}`",
        f"- Screens: Python docs pages in Chromium (4), a Tk form, two xterms; rendered in {screens_s:.0f} s",
        f"- Targets: {', '.join(f'{k} {v}' for k, v in TARGETS.items())}",
        "",
        "| engine | size | full frame median (s) | small change median (s) | repeated frame median (s) "
        "| grounding accuracy | load (s) | peak RSS (MB) |",
        "|---|---|---|---|---|---|---|---|",
    ]
    for result in results:
        for size in result.sizes:
            accuracy = 100 * size.grounded / size.targets if size.targets else float("nan")
            lines.append(
                f"| {result.engine} | {size.size} | {median(size.full_s):.3f} | {median(size.change_s):.3f} "
                f"| {median(size.repeat_s):.4f} | {accuracy:.1f}% ({size.grounded}/{size.targets}) "
                f"| {result.load_s:.1f} | {result.peak_rss_mb:.0f} |"
            )
    lines += ["", "Per screen (full / change / repeat seconds):", ""]
    for result in results:
        for size in result.sizes:
            cells = ", ".join(
                f"{f:.2f}/{c:.2f}/{r:.3f}" for f, c, r in zip(size.full_s, size.change_s, size.repeat_s, strict=True)
            )
            lines.append(f"- {result.engine} {size.size}: {cells}")
    lines += ["", "Targets not grounded (first 15 per engine and size):", ""]
    for result in results:
        for size in result.sizes:
            lines.append(f"- {result.engine} {size.size}: {'; '.join(size.misses[:15]) or 'none'}")
    return "\n".join(lines) + "\n"


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--engines", default="tesseract,easyocr")
    parser.add_argument("--output", type=Path, default=Path("benchmarks/results/ocr_grounding.md"))
    parser.add_argument("--measure", help=argparse.SUPPRESS)
    parser.add_argument("--json", type=Path, help=argparse.SUPPRESS)
    parser.add_argument("screen_dirs", nargs="*", type=Path, help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    if args.measure:
        result = measure_engine(args.measure, args.screen_dirs)
        args.json.write_text(json.dumps(asdict(result)))
        return 0
    with tempfile.TemporaryDirectory() as workdir:
        start = time.perf_counter()
        dirs = [Path(workdir) / size for size in SIZES]
        for size, directory in zip(SIZES, dirs, strict=True):
            write_screen_set(directory, size)
        screens_s = time.perf_counter() - start
        results = [run_child(engine, dirs) for engine in args.engines.split(",")]
    command = "python -m benchmarks.ocr_grounding.run " + " ".join(argv if argv is not None else sys.argv[1:])
    text = report(results, command.strip(), screens_s)
    args.output.parent.mkdir(parents=True, exist_ok=True)
    args.output.write_text(text)
    print(text)
    return 0


if __name__ == "__main__":
    sys.exit(main())
