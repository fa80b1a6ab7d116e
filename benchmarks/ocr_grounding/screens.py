"""Ground-truth screens for the OCR grounding benchmark: real text-rich screens and where phrases are on them.

`iter_screens(size)` starts its own Xvfb (never an existing display), shows one screen after another
(Python docs pages in kiosk Chromium, a Tk form, two xterms) and yields each as a `Screen`: the captured
full-screen image and targets, phrases with every box (screen px) where they are drawn. A screen stays
on display until the next one is requested, so `Screen.change()` can edit one line of it for the
incremental-OCR measurement.

Where text is comes from the app, never from OCR: DOM ranges (per character) in Chromium, Tk's own
geometry in the Tk form, the character grid in xterm. Each box is then trimmed to the ink of its glyphs
in the captured image, which also proves that the text was drawn there.

A phrase (1 to 3 words on one line) is a target only if every place the screen shows it (case-insensitive,
also inside longer words) is one of its boxes and at most three such places exist, so "the click point
is inside one of the phrase's boxes" is a fair test whatever text matching the harness does.

CLI: python -m benchmarks.ocr_grounding.screens --out DIR --size 1920x1080 [--overlay]
"""

from __future__ import annotations

import argparse
import contextlib
import itertools
import json
import math
import os
import random
import re
import select
import subprocess
import sys
import tempfile
import textwrap
import time
from collections import defaultdict
from collections.abc import Callable, Generator, Iterator, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Protocol

import numpy as np
from PIL import Image, ImageDraw
from symphony_mcp.browser.chromium import KIOSK_ARGS, chromium_executable
from symphony_mcp.config import DisplaySettings
from symphony_mcp.desktop.capture import ScreenCapturer
from symphony_mcp.desktop.virtual_display import display_for
from symphony_mcp.imaging.geometry import Rect

APPS = Path(__file__).with_name("apps")
DOCS = Path("/usr/share/doc/python3/html")
CHROMIUM = chromium_executable() or "/usr/lib/chromium/chromium"
DOCS_PAGES = (
    ("docs-library", "library/collections.html"),
    ("docs-tutorial", "tutorial/controlflow.html#defining-functions"),
    ("docs-glossary", "glossary.html#term-callable"),
    ("docs-modindex", "py-modindex.html#cap-m"),
)
XTERM_FONT = "DejaVu Sans Mono:pixelsize=15"
XTERM_BORDER = 4
MAX_WORDS = 3
MAX_OCCURRENCES = 3
INK_THRESHOLD = 64
CORE = re.compile(r"[^A-Za-z0-9_]*([A-Za-z0-9_]+(?:[.\-][A-Za-z0-9_]+)*)[^A-Za-z0-9_]*")

Box = tuple[float, float, float, float]  # left, top, right, bottom in screen px


# --- what a screen shows ---------------------------------------------------------------------------
@dataclass(frozen=True)
class Run:
    """Characters between spaces on one line (what OCR calls a word), with the x edge of every character."""

    text: str
    edges: tuple[float, ...]
    top: float
    bottom: float
    clear: bool  # fully on screen and not covered: its boxes can be ground truth
    spaces: int = 1  # spaces drawn between it and the previous run of its segment


@dataclass(frozen=True)
class Segment:
    """Runs from one source line (a DOM text node's line, a widget line, a terminal row) in reading order."""

    kind: str
    runs: tuple[Run, ...]


@dataclass(frozen=True)
class Reading:
    """Everything a screen shows: text with geometry, and text drawn where no app can say (window titles)."""

    segments: tuple[Segment, ...]
    elsewhere: tuple[str, ...] = ()


def segment_from_line(data: dict[str, Any]) -> Segment:
    """A line reported as text plus character edges (Tk form, xterm) split into runs.

    `right` (optional) is where the widget cuts the line off: runs reaching past it are not clear.
    """
    text, edges, right = data["text"], data["edges"], data.get("right", math.inf)
    runs, end = [], 0
    for m in re.finditer(r"\S+", text):
        run_edges = tuple(edges[m.start() : m.end() + 1])
        clear = data["clear"] and run_edges[-1] <= right
        runs.append(Run(m.group(), run_edges, data["top"], data["bottom"], clear, m.start() - end))
        end = m.end()
    return Segment(data["kind"], tuple(runs))


