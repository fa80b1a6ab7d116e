"""Chromium screens: Python documentation pages (also zoomed) and web dialogs/forms, ground truth from the DOM.

The kiosk window fills the screen at 0,0, so a CSS px is `scale` screen px, where `scale` is the device scale
factor Chromium was started with (browser zoom as the display sees it).
"""

from __future__ import annotations

import contextlib
import os
import tempfile
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from benchmarks.ocr_grounding.bands import band_page
from benchmarks.ocr_grounding.forms import form_page
from benchmarks.ocr_grounding.truth import Reading, Source, box_rect, rotate_words, segment_from_dom
from symphony_mcp.imaging.geometry import Rect
from testkit.chromium import KIOSK_ARGS, chromium_executable

APPS = Path(__file__).with_name("apps")
DOCS = Path("/usr/share/doc/python3/html")
CHROMIUM = chromium_executable() or "/usr/lib/chromium/chromium"
DOM_TEXT_JS = (APPS / "dom_text.js").read_text(encoding="utf-8")
PICK_LINE_JS = """() => {
  const range = document.createRange();
  const width = document.documentElement.clientWidth, height = innerHeight;
  let best = null;
  const walker = document.createTreeWalker(document.querySelector("div.body") || document.body, NodeFilter.SHOW_TEXT);
  for (let node = walker.nextNode(); node; node = walker.nextNode()) {
    if (node.data.trim().split(/\\s+/).length < 5 || node.parentElement.closest("pre")) continue;
    range.selectNodeContents(node);
    const rects = range.getClientRects();
    if (rects.length !== 1) continue;
    const r = rects[0];
    if (r.top < 0 || r.left < 0 || r.bottom > height || r.right > width) continue;
    const distance = Math.abs((r.top + r.bottom) / 2 - height / 2);
    if (!best || distance < best.distance) best = { node, distance };
  }
  window.__ocrEditNode = best ? best.node : null;
  return best ? best.node.data : null;
}"""
SET_LINE_JS = """(text) => {
  const node = window.__ocrEditNode, range = document.createRange();
  range.selectNodeContents(node);
  const before = range.getBoundingClientRect();
  node.data = text;
  range.selectNodeContents(node);
  const after = range.getBoundingClientRect();
  const left = Math.min(before.left, after.left), top = Math.min(before.top, after.top);
  return [left, top, Math.max(before.right, after.right) - left, Math.max(before.bottom, after.bottom) - top];
}"""

# (screen name, page: a python3-doc path with an optional #anchor, forms:VARIANT or bands:VARIANT), per device
# scale factor.
PAGES: tuple[tuple[float, tuple[tuple[str, str], ...]], ...] = (
    (
        1.0,
        (
            ("docs-library", "library/collections.html"),
            ("docs-tutorial", "tutorial/controlflow.html#defining-functions"),
            ("docs-glossary", "glossary.html#term-callable"),
            ("docs-modindex", "py-modindex.html#cap-m"),
            ("docs-argparse", "library/argparse.html#the-add-argument-method"),
            ("docs-cmdline", "using/cmdline.html#miscellaneous-options"),
            ("docs-subprocess", "library/subprocess.html#popen-constructor"),
            ("docs-ospath", "library/os.path.html#module-os.path"),
            ("docs-functools", "library/functools.html#functools.partial"),
            ("forms-0", "forms:0"),
            ("forms-1", "forms:1"),
            ("forms-2", "forms:2"),
            ("bands-0", "bands:0"),
            ("bands-1", "bands:1"),
            ("bands-4", "bands:4"),
            ("bands-5", "bands:5"),
            ("bands-6", "bands:6"),
            ("bands-7", "bands:7"),
            ("forms-7", "forms:7"),
            ("docs-datetime", "library/datetime.html#timedelta-objects"),
            ("bands-9", "bands:9"),
            ("forms-9", "forms:9"),
            ("docs-logging", "library/logging.html#logger-objects"),
        ),
    ),
    (0.8, (("zoom80-re", "library/re.html#regular-expression-syntax"),)),
    (0.9, (("zoom90-itertools", "library/itertools.html#itertools-recipes"),)),
    (1.1, (("zoom110-forms-5", "forms:5"), ("zoom110-csv", "library/csv.html#module-contents"))),
    (
        1.25,
        (
            ("zoom125-pathlib", "library/pathlib.html#basic-use"),
            ("zoom125-forms-3", "forms:3"),
            ("bands-z125-2", "bands:2"),
            ("bands-z125-8", "bands:8"),
            ("zoom125-forms-10", "forms:10"),
        ),
    ),
    (
        1.5,
        (
            ("zoom150-json", "library/json.html#basic-usage"),
            ("bands-z150-3", "bands:3"),
            ("bands-z150-10", "bands:10"),
        ),
    ),
)


class WebPage:
    """A page in the kiosk window: a python3-doc page or a generated form page."""

    def __init__(self, page: Any, url: str, scale: float) -> None:
        self.page, self.scale = page, scale
        page.goto(url)
        page.evaluate("document.fonts.ready.then(() => new Promise(r => requestAnimationFrame(r)))")
        self.line: str | None = None

    def read(self) -> Reading:
        return Reading(tuple(segment_from_dom(s, self.scale) for s in self.page.evaluate(DOM_TEXT_JS)))

    def edit(self, step: int) -> Rect:
        if self.line is None:
            self.line = self.page.evaluate(PICK_LINE_JS)
            if self.line is None:
                raise RuntimeError(f"no single-line paragraph to edit on {self.page.url}")
        box = self.page.evaluate(SET_LINE_JS, rotate_words(self.line, step))
        left, top, width, height = (self.scale * v for v in box)
        return box_rect((left, top, left + width, top + height))


def web_pages(display: str, width: int, height: int) -> Iterator[tuple[str, Source]]:
    """One kiosk Chromium per device scale factor (Playwright drives it; the pages are local files)."""
    from playwright.sync_api import sync_playwright

    missing = [p for p in (Path(CHROMIUM), DOCS) if not p.exists()]
    if missing:
        raise RuntimeError(f"missing {missing}: apt-get install chromium python3-doc")
    with tempfile.TemporaryDirectory() as workdir, sync_playwright() as playwright:
        for scale, pages in PAGES:
            args = [arg for arg in KIOSK_ARGS if not arg.startswith("--force-device-scale-factor")]
            context = playwright.chromium.launch_persistent_context(
                Path(workdir) / f"profile-{scale}",
                executable_path=CHROMIUM,
                headless=False,
                no_viewport=True,
                args=[*args, f"--force-device-scale-factor={scale}"],
                env={**os.environ, "DISPLAY": display},
            )
            with contextlib.closing(context):
                page = context.pages[0] if context.pages else context.new_page()
                page.wait_for_function(
                    f"Math.abs(innerWidth * devicePixelRatio - {width}) < 2"
                    f" && Math.abs(innerHeight * devicePixelRatio - {height}) < 2"
                )
                for name, address in pages:
                    yield name, WebPage(page, _url(address, Path(workdir)), scale)


GENERATED = {"forms": form_page, "bands": band_page}  # page kind -> the page of a variant


def _url(address: str, workdir: Path) -> str:
    kind, _, variant = address.partition(":")
    if kind in GENERATED:
        path = workdir / f"{kind}-{variant}.html"
        path.write_text(GENERATED[kind](int(variant)), encoding="utf-8")
        return path.as_uri()
    file, _, anchor = address.partition("#")
    return (DOCS / file).as_uri() + (f"#{anchor}" if anchor else "")
