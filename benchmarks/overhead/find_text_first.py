"""The first `find_text` on a documentation page against one full-frame single-thread Tesseract pass, old code and
new code, all measured in one run on the same frames (issue 26, item 4: target <= 0.5x the Tesseract pass).

Starts its own Xvfb at 1920x1080 with openbox and a kiosk Chromium rendering with the tests' fonts
(tests/fonts/fonts.conf), and shows documentation pages not among the OCR benchmark's screens: python3-doc and
LibreOffice's help (libreoffice-help-en-us). Per page:
- `find_text` over stdio, the first call on that page: each code runs in a `symphony-mcp serve` of its own, started
  fresh for the page so its caches are empty (an agent's first look at a page), with the engine already loaded by
  a call on a blank page; --before is a directory holding an older `symphony_mcp`
  (`git archive <commit> symphony_mcp | tar -x -C DIR`), "after" is this checkout;
- the reference: the same full frame (grabbed once the page has stopped drawing) through Tesseract in a child
  process with OMP_THREAD_LIMIT=1 (tesserocr: the library the `tesseract` CLI runs, its default page segmentation,
  LSTM engine), engine loaded before timing.
The three run one after the other, in an order rotated per page, so all see the same machine load. The phrase is
the first words of a visible paragraph (from the DOM). Prints a markdown report and writes it to --output.
Run from the repository root:

    python -m benchmarks.overhead.find_text_first --before /tmp/speed-base
"""

from __future__ import annotations

import argparse
import contextlib
import datetime
import json
import os
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path

import anyio
from playwright.async_api import Page, async_playwright

from benchmarks.common import (
    BEFORE_AFTER,
    REPO,
    CodeServer,
    Stats,
    add_before_after_options,
    invocation,
    log,
    machine_facts,
    process_cpu_ms,
    publish_report,
    start_code_servers,
    table,
    verdict,
)
from symphony_mcp.config import DisplaySettings
from symphony_mcp.desktop.capture import ScreenCapturer
from symphony_mcp.desktop.virtual_display import start_virtual_display
from testkit.chromium import KIOSK_ARGS, chromium_executable
from testkit.paths import FONTS_CONF

DEFAULT_OUTPUT = REPO / "benchmarks" / "results" / "find_text_first.md"
TARGET_RATIO = 0.5
PYTHON_DOCS = Path("/usr/share/doc/python3/html")
OFFICE_HELP = Path("/usr/share/libreoffice/help/en-US/text")
PAGES = (
    PYTHON_DOCS / "library/datetime.html",
    PYTHON_DOCS / "library/logging.html",
    PYTHON_DOCS / "library/string.html",
    PYTHON_DOCS / "library/csv.html",
    PYTHON_DOCS / "library/shutil.html",
    PYTHON_DOCS / "library/textwrap.html",
    OFFICE_HELP / "swriter/guide/text_frame.html",
    OFFICE_HELP / "swriter/guide/auto_numbering.html",
    OFFICE_HELP / "swriter/guide/captions.html",
    OFFICE_HELP / "swriter/guide/fields.html",
    OFFICE_HELP / "swriter/guide/borders.html",
    OFFICE_HELP / "swriter/guide/chapter_numbering.html",
)
# The first words of the visible paragraph nearest the middle of the viewport (prose, not code): what an agent
# reading the page would look for.
PHRASE_JS = """() => {
  const range = document.createRange();
  const width = document.documentElement.clientWidth, height = innerHeight;
  let best = null;
  const walker = document.createTreeWalker(document.body, NodeFilter.SHOW_TEXT);
  for (let node = walker.nextNode(); node; node = walker.nextNode()) {
    const words = node.data.trim().split(/\\s+/).filter((word) => /\\w/.test(word));
    if (words.length < 6 || node.parentElement.closest("pre, code, header, nav")) continue;
    range.selectNodeContents(node);
    const r = range.getClientRects()[0];
    if (!r || r.top < 0 || r.left < 0 || r.bottom > height || r.right > width) continue;
    const distance = Math.abs((r.top + r.bottom) / 2 - height / 2);
    if (!best || distance < best.distance) best = { words: words.slice(0, 3).join(" "), distance };
  }
  return best ? best.words : null;
}"""
# The reference pass, in a child process: OMP_THREAD_LIMIT is read when the OpenMP runtime loads.
REFERENCE = """
import json, sys, time
from PIL import Image
from tesserocr import OEM, PSM, PyTessBaseAPI
api = PyTessBaseAPI(path=sys.argv[1], lang="eng", oem=OEM.LSTM_ONLY, psm=PSM.AUTO)
api.SetImage(Image.new("RGB", (64, 32), "white")); api.Recognize()
print("ready", flush=True)
for path in sys.stdin:
    image = Image.open(path.strip()).convert("RGB"); image.load()
    wall, cpu = time.perf_counter(), time.process_time()
    api.SetImage(image); api.Recognize()
    words = len((api.GetUTF8Text() or "").split())
    took = {"ms": (time.perf_counter() - wall) * 1000, "cpu_ms": (time.process_time() - cpu) * 1000, "words": words}
    print(json.dumps(took), flush=True)
"""