def segment_from_dom(data: dict[str, Any]) -> Segment:
    runs = tuple(
        Run(r["text"], tuple(r["edges"]), r["top"], r["bottom"], r["clear"], r["spaces"]) for r in data["runs"]
    )
    return Segment(data["kind"], runs)


# --- which phrases are unambiguous, and where they are --------------------------------------------------
@dataclass(frozen=True)
class Phrase:
    text: str
    kind: str
    boxes: tuple[Box, ...]


def phrase_table(reading: Reading) -> dict[str, Phrase]:
    """Phrases (lowercased key) whose every appearance on screen is a clear, whole-word occurrence."""
    found: dict[str, list[tuple[str, str, Box]]] = defaultdict(list)
    for segment in reading.segments:
        for text, box in _phrases_in(segment):
            found[text.lower()].append((text, segment.kind, box))
    haystack = "\n".join([screen_text(reading.segments), *reading.elsewhere]).lower()
    table = {}
    for key, hits in found.items():
        if len(hits) <= MAX_OCCURRENCES and haystack.count(key) == len(hits) and _worth_asking(key):
            table[key] = Phrase(hits[0][0], hits[0][1], tuple(box for _, _, box in hits))
    return table


def _worth_asking(phrase: str) -> bool:
    return len(phrase) >= 3 and any(c.isalpha() for c in phrase)


def _phrases_in(segment: Segment) -> Iterator[tuple[str, Box]]:
    """1..MAX_WORDS consecutive clear runs that read as words separated by single spaces."""
    runs = segment.runs
    cores = [CORE.fullmatch(run.text) if run.clear else None for run in runs]
    for first, first_core in enumerate(cores):
        if first_core is None:
            continue
        left, words = runs[first].edges[first_core.start(1)], list[str]()
        for i in range(first, min(first + MAX_WORDS, len(runs))):
            core, previous = cores[i], cores[i - 1]
            if core is None or (words and (previous is None or not _joins(runs[i - 1], previous, runs[i], core))):
                break
            words.append(core.group(1))
            chosen = runs[first : i + 1]
            box = left, min(r.top for r in chosen), runs[i].edges[core.end(1)], max(r.bottom for r in chosen)
            yield " ".join(words), box


def _joins(previous: Run, previous_core: re.Match[str], run: Run, core: re.Match[str]) -> bool:
    """Two runs read as one phrase: one space apart, no punctuation between the words."""
    return run.spaces == 1 and previous_core.end(1) == len(previous.text) and core.start(1) == 0


def screen_text(segments: Sequence[Segment]) -> str:
    """All text as visual lines: segments side by side on one baseline join, as OCR would read them."""
    lines: list[list[tuple[Box, str]]] = []
    items = sorted(((_segment_box(s), " ".join(r.text for r in s.runs)) for s in segments if s.runs), key=_left)
    for box, text in items:
        line = next((line for line in reversed(lines) if _same_line(line[-1][0], box)), None)
        if line is None:
            lines.append([(box, text)])
        else:
            line.append((box, text))
    return "\n".join(_line_text(line) for line in lines)


def _left(item: tuple[Box, str]) -> float:
    return item[0][0]


def _segment_box(segment: Segment) -> Box:
    runs = segment.runs
    return runs[0].edges[0], min(r.top for r in runs), runs[-1].edges[-1], max(r.bottom for r in runs)


def _same_line(a: Box, b: Box) -> bool:
    height = min(a[3] - a[1], b[3] - b[1])
    overlap = min(a[3], b[3]) - max(a[1], b[1])
    return overlap >= 0.5 * height and -2 <= b[0] - a[2] <= 1.5 * height


def _line_text(line: list[tuple[Box, str]]) -> str:
    parts = [line[0][1]]
    for (before, _), (box, text) in itertools.pairwise(line):
        gap = box[0] - before[2]
        parts.append((" " if gap > 0.15 * (box[3] - box[1]) else "") + text)
    return "".join(parts)


