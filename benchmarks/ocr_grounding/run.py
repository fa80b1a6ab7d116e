"""OCR grounding benchmark: latency, memory and grounding accuracy of each engine on real screens.

    python -m benchmarks.ocr_grounding.run [--engines tesseract,easyocr] [--output PATH]

The screen set (benchmarks/ocr_grounding/screens.py: documentation and form pages in Chromium at several
zooms, Tk, ttk and Qt windows, xterms with source files and man pages; ground truth from the DOM, widget
geometry and the terminal grid) is rendered once per size; each engine is then measured in a subprocess of
its own, so peak memory is that engine's alone. Per engine and size:
- full frame: a frame with an empty cache (engine already loaded), median over the screens;
- small change: the same screen after one line of text was edited, cache warm from the original;
- repeated frame: the edited frame again;
- accuracy: a target counts when the best match for its phrase has its click point inside one
  of the phrase's true boxes (no hint of where to look is given), for the tuning and the held-out
  screens apart, and per screen family and phrase class;
- false positives: phrases the screen does not show (near misses of its targets, one glyph changed to one
  that is no look-alike) for which an exact match is found, i.e. one an acting tool would click.
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
from collections import defaultdict
from dataclasses import asdict, dataclass
from pathlib import Path

from benchmarks.ocr_grounding.screens import Screen, load_screen_set, write_screen_set
from benchmarks.ocr_grounding.truth import CLASSES
from symphony_mcp.imaging.geometry import Rect
from symphony_mcp.vision.ocr.matching import find_phrase
from symphony_mcp.vision.ocr.pipeline import OcrPipeline

SIZES = ("1920x1080", "1280x720")
TARGETS = {
    "accuracy (tuning and held-out)": ">= 97%",
    "full 1080p frame": "<= 0.5 s",
    "small change": "<= 0.25 s",
    "repeated frame": "<= 0.02 s",
}
SPLITS = ("tuning", "held-out", "held-out-2", "held-out-3", "held-out-4", "held-out-5")


@dataclass
class Outcome:
    """One target on one screen: where it comes from, and whether it was grounded."""

    screen: str
    family: str
    split: str
    category: str
    phrase: str
    grounded: bool


@dataclass
class Probe:
    """A phrase the screen does not show, and what an exact match for it read (None: none found, as it should)."""

    screen: str
    split: str
    phrase: str
    found: str | None


@dataclass
class SizeResult:
    size: str
    screens: list[str]
    families: list[str]
    full_s: list[float]
    full_cpu_s: list[float]  # CPU time of all threads for the full frame: what idle cores would need
    change_s: list[float]
    repeat_s: list[float]
    outcomes: list[Outcome]
    probes: list[Probe]

    def false_positives(self, split: str) -> str:
        chosen = [p for p in self.probes if p.split == split]
        if not chosen:
            return "-"
        found = sum(p.found is not None for p in chosen)
        return f"{100 * found / len(chosen):.1f}% ({found}/{len(chosen)})"

    def accuracy(self, **match: str) -> str:
        """Grounded share of the targets whose fields equal `match` (e.g. split="tuning", family="docs")."""
        chosen = [o for o in self.outcomes if all(getattr(o, key) == value for key, value in match.items())]
        if not chosen:
            return "-"
        grounded = sum(o.grounded for o in chosen)
        return f"{100 * grounded / len(chosen):.1f}% ({grounded}/{len(chosen)})"


@dataclass
class EngineResult:
    engine: str
    load_s: float
    peak_rss_mb: float
    sizes: list[SizeResult]


def measure_screen(
    pipeline: OcrPipeline, screen: Screen
) -> tuple[float, float, float, float, list[Outcome], list[Probe]]:
    """(full s, full CPU s, change s, repeat s, an outcome per target, a probe per absent phrase) for one screen."""
    area = Rect(left=0, top=0, width=screen.image.width, height=screen.image.height)
    pipeline.clear()
    cpu = time.process_time()
    start = time.perf_counter()
    result = pipeline.read(screen.image, area)
    full = time.perf_counter() - start
    full_cpu = time.process_time() - cpu
    outcomes = []
    for target in screen.targets:
        matches = find_phrase(result, target.phrase)
        grounded = bool(matches and target.hit(matches[0].center.x, matches[0].center.y))
        outcomes.append(Outcome(screen.name, screen.family, screen.split, target.category, target.phrase, grounded))
    probes = []
    for phrase in screen.absent:
        exact = next((m.text for m in find_phrase(result, phrase) if m.exact), None)
        probes.append(Probe(screen.name, screen.split, phrase, exact))
    changed = screen.change().image
    start = time.perf_counter()
    pipeline.read(changed, area)
    change = time.perf_counter() - start
    start = time.perf_counter()
    pipeline.read(changed, area)
    repeat = time.perf_counter() - start
    return full, full_cpu, change, repeat, outcomes, probes


def measure_engine(engine: str, screen_dirs: list[Path]) -> EngineResult:
    from symphony_mcp.vision.ocr.engines import engine_spec

    pipeline = OcrPipeline(engine_spec(engine))
    start = time.perf_counter()
    pipeline.warm_up()
    load = time.perf_counter() - start
    sizes = []
    for directory in screen_dirs:
        screens = load_screen_set(directory)
        size = SizeResult(directory.name, [], [], [], [], [], [], [], [])
        for screen in screens:
            full, full_cpu, change, repeat, outcomes, probes = measure_screen(pipeline, screen)
            size.screens.append(screen.name)
            size.families.append(screen.family)
            size.full_s.append(full)
            size.full_cpu_s.append(full_cpu)
            size.change_s.append(change)
            size.repeat_s.append(repeat)
            size.outcomes += outcomes
            size.probes += probes
            missed = sum(not o.grounded for o in outcomes)
            print(
                f"{engine} {directory.name} {screen.name}: full {full:.3f}s ({full_cpu:.3f}s CPU) change {change:.3f}s "
                f"repeat {repeat:.4f}s "
                f"missed {missed}/{len(outcomes)} false positives {sum(p.found is not None for p in probes)}",
                file=sys.stderr,
            )
        sizes.append(size)
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
    for size in data["sizes"]:
        size["outcomes"] = [Outcome(**outcome) for outcome in size["outcomes"]]
        size["probes"] = [Probe(**probe) for probe in size["probes"]]
    data["sizes"] = [SizeResult(**size) for size in data["sizes"]]
    return EngineResult(**data)


def median(values: list[float]) -> float:
    return statistics.median(values) if values else float("nan")


def report(results: list[EngineResult], command: str, screens_s: float, load: tuple[float, float]) -> str:
    first = results[0].sizes[0]
    families = sorted(set(first.families))
    lines = [
        "# OCR grounding benchmark",
        "",
        f"- Date: {datetime.datetime.now(datetime.UTC):%Y-%m-%d %H:%M} UTC",
        f"- Machine: {os.cpu_count()} CPUs, Python {platform.python_version()}, {platform.platform()}",
        f"- Command: `{command}`",
        f"- Load average (1 min) at the start and end of the measurement: {load[0]:.1f}, {load[1]:.1f} "
        "(on 2 cores, anything above ~0 means other processes took CPU from the wall times; CPU times do not "
        "depend on that)",
        f"- Screens: {len(first.screens)} per size in {len(families)} families ({', '.join(families)}), "
        f"{len(first.outcomes)} targets per size; rendered in {screens_s:.0f} s (0 when given with --screens)",
        *(
            f"- {split} screens: {', '.join(sorted({o.screen for o in first.outcomes if o.split == split}))}"
            for split in SPLITS[1:]
        ),
        f"- Targets: {', '.join(f'{k} {v}' for k, v in TARGETS.items())}",
        "",
        "| engine | size | full frame median (s) | full frame CPU median (s) | small change median (s) "
        "| repeated frame median (s) | "
        + " | ".join(f"accuracy, {split}" for split in SPLITS)
        + " | accuracy, all | load (s) | peak RSS (MB) |",
        "|---|---|---|---|---|---|" + "---|" * len(SPLITS) + "---|---|---|",
    ]
    for result in results:
        for size in result.sizes:
            lines.append(
                f"| {result.engine} | {size.size} | {median(size.full_s):.3f} | {median(size.full_cpu_s):.3f} "
                f"| {median(size.change_s):.3f} "
                f"| {median(size.repeat_s):.4f} | "
                + " | ".join(size.accuracy(split=split) for split in SPLITS)
                + f" | {size.accuracy()} "
                f"| {result.load_s:.1f} | {result.peak_rss_mb:.0f} |"
            )
    lines += [
        "",
        "False positives: phrases not on screen (near misses of its targets) found as an exact match, per split:",
        "",
        "| engine | size | " + " | ".join(SPLITS) + " |",
        "|---|---|" + "---|" * len(SPLITS),
    ]
    for result in results:
        for size in result.sizes:
            cells = " | ".join(size.false_positives(split) for split in SPLITS)
            lines.append(f"| {result.engine} | {size.size} | {cells} |")
    lines += _breakdown(results, "Accuracy per screen family", "family", families)
    lines += _breakdown(results, "Accuracy per phrase class", "category", list(CLASSES))
    lines += ["", "Full frame median per family, wall / CPU (s):", ""]
    for result in results:
        for size in result.sizes:
            walls, cpus = defaultdict(list), defaultdict(list)
            for family, wall, cpu in zip(size.families, size.full_s, size.full_cpu_s, strict=True):
                walls[family].append(wall)
                cpus[family].append(cpu)
            cells = ", ".join(f"{f} {median(walls[f]):.2f} / {median(cpus[f]):.2f}" for f in families)
            lines.append(f"- {result.engine} {size.size}: {cells}")
    lines += ["", "Per screen (full / change / repeat seconds):", ""]
    for result in results:
        for size in result.sizes:
            cells = ", ".join(
                f"{name} {f:.2f}/{c:.2f}/{r:.3f}"
                for name, f, c, r in zip(size.screens, size.full_s, size.change_s, size.repeat_s, strict=True)
            )
            lines.append(f"- {result.engine} {size.size}: {cells}")
    lines += ["", "Targets not grounded (first 25 per engine, size and split):", ""]
    for result in results:
        for size in result.sizes:
            for split in SPLITS:
                missed = [
                    f"{o.screen}: {o.phrase} ({o.category})"
                    for o in size.outcomes
                    if o.split == split and not o.grounded
                ]
                lines.append(f"- {result.engine} {size.size} {split}: {'; '.join(missed[:25]) or 'none'}")
    lines += ["", "False positives (phrase not on screen: the exact match's words):", ""]
    for result in results:
        for size in result.sizes:
            found = [f"{p.screen}: {p.phrase} -> {p.found}" for p in size.probes if p.found is not None]
            lines.append(f"- {result.engine} {size.size}: {'; '.join(found) or 'none'}")
    return "\n".join(lines) + "\n"


def _breakdown(results: list[EngineResult], title: str, field: str, keys: list[str]) -> list[str]:
    """A table of accuracy per value of an outcome's `field`, per split, engine and size."""
    columns = [(result.engine, size) for result in results for size in result.sizes]
    header = " | ".join(f"{engine} {size.size} {split}" for engine, size in columns for split in SPLITS)
    lines = ["", f"{title}:", "", f"| | {header} |", "|---|" + "---|" * (len(SPLITS) * len(columns))]
    for key in keys:
        cells = " | ".join(size.accuracy(**{field: key, "split": split}) for _, size in columns for split in SPLITS)
        lines.append(f"| {key} | {cells} |")
    return lines


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--engines", default="tesseract,easyocr")
    parser.add_argument("--output", type=Path, default=Path("benchmarks/results/ocr_grounding.md"))
    parser.add_argument(
        "--screens",
        type=Path,
        nargs="+",
        help="screen sets written by `python -m benchmarks.ocr_grounding.screens` to measure instead of rendering",
    )
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
        dirs = args.screens or [Path(workdir) / size for size in SIZES]
        if not args.screens:
            for size, directory in zip(SIZES, dirs, strict=True):
                write_screen_set(directory, size)
        screens_s = time.perf_counter() - start
        load_before = os.getloadavg()[0]
        results = [run_child(engine, dirs) for engine in args.engines.split(",")]
        load = (load_before, os.getloadavg()[0])
    command = "python -m benchmarks.ocr_grounding.run " + " ".join(argv if argv is not None else sys.argv[1:])
    text = report(results, command.strip(), screens_s, load)
    args.output.parent.mkdir(parents=True, exist_ok=True)
    args.output.write_text(text)
    print(text)
    return 0


if __name__ == "__main__":
    sys.exit(main())