@dataclass
class PageResult:
    page: str
    phrase: str
    ms: dict[str, float]  # before, after, tesseract (wall)
    cpu_ms: dict[str, float]  # before, after (the server process's CPU time over the call), tesseract
    ocr_ms: dict[str, float]  # the servers' own pipeline time
    found: dict[str, bool]
    first: dict[str, dict | None]  # the first match (text, word ids, box), to compare before and after
    complete: dict[str, bool]  # whether the server read the whole frame (`complete` of the result)


class Reference:
    """The single-thread Tesseract pass, kept loaded in a child process."""

    def __init__(self) -> None:
        from symphony_mcp.vision.ocr.tesseract_engine import find_tessdata

        env = {**os.environ, "OMP_THREAD_LIMIT": "1"}
        self.process = subprocess.Popen(
            [sys.executable, "-c", REFERENCE, find_tessdata("eng")],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            text=True,
            env=env,
        )
        assert self.process.stdout is not None and self.process.stdin is not None
        if self.process.stdout.readline().strip() != "ready":
            raise RuntimeError("the reference Tesseract process did not start")

    def read(self, png: Path) -> dict[str, float]:
        assert self.process.stdin is not None and self.process.stdout is not None
        self.process.stdin.write(f"{png}\n")
        self.process.stdin.flush()
        return dict(json.loads(self.process.stdout.readline()))

    def close(self) -> None:
        if self.process.stdin is not None:
            self.process.stdin.close()
        self.process.wait(timeout=10)


async def settle(capturer: ScreenCapturer, timeout: float = 15.0) -> bytes:
    """The screen's pixels once two grabs 0.3 s apart are the same (the page has finished drawing)."""
    area = capturer.monitor_rect(1)
    previous = b""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        current = capturer.grab(area).tobytes()
        if current == previous:
            return current
        previous = current
        await anyio.sleep(0.3)
    raise RuntimeError("the page did not stop drawing")


async def show(page: Page, url: str, capturer: ScreenCapturer) -> None:
    await page.goto(url)
    await page.evaluate("document.fonts.ready.then(() => new Promise(r => requestAnimationFrame(r)))")
    await settle(capturer)


@dataclass(frozen=True)
class Call:
    ms: float
    cpu_ms: float
    ocr_ms: float
    found: bool
    first: dict | None  # the first match's text, word ids and box
    complete: bool  # the whole frame was read (older code always reads it)