# --- ground truth from the image ------------------------------------------------------------------------
@dataclass(frozen=True)
class Target:
    """A phrase to find and every box (screen px) where the screen shows it."""

    phrase: str
    kind: str
    boxes: tuple[Rect, ...]

    def hit(self, x: float, y: float) -> bool:
        return any(box.contains(math.floor(x), math.floor(y)) for box in self.boxes)

    def to_json(self) -> dict[str, Any]:
        return {"phrase": self.phrase, "kind": self.kind, "boxes": [_rect_list(b) for b in self.boxes]}

    @classmethod
    def from_json(cls, data: dict[str, Any]) -> Target:
        return cls(data["phrase"], data["kind"], tuple(_rect(b) for b in data["boxes"]))


def _rect_list(rect: Rect) -> list[int]:
    return [rect.left, rect.top, rect.width, rect.height]


def _rect(values: Sequence[int]) -> Rect:
    left, top, width, height = values
    return Rect(left=left, top=top, width=width, height=height)


class Inker:
    """Trims layout boxes to the ink of their glyphs: tight boxes, and proof the text was drawn there."""

    def __init__(self, image: Image.Image) -> None:
        self.pixels = np.asarray(image, dtype=np.int16)

    def target(self, phrase: Phrase) -> Target | None:
        boxes = [self.trim(box) for box in phrase.boxes]
        if any(box is None for box in boxes):
            return None
        return Target(phrase.text, phrase.kind, tuple(box for box in boxes if box is not None))

    def trim(self, box: Box) -> Rect | None:
        height, width = self.pixels.shape[:2]
        left, top = max(0, math.floor(box[0])), max(0, math.floor(box[1]))
        right, bottom = min(width, math.ceil(box[2])), min(height, math.ceil(box[3]))
        crop = self.pixels[top:bottom, left:right]
        if crop.shape[0] < 3 or crop.shape[1] < 3:
            return None
        border = np.concatenate([crop[0], crop[-1], crop[:, 0], crop[:, -1]])
        colours, counts = np.unique(border, axis=0, return_counts=True)
        ink = np.abs(crop - colours[counts.argmax()]).max(axis=2) > INK_THRESHOLD
        rows, cols = np.flatnonzero(ink.any(axis=1)), np.flatnonzero(ink.any(axis=0))
        # Glyphs fill most of their advance width; much less ink means the text is not (all) there.
        if cols.size == 0 or cols[-1] - cols[0] + 1 < 0.5 * (right - left):
            return None
        return Rect(
            left=left + int(cols[0]),
            top=top + int(rows[0]),
            width=int(cols[-1] - cols[0]) + 1,
            height=int(rows[-1] - rows[0]) + 1,
        )


def choose_targets(reading: Reading, image: Image.Image, count: int, rng: random.Random) -> tuple[Target, ...]:
    """A seeded pick spread over kinds of text, single words vs phrases, and a 3x3 grid of the screen."""
    groups: dict[tuple[str, bool, int, int], list[Phrase]] = defaultdict(list)
    table = phrase_table(reading)
    for phrase in sorted(table.values(), key=lambda p: p.text.lower()):
        left, top, right, bottom = phrase.boxes[0]
        cell = int(1.5 * (left + right) / image.width), int(1.5 * (top + bottom) / image.height)
        groups[(phrase.kind, " " in phrase.text, *cell)].append(phrase)
    order = sorted(groups)
    rng.shuffle(order)
    for key in order:
        rng.shuffle(groups[key])
    inker, targets = Inker(image), list[Target]()
    while len(targets) < count and any(groups.values()):
        for key in order:
            if groups[key] and len(targets) < count and (target := inker.target(groups[key].pop())) is not None:
                targets.append(target)
    return tuple(targets)


def targets_on(reading: Reading, image: Image.Image, line: Rect) -> tuple[Target, ...]:
    """Every target with a box on the given line, top to bottom, left to right."""
    inker, found = Inker(image), []
    for phrase in phrase_table(reading).values():
        if any(line.intersect(_box_rect(box)) for box in phrase.boxes) and (target := inker.target(phrase)):
            found.append(target)
    return tuple(sorted(found, key=lambda t: (t.boxes[0].top, t.boxes[0].left, t.phrase)))


