"""Per browsing step of the searcher, the overhead outside the model call, at 1280x800 (target <= 300 ms median).

One step is what the agent loop does before asking its model: `view()` (viewport screenshot, the DOM's
interactive elements and visible text, scroll position), drawing the element ids on the screenshot
(`marked_image`), and encoding the marked image for the model (imaging.encoding, JPEG q80 within 1280x800,
then base64 as it travels in a data URL). Pages, over real HTTP on 127.0.0.1 in the system Chromium:
the test site's how-to (testkit/web_site.py; cookie banner accepted, scrolled to the steps), its results
page, and a long real documentation page (Python's library/stdtypes.html from python3.11-doc, when installed).
No display is needed (headless). Run from the repository root:

    python -m benchmarks.overhead.search_step
"""

from __future__ import annotations

import argparse
import asyncio
import base64
import contextlib
import datetime
import functools
import threading
import time
from collections.abc import Iterator
from dataclasses import dataclass
from http.server import SimpleHTTPRequestHandler, ThreadingHTTPServer
from importlib.metadata import version
from pathlib import Path

from benchmarks.common import REPO, Stats, elapsed_ms, interpreter, log, machine_facts, publish_report, table, verdict
from symphony_mcp.config import SearchSettings
from symphony_mcp.imaging.encoding import EncodeOptions, encode_image
from symphony_mcp.search.browser import ChromiumBrowser, marked_image
from symphony_mcp.search.chromium import chromium_executable
from symphony_mcp.search.dom import MAX_ELEMENT_TEXT, MAX_VIEW_TEXT, SNAPSHOT_SCRIPT
from symphony_mcp.search.urls import UrlPolicy
from testkit.web_site import running_site

DEFAULT_OUTPUT = REPO / "benchmarks" / "results" / "search_step.md"
PYTHON_DOCS = Path("/usr/share/doc/python3.11/html")
TARGET_MS = 300
ENCODING = EncodeOptions(format="jpeg", quality=80, max_width=1280, max_height=800)


@dataclass
class PageResult:
    name: str
    elements: int
    text_chars: int
    encoded_kib: float
    view: Stats
    screenshot: Stats
    dom: Stats
    marks: Stats
    encode: Stats
    step: Stats


class _Quiet(SimpleHTTPRequestHandler):
    def log_message(self, format: str, *args: object) -> None:
        pass


@contextlib.contextmanager
def docs_server(directory: Path) -> Iterator[str]:
    server = ThreadingHTTPServer(("127.0.0.1", 0), functools.partial(_Quiet, directory=str(directory)))
    threading.Thread(target=server.serve_forever, daemon=True).start()
    try:
        yield f"127.0.0.1:{server.server_port}"
    finally:
        server.shutdown()
        server.server_close()


async def measure(browser: ChromiumBrowser, name: str, repeats: int, warmups: int) -> PageResult:
    page = browser.page
    assert page is not None
    settings = SearchSettings()
    samples: dict[str, list[float]] = {k: [] for k in ("view", "screenshot", "dom", "marks", "encode", "step")}
    view = await browser.view()
    encoded_bytes = 0
    for n in range(warmups + repeats):
        start = time.perf_counter()
        view = await browser.view()
        view_ms = elapsed_ms(start)
        start = time.perf_counter()
        marked = marked_image(view)
        marks_ms = elapsed_ms(start)
        start = time.perf_counter()
        encoded = encode_image(marked, ENCODING)
        base64.b64encode(encoded.data)
        encode_ms = elapsed_ms(start)
        encoded_bytes = len(encoded.data)
        # The parts of view(), measured apart (the same calls it makes).
        start = time.perf_counter()
        await page.screenshot(type="png")
        screenshot_ms = elapsed_ms(start)
        start = time.perf_counter()
        await page.evaluate(SNAPSHOT_SCRIPT, [settings.max_elements, MAX_ELEMENT_TEXT, MAX_VIEW_TEXT])
        dom_ms = elapsed_ms(start)
        if n >= warmups:
            for key, value in (
                ("view", view_ms),
                ("screenshot", screenshot_ms),
                ("dom", dom_ms),
                ("marks", marks_ms),
                ("encode", encode_ms),
                ("step", view_ms + marks_ms + encode_ms),
            ):
                samples[key].append(value)
    stats = {key: Stats(tuple(values)) for key, values in samples.items()}
    return PageResult(
        name=name,
        elements=len(view.elements),
        text_chars=len(view.text),
        encoded_kib=encoded_bytes / 1024,
        **stats,
    )