async def first_call(server: CodeServer, phrase: str) -> Call:
    """One find_text, timed; 'not found' is an answer too."""
    arguments = {"phrase": phrase, "space": "screen"}
    cpu = process_cpu_ms(server.pid)
    start = time.perf_counter()
    result = await server.client.call_tool("find_text", arguments)
    took = (time.perf_counter() - start) * 1000
    found = result.structured_content or {}
    cpu_ms = process_cpu_ms(server.pid) - cpu
    ocr = float(found.get("ocr_ms", "nan"))
    matches = found.get("matches") or []
    first = {key: matches[0][key] for key in ("text", "word_ids", "box")} if matches else None
    return Call(took, cpu_ms, ocr, not result.is_error and bool(matches), first, bool(found.get("complete", True)))


async def measure(display: str, args: argparse.Namespace, workdir: Path) -> list[PageResult]:
    results: list[PageResult] = []
    reference = Reference()
    capturer = ScreenCapturer()
    try:
        async with async_playwright() as playwright:
            context = await playwright.chromium.launch_persistent_context(
                str(workdir / "profile"),
                executable_path=chromium_executable(),
                headless=False,
                no_viewport=True,
                args=list(KIOSK_ARGS),
                env={**os.environ, "DISPLAY": display, "FONTCONFIG_FILE": str(FONTS_CONF)},
            )
            page = context.pages[0] if context.pages else await context.new_page()
            for number, path in enumerate(PAGES[: args.pages]):
                async with contextlib.AsyncExitStack() as stack:
                    await show(page, "about:blank", capturer)
                    servers = await start_code_servers(stack, display, args.before)  # fresh: empty caches
                    for server in servers.values():  # a call on the blank page loads the engine
                        await server.client.call_tool("find_text", {"phrase": "warm up", "space": "screen"})
                    await show(page, path.as_uri(), capturer)
                    phrase = await page.evaluate(PHRASE_JS)
                    if not phrase:
                        raise RuntimeError(f"no visible paragraph on {path}")
                    png = workdir / f"page-{number}.png"
                    capturer.grab(capturer.monitor_rect(1)).save(png)
                    ms: dict[str, float] = {}
                    cpu: dict[str, float] = {}
                    ocr_ms: dict[str, float] = {}
                    found: dict[str, bool] = {}
                    first: dict[str, dict | None] = {}
                    complete: dict[str, bool] = {}
                    order = ["before", "after", "tesseract"]
                    for name in order[number % 3 :] + order[: number % 3]:
                        if name == "tesseract":
                            took = reference.read(png)
                            ms[name], cpu[name] = took["ms"], took["cpu_ms"]
                        else:
                            call = await first_call(servers[name], phrase)
                            ms[name], cpu[name], ocr_ms[name] = call.ms, call.cpu_ms, call.ocr_ms
                            found[name] = call.found
                            first[name], complete[name] = call.first, call.complete
                result = PageResult(_short(path), phrase, ms, cpu, ocr_ms, found, first, complete)
                log(f"{result.page}: {phrase!r} {ms} found {found} complete {complete}")
                results.append(result)
            await context.close()
    finally:
        capturer.close()
        reference.close()
    return results


def _short(path: Path) -> str:
    for root, label in ((PYTHON_DOCS, "python"), (OFFICE_HELP, "libreoffice")):
        if path.is_relative_to(root):
            return f"{label}:{path.relative_to(root)}"
    return str(path)