def _box_rect(box: Box) -> Rect:
    left, top = math.floor(box[0]), math.floor(box[1])
    return Rect(left=left, top=top, width=max(1, math.ceil(box[2]) - left), height=max(1, math.ceil(box[3]) - top))


def rotate_words(text: str, step: int) -> str:
    """The same words in another order each step: the line keeps its length and still reads as words."""
    words = text.split()
    shift = 1 + (step - 1) % (len(words) - 1)
    lead, trail = text[: len(text) - len(text.lstrip())], text[len(text.rstrip()) :]
    return lead + " ".join(words[shift:] + words[:shift]) + trail


# --- screens as the harness sees them --------------------------------------------------------------------
@dataclass(frozen=True)
class Change:
    """The screen after one line was edited: its image, the line's box, and the targets now valid."""

    image: Image.Image
    line: Rect
    line_targets: tuple[Target, ...]  # every target with a box on the edited line
    targets: tuple[Target, ...]  # the screen's targets re-checked on the new screen, plus line_targets


@dataclass(frozen=True)
class Screen:
    """One ground-truth screen: its full-screen image and targets.

    `change()` edits one line, differently on each call, while the screen is live (before the next screen
    is requested); a screen loaded from disk returns its recorded change.
    """

    name: str
    image: Image.Image
    targets: tuple[Target, ...]
    changer: Callable[[], Change] = field(repr=False, compare=False)

    def change(self) -> Change:
        return self.changer()


class Source(Protocol):
    """A screen on display: what it shows, and how to edit one line of it (returns the line's box)."""

    def read(self) -> Reading: ...

    def edit(self, step: int) -> Rect: ...


class Camera:
    """Full-screen grabs of our display, waiting for the screen to finish drawing."""

    def __init__(self) -> None:
        self.capturer = ScreenCapturer()
        self.area = self.capturer.monitor_rect(1)

    def settle(self, previous: Image.Image | None, timeout: float = 20.0) -> Image.Image:
        """The first frame that differs from `previous` and stays the same for 0.2 s."""
        old = previous.tobytes() if previous is not None else None
        last: bytes | None = None
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            image = self.capturer.grab(self.area).copy()
            data = image.tobytes()
            if data == last and data != old:
                return image
            last = data
            time.sleep(0.2)
        raise RuntimeError(f"the screen did not settle within {timeout:g} s")

    def close(self) -> None:
        self.capturer.close()


class _Editor:
    """The live `Screen.change`: edits the source's line, then re-grounds the new screen."""

    def __init__(
        self, name: str, source: Source, camera: Camera, image: Image.Image, targets: tuple[Target, ...]
    ) -> None:
        self.name, self.source, self.camera = name, source, camera
        self.image, self.targets, self.step = image, targets, 0
        self.live = True

    def __call__(self) -> Change:
        if not self.live:
            raise RuntimeError(f"screen {self.name!r} is no longer on display; call change() before the next screen")
        self.step += 1
        line = self.source.edit(self.step)
        image = self.camera.settle(self.image)
        reading = self.source.read()
        table, inker = phrase_table(reading), Inker(image)
        line_targets = targets_on(reading, image, line)
        kept = (inker.target(table[key]) for t in self.targets if (key := t.phrase.lower()) in table)
        targets = {t.phrase.lower(): t for t in kept if t is not None}
        for target in line_targets:
            targets.setdefault(target.phrase.lower(), target)
        self.image, self.targets = image, tuple(targets.values())
        return Change(image, line, line_targets, self.targets)