async def run(repeats: int, warmups: int) -> list[PageResult]:
    settings = SearchSettings(viewport="1280x800")
    results = []
    with running_site() as site, contextlib.ExitStack() as stack:
        trusted = site.trusted_hosts()
        docs = stack.enter_context(docs_server(PYTHON_DOCS)) if PYTHON_DOCS.is_dir() else None
        if docs is not None:
            trusted.append(docs)
        browser = await ChromiumBrowser.start(settings, UrlPolicy.build(settings, trusted))
        try:
            await browser.open(site.url("/search?q=how+to+freeze+the+first+row"))
            log("results page")
            results.append(await measure(browser, "Findr results page (test site)", repeats, warmups))
            await browser.open(site.url("/help/freeze-first-row.html"))
            accept = next(e for e in (await browser.view()).elements if e.name == "Accept all")
            await browser.click(accept)
            await browser.scroll("down", 10)
            log("how-to page")
            results.append(await measure(browser, "how-to, scrolled to the steps (test site)", repeats, warmups))
            if docs is not None:
                await browser.open(f"http://{docs}/library/stdtypes.html")
                await browser.scroll("down", 40)
                log("python docs page")
                results.append(await measure(browser, "Python docs library/stdtypes.html", repeats, warmups))
        finally:
            await browser.close()
    return results


def report(results: list[PageResult], repeats: int, warmups: int, command: str, chromium: str) -> str:
    def cell(stats: Stats) -> str:
        return f"{stats.median:.1f} / {stats.p95:.1f}"

    rows = [
        [
            r.name,
            str(r.elements),
            str(r.text_chars),
            cell(r.view),
            cell(r.screenshot),
            cell(r.dom),
            cell(r.marks),
            cell(r.encode),
            f"{r.encoded_kib:.0f}",
            cell(r.step),
            verdict(r.step.median <= TARGET_MS),
        ]
        for r in results
    ]
    lines = [
        "# Searcher browsing step overhead (outside the model call)",
        "",
        f"- Date: {datetime.datetime.now(datetime.UTC):%Y-%m-%d %H:%M} UTC",
        *machine_facts(),
        f"- Browser: {chromium} (headless), Playwright {version('playwright')}; viewport 1280x800, scale 1",
        f"- Command, run from the repository root: `{command}`",
        f"- Repetitions: {repeats} steps per page after {warmups} warm-ups; times in ms, median / p95",
        "",
        f"## Target: view + marks + encoding <= {TARGET_MS} ms median per step at 1280x800",
        "",
        *table(
            [
                "page",
                "elements",
                "text chars",
                "view()",
                "of it: screenshot (PNG)",
                "of it: DOM read",
                "marks",
                "encode (JPEG q80 + base64)",
                "KiB sent",
                "step",
                f"<= {TARGET_MS} ms",
            ],
            rows,
        ),
        "",
        "`view()` is what the agent's browser does per step: a viewport PNG screenshot decoded to a PIL image,",
        "and one evaluate that lists the interactive elements (visible, in the viewport, not covered, by",
        "elementFromPoint) and reads the viewport's text. Its two parts are also timed apart (the same calls",
        "right after); their sum is close to `view()`. Marks: search.browser.marked_image (vision.annotate).",
        "Encoding: imaging.encoding.encode_image at JPEG q80 within 1280x800, then base64 for the data URL.",
        "",
    ]
    return "\n".join(lines)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--output", type=Path, default=DEFAULT_OUTPUT)
    parser.add_argument("--repeats", type=int, default=40)
    parser.add_argument("--warmups", type=int, default=5)
    args = parser.parse_args()
    results = asyncio.run(run(args.repeats, args.warmups))
    command = f"{interpreter()} -m benchmarks.overhead.search_step"
    if args.repeats != 40:
        command += f" --repeats {args.repeats}"
    chromium = chromium_executable(SearchSettings())
    publish_report(report(results, args.repeats, args.warmups, command, chromium), args.output)


if __name__ == "__main__":
    main()