def render(results: list[PageResult], args: argparse.Namespace, command: str) -> str:
    stats = {name: Stats(tuple(r.ms[name] for r in results)) for name in ("before", "after", "tesseract")}
    cpu = {name: Stats(tuple(r.cpu_ms[name] for r in results)) for name in ("before", "after", "tesseract")}
    ocr = {name: Stats(tuple(r.ocr_ms[name] for r in results)) for name in ("before", "after")}
    ratios = {name: Stats(tuple(r.ms[name] / r.ms["tesseract"] for r in results)) for name in ("before", "after")}
    reference = stats["tesseract"].median
    rows = [
        [
            label,
            f"{stats[name].median:.0f}",
            f"{ocr[name].median:.0f}",
            f"{stats[name].median / reference:.2f}",
            f"{ratios[name].median:.2f}",
            f"{cpu[name].median:.0f}",
            f"{cpu[name].median / cpu['tesseract'].median:.2f}",
            f"{sum(r.found[name] for r in results)}/{len(results)}",
            f"{sum(r.first[name] == r.first['before'] for r in results)}/{len(results)}",
            f"{sum(not r.complete[name] for r in results)}/{len(results)}",
            verdict(stats[name].median / reference <= TARGET_RATIO),
        ]
        for name, label in BEFORE_AFTER
    ]
    reference_cpu = f"{cpu['tesseract'].median:.0f}"
    rows.append(
        [
            "tesseract, full frame, 1 thread",
            f"{reference:.0f}",
            "-",
            "1.00",
            "1.00",
            reference_cpu,
            "1.00",
            "-",
            "-",
            "-",
            "-",
        ]
    )
    per_page = [
        [
            r.page,
            repr(r.phrase),
            *(f"{r.ms[name]:.0f} ({r.cpu_ms[name]:.0f})" for name in ("before", "after", "tesseract")),
            "yes" if r.first["after"] == r.first["before"] else "NO",
            "whole frame" if r.complete["after"] else "stopped early",
        ]
        for r in results
    ]
    return "\n".join(
        [
            "# First `find_text` on a documentation page against a full-frame single-thread Tesseract pass",
            "",
            f"- Date: {datetime.datetime.now(datetime.UTC):%Y-%m-%d %H:%M} UTC",
            *machine_facts(),
            f"- Load average at the end: {', '.join(f'{v:.2f}' for v in os.getloadavg())}",
            "- Display: own Xvfb at 1920x1080x24 with openbox, kiosk Chromium with the tests' fonts; whole screen read",
            f"- Command: `{command}`",
            f"- Pages: {len(results)} (python3-doc and libreoffice-help-en-us, none among the OCR benchmark's screens);"
            " per page a fresh server per code (empty caches, engine loaded), one `find_text` each, and the",
            "  reference on the same frame; order rotated per page; times in ms, wall unless CPU (the server"
            " process's user + system time over the call, all threads; the reference's own)",
            "",
            *table(
                [
                    "code",
                    "median (ms)",
                    "server's `ocr_ms` median",
                    "median / tesseract median",
                    "median of per-page ratios",
                    "CPU median (ms)",
                    "CPU median / tesseract's",
                    "phrase found",
                    "first match as before's",
                    "stopped early",
                    f"<= {TARGET_RATIO:g}x",
                ],
                rows,
            ),
            "",
            "Per page, wall ms (CPU ms):",
            "",
            *table(
                ["page", "phrase", "before", "after", "tesseract", "first match as before's", "after read"], per_page
            ),
            "",
        ]
    )


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    add_before_after_options(parser, DEFAULT_OUTPUT)
    parser.add_argument("--pages", type=int, default=len(PAGES), help=f"how many of the {len(PAGES)} pages")
    args = parser.parse_args()
    missing = [path for path in (PYTHON_DOCS, OFFICE_HELP) if not path.is_dir()]
    if missing or chromium_executable() is None:
        needed = "apt-get install chromium python3-doc libreoffice-help-en-us"
        raise SystemExit(f"missing {missing or 'chromium'}: {needed}")
    command = invocation()
    display = start_virtual_display(DisplaySettings(resolution="1920x1080", window_manager="openbox"))
    os.environ["DISPLAY"] = display.name  # the frames grabbed here and Chromium
    try:
        log(f"benchmark display {display.name}")
        with tempfile.TemporaryDirectory(prefix="find-text-first-") as workdir:
            results = anyio.run(measure, display.name, args, Path(workdir))
    finally:
        display.stop()
    publish_report(render(results, args, command), args.output)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