def iter_screens(
    size: str = "1920x1080", *, seed: int = 0, targets_per_screen: int = 40
) -> Generator[Screen, None, None]:
    """Show each screen on a fresh Xvfb of `size` (WIDTHxHEIGHT) and yield it while it is on display.

    Runs everything in the calling thread (mss and Playwright's sync API both need that); close the
    generator (or exhaust it) to stop the apps and the display.
    """
    # Always our own Xvfb + openbox (never the caller's display); DISPLAY points at it while open.
    settings = DisplaySettings(resolution=size, virtual="always")
    width, height = settings.size
    with display_for(settings) as display, contextlib.closing(Camera()) as camera:
        assert display is not None
        _park_pointer(display, width - 1, height // 2)
        previous = camera.settle(None)
        for sources in (_docs_pages, _tk_form, _terminals):
            for name, source in sources(display, width, height):
                image = camera.settle(previous)
                rng = random.Random(f"{seed}:{name}")
                targets = choose_targets(source.read(), image, targets_per_screen, rng)
                editor = _Editor(name, source, camera, image, targets)
                yield Screen(name, image, targets, editor)
                editor.live = False
                previous = editor.image


def _park_pointer(display: str, x: int, y: int) -> None:
    """Keep the pointer off the text: hover styles and tooltips would change what is drawn."""
    from Xlib import display as xdisplay

    conn = xdisplay.Display(display)
    try:
        conn.screen().root.warp_pointer(x, y)
        conn.sync()
    finally:
        conn.close()


# --- Chromium: Python documentation pages -----------------------------------------------------------------
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


class DocsPage:
    """A page of Debian's python3-doc in the kiosk window, where CSS px are screen px."""

    def __init__(self, page: Any, path: str) -> None:
        self.page = page
        file, _, anchor = path.partition("#")
        page.goto((DOCS / file).as_uri() + (f"#{anchor}" if anchor else ""))
        page.evaluate("document.fonts.ready.then(() => new Promise(r => requestAnimationFrame(r)))")
        self.line: str | None = None

    def read(self) -> Reading:
        return Reading(tuple(segment_from_dom(s) for s in self.page.evaluate(DOM_TEXT_JS)))

    def edit(self, step: int) -> Rect:
        if self.line is None:
            self.line = self.page.evaluate(PICK_LINE_JS)
            if self.line is None:
                raise RuntimeError(f"no single-line paragraph to edit on {self.page.url}")
        box = self.page.evaluate(SET_LINE_JS, rotate_words(self.line, step))
        return _box_rect((box[0], box[1], box[0] + box[2], box[1] + box[3]))


def _docs_pages(display: str, width: int, height: int) -> Iterator[tuple[str, Source]]:
    """One kiosk Chromium for all pages (Playwright drives it; the pages are local files)."""
    from playwright.sync_api import sync_playwright

    missing = [p for p in (Path(CHROMIUM), DOCS) if not p.exists()]
    if missing:
        raise RuntimeError(f"missing {missing}: apt-get install chromium python3-doc")
    with tempfile.TemporaryDirectory() as profile, sync_playwright() as playwright:
        context = playwright.chromium.launch_persistent_context(
            profile,
            executable_path=CHROMIUM,
            headless=False,
            no_viewport=True,
            args=list(KIOSK_ARGS),
            env={**os.environ, "DISPLAY": display},
        )
        try:
            page = context.pages[0] if context.pages else context.new_page()
            page.wait_for_function(f"innerWidth === {width} && innerHeight === {height}")
            for name, path in DOCS_PAGES:
                yield name, DocsPage(page, path)
        finally:
            context.close()


# --- Tk: an order form ---------------------------------------------------------------------------------------
class TkForm:
    """apps/tk_form.py, which reports its text's geometry as JSON lines and edits its status line."""

    def __init__(self, display: str, width: int, height: int) -> None:
        geometry = f"{width - 120}x{height - 110}+40+30"
        self.process = subprocess.Popen(
            [sys.executable, str(APPS / "tk_form.py"), geometry],
            env={**os.environ, "DISPLAY": display},
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            text=True,
        )
        try:
            self.report = self._receive()
        except BaseException:
            self.close()
            raise
        self.status = self.report["status"]

    def _receive(self, timeout: float = 20.0) -> dict[str, Any]:
        assert self.process.stdout is not None
        ready, _, _ = select.select([self.process.stdout], [], [], timeout)
        line = self.process.stdout.readline() if ready else ""
        if not line:
            raise RuntimeError(f"tk_form.py did not report within {timeout:g} s (exit status {self.process.poll()})")
        return json.loads(line)

    def read(self) -> Reading:
        segments = tuple(segment_from_line(line) for line in self.report["lines"])
        return Reading(segments, elsewhere=(self.report["title"],))

    def edit(self, step: int) -> Rect:
        assert self.process.stdin is not None
        self.process.stdin.write(f"edit {rotate_words(self.status, step)}\n")
        self.process.stdin.flush()
        self.report = self._receive()
        return _rect(self.report["edited"])

    def close(self) -> None:
        _stop(self.process)


def _tk_form(display: str, width: int, height: int) -> Iterator[tuple[str, Source]]:
    with contextlib.closing(TkForm(display, width, height)) as form:
        yield "tk-form", form


def _stop(process: subprocess.Popen[Any]) -> None:
    with contextlib.suppress(OSError):
        if process.stdin:
            process.stdin.close()
    try:
        process.wait(timeout=5)
    except subprocess.TimeoutExpired:
        process.terminate()
        process.wait(timeout=5)


# --- xterm: source code and documentation source ---------------------------------------------------------------
XTERMS = (
    ("textwrap.py", ("-bg", "#1e1e1e", "-fg", "#dcdcdc"), Path(textwrap.__file__)),
    ("datastructures.rst.txt", ("-bg", "white", "-fg", "black"), DOCS / "_sources/tutorial/datastructures.rst.txt"),
)
XTERM_CELL = (9, 18)  # DejaVu Sans Mono at 15 px; checked against the real window geometry
FRAME = (2, 25)  # openbox decorations: width and height added to a client window


@dataclass
class Xterm:
    """An xterm that cats a FIFO we write to, so we know every character it shows and can rewrite rows.

    Lines longer than `columns` are cut there (like `less -S`); words the cut goes through are not clear.
    """

    title: str
    process: subprocess.Popen[bytes]
    fifo: int
    origin: tuple[int, int] = (0, 0)
    columns: int = 0
    lines: list[str] = field(default_factory=list)

    def show(self, lines: list[str]) -> None:
        self.lines = lines
        self.write("\x1b[?25l\x1b[H\x1b[2J" + "\r\n".join(line[: self.columns] for line in lines))

    def rewrite(self, row: int, text: str) -> Rect:
        old = self.lines[row]
        self.lines[row] = text
        self.write(f"\x1b[{row + 1};1H\x1b[2K{text[: self.columns]}")
        (x0, y0), (width, height) = self.origin, XTERM_CELL
        chars = min(max(len(old), len(text)), self.columns)
        return Rect(left=x0, top=y0 + row * height, width=chars * width, height=height)

    def write(self, text: str) -> None:
        os.write(self.fifo, text.encode("ascii"))

    def segments(self) -> list[Segment]:
        (x0, y0), (width, height) = self.origin, XTERM_CELL
        return [
            segment_from_line(
                {
                    "kind": "terminal",
                    "text": text,
                    "edges": [x0 + i * width for i in range(len(text) + 1)],
                    "top": y0 + row * height,
                    "bottom": y0 + (row + 1) * height,
                    "clear": True,
                    "right": x0 + self.columns * width,
                }
            )
            for row, text in enumerate(self.lines)
        ]

    def close(self) -> None:
        os.close(self.fifo)
        _stop(self.process)


class Terminals:
    """Two xterms side by side: Python source on the left (the edited row), reStructuredText on the right."""

    def __init__(self, display: str, width: int, height: int, workdir: Path) -> None:
        cols = (width // 2 - FRAME[0] - 2 * XTERM_BORDER) // XTERM_CELL[0]
        rows = (height - FRAME[1] - 2 * XTERM_BORDER) // XTERM_CELL[1]
        self.terms: list[Xterm] = []
        try:
            for i, (title, colours, path) in enumerate(XTERMS):
                term = _launch_xterm(
                    display, title, colours, workdir / f"xterm{i}", f"{cols}x{rows}+{i * width // 2}+0"
                )
                self.terms.append(term)
                _place(term, display, cols, rows)
                term.show(_terminal_lines(path, rows))
        except BaseException:
            self.close()
            raise
        self.row = _editable_row(self.terms[0])
        self.original = self.terms[0].lines[self.row]

    def read(self) -> Reading:
        return Reading(tuple(s for term in self.terms for s in term.segments()), tuple(t.title for t in self.terms))

    def edit(self, step: int) -> Rect:
        return self.terms[0].rewrite(self.row, rotate_words(self.original, step))

    def close(self) -> None:
        for term in self.terms:
            term.close()


def _launch_xterm(display: str, title: str, colours: tuple[str, ...], fifo: Path, geometry: str) -> Xterm:
    os.mkfifo(fifo)
    command = ["xterm", "-T", title, "-fa", XTERM_FONT, "-b", str(XTERM_BORDER), *colours, "-geometry", geometry]
    command += ["-e", "sh", "-c", 'exec cat "$0"', str(fifo)]
    process = subprocess.Popen(command, env={**os.environ, "DISPLAY": display}, stdin=subprocess.DEVNULL)
    try:
        return Xterm(title, process, _open_fifo(fifo, process))
    except BaseException:
        _stop(process)
        raise


def _place(term: Xterm, display: str, cols: int, rows: int) -> None:
    """Where the character grid is: the framed window's position plus the internal border."""
    left, top, width, height = _client_window(display, term.title)
    if (width - 2 * XTERM_BORDER, height - 2 * XTERM_BORDER) != (cols * XTERM_CELL[0], rows * XTERM_CELL[1]):
        raise RuntimeError(f"xterm {term.title!r} is {width}x{height} px, not {cols}x{rows} cells of {XTERM_CELL}")
    term.origin, term.columns = (left + XTERM_BORDER, top + XTERM_BORDER), cols - 1


def _terminals(display: str, width: int, height: int) -> Iterator[tuple[str, Source]]:
    with (
        tempfile.TemporaryDirectory() as workdir,
        contextlib.closing(Terminals(display, width, height, Path(workdir))) as terms,
    ):
        yield "xterm", terms


def _open_fifo(path: Path, process: subprocess.Popen[bytes], timeout: float = 10.0) -> int:
    """Open for writing once xterm's cat has opened it for reading (non-blocking, so a dead xterm fails)."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline and process.poll() is None:
        try:
            fd = os.open(path, os.O_WRONLY | os.O_NONBLOCK)
        except OSError:  # ENXIO: no reader yet
            time.sleep(0.05)
            continue
        os.set_blocking(fd, True)
        return fd
    raise RuntimeError(f"xterm did not start reading {path} (exit status {process.poll()})")


def _client_window(display: str, title: str, timeout: float = 10.0) -> tuple[int, int, int, int]:
    """Screen position and size of the top-level window called `title`, once the window manager framed it."""
    from Xlib import display as xdisplay

    conn = xdisplay.Display(display)
    try:
        root = conn.screen().root
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            for frame in root.query_tree().children:
                for window in frame.query_tree().children:
                    if window.get_wm_name() == title:
                        origin, geometry = root.translate_coords(window, 0, 0), window.get_geometry()
                        return origin.x, origin.y, geometry.width, geometry.height
            time.sleep(0.05)
    finally:
        conn.close()
    raise RuntimeError(f"no framed window called {title!r} within {timeout:g} s")


def _terminal_lines(path: Path, rows: int) -> list[str]:
    """The file's first rows as a terminal shows them: tabs expanded, ASCII only."""
    text = path.read_text(encoding="utf-8").encode("ascii", "replace").decode("ascii")
    return [line.expandtabs().rstrip() for line in text.splitlines()[:rows]]


def _editable_row(term: Xterm) -> int:
    """The row nearest the middle that fits and has at least five words: rotating them changes it clearly."""
    rows = [i for i, line in enumerate(term.lines) if len(line.split()) >= 5 and len(line) <= term.columns]
    return min(rows, key=lambda i: abs(i - len(term.lines) // 2))


# --- files: write the screen set, load it back --------------------------------------------------------------------
def write_screen_set(
    out: Path, size: str = "1920x1080", *, seed: int = 0, targets_per_screen: int = 40, overlay: bool = False
) -> dict[str, Any]:
    """NAME.png, NAME.changed.png and NAME.json per screen, and screens.json (the index); returns the index."""
    out.mkdir(parents=True, exist_ok=True)
    index: dict[str, Any] = {"size": size, "seed": seed, "screens": []}
    started = time.monotonic()
    screens = iter_screens(size, seed=seed, targets_per_screen=targets_per_screen)
    with contextlib.closing(screens):
        for screen in screens:
            change = screen.change()
            screen.image.save(out / f"{screen.name}.png")
            change.image.save(out / f"{screen.name}.changed.png")
            record = {
                "name": screen.name,
                "targets": [t.to_json() for t in screen.targets],
                "change": {
                    "line": _rect_list(change.line),
                    "line_targets": [t.to_json() for t in change.line_targets],
                    "targets": [t.to_json() for t in change.targets],
                },
            }
            (out / f"{screen.name}.json").write_text(json.dumps(record, indent=1), encoding="utf-8")
            if overlay:
                draw_boxes(screen.image, screen.targets).save(out / f"{screen.name}.boxes.png")
                draw_boxes(change.image, change.line_targets, change.line).save(
                    out / f"{screen.name}.changed.boxes.png"
                )
            index["screens"].append({"name": screen.name, "targets": len(screen.targets)})
            print(
                f"{screen.name}: {len(screen.targets)} targets, {len(change.line_targets)} on the edited line",
                file=sys.stderr,
            )
    index["seconds"] = round(time.monotonic() - started, 1)
    (out / "screens.json").write_text(json.dumps(index, indent=1), encoding="utf-8")
    return index


def load_screen_set(directory: Path) -> list[Screen]:
    """Screens written by `write_screen_set`; their `change()` returns the recorded change."""
    index = json.loads((directory / "screens.json").read_text(encoding="utf-8"))
    screens = []
    for entry in index["screens"]:
        name = entry["name"]
        record = json.loads((directory / f"{name}.json").read_text(encoding="utf-8"))
        stored = record["change"]
        change = Change(
            image=Image.open(directory / f"{name}.changed.png").convert("RGB"),
            line=_rect(stored["line"]),
            line_targets=tuple(Target.from_json(t) for t in stored["line_targets"]),
            targets=tuple(Target.from_json(t) for t in stored["targets"]),
        )
        image = Image.open(directory / f"{name}.png").convert("RGB")
        screens.append(Screen(name, image, tuple(Target.from_json(t) for t in record["targets"]), _recorded(change)))
    return screens


def _recorded(change: Change) -> Callable[[], Change]:
    return lambda: change


def draw_boxes(image: Image.Image, targets: Sequence[Target], line: Rect | None = None) -> Image.Image:
    """A copy with every target box in red (and the edited line in blue), to check the ground truth by eye."""
    copy = image.copy()
    draw = ImageDraw.Draw(copy)
    if line is not None:
        draw.rectangle(_corners(line), outline=(0, 90, 255))
    for target in targets:
        for box in target.boxes:
            draw.rectangle(_corners(box), outline=(255, 0, 0))
    return copy


def _corners(rect: Rect) -> tuple[int, int, int, int]:
    return rect.left - 1, rect.top - 1, rect.left + rect.width, rect.top + rect.height


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--out", type=Path, required=True, help="directory for the PNGs and JSON")
    parser.add_argument("--size", default="1920x1080", help="display size WIDTHxHEIGHT")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--targets", type=int, default=40, help="targets per screen")
    parser.add_argument("--overlay", action="store_true", help="also write NAME.boxes.png with the boxes drawn")
    args = parser.parse_args(argv)
    index = write_screen_set(args.out, args.size, seed=args.seed, targets_per_screen=args.targets, overlay=args.overlay)
    total = sum(s["targets"] for s in index["screens"])
    print(f"{len(index['screens'])} screens, {total} targets at {args.size} in {index['seconds']} s -> {args.out}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
