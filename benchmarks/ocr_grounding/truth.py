"""Ground truth for OCR grounding: what a screen shows (from the app that drew it), which phrases are fair
targets, and their boxes trimmed to the ink in the captured image.

Where text is comes from the app, never from OCR: DOM ranges (per character) in Chromium, Tk's and Qt's own
geometry, the character grid in xterm. Each box is then trimmed to the ink of its glyphs in the captured
image, which also proves that the text was drawn there.

A phrase is 1 to 3 words on one line, or one run of characters with punctuation in it ("--all", "key=value",
"/usr/bin"). It is a target only if every place the screen shows it is one of its boxes and at most three
such places exist, counted case-insensitively, also inside longer words, both as drawn and with punctuation
read as spaces (which is how a tolerant matcher sees "--all" and "all"); so "the click point is inside one
of the phrase's boxes" is a fair test whatever text matching the harness does.
"""

from __future__ import annotations

import itertools
import math
import random
import re
from collections import defaultdict
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from typing import Any, Protocol

import numpy as np
from PIL import Image

from symphony_mcp.imaging.geometry import Rect

MAX_WORDS = 3
MAX_OCCURRENCES = 3
MIN_LENGTH = 2  # "ok", "no", "Go": buttons say little
INK_THRESHOLD = 64  # channel step from the background that counts as ink...
MIN_INK_THRESHOLD = 12  # ...or half the strongest step in the box, down to this, for faint text
LOW_CONTRAST = 3.0  # WCAG contrast ratio below which text counts as low contrast (AA asks 4.5, 3 for large)
SHORT_WORD = 4  # a single word of at most this many letters and digits is a short word
CLASSES = ("low-contrast", "code", "short", "normal")
CORE = re.compile(r"[^A-Za-z0-9_]*([A-Za-z0-9_]+(?:[.\-][A-Za-z0-9_]+)*)[^A-Za-z0-9_]*")
PLAIN = re.compile(r"[A-Za-z0-9 ]*")
NOT_WORD = re.compile(r"[^a-z0-9]+")

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


class Source(Protocol):
    """A screen on display: what it shows, and how to edit one line of it (returns the line's box)."""

    def read(self) -> Reading: ...

    def edit(self, step: int) -> Rect: ...


def segment_from_line(data: dict[str, Any]) -> Segment:
    """A line reported as text plus character edges (Tk, Qt, xterm) split into runs.

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


def segment_from_dom(data: dict[str, Any], scale: float = 1.0) -> Segment:
    """A segment from apps/dom_text.js, whose CSS px are `scale` screen px each (the device scale factor)."""
    runs = tuple(
        Run(
            r["text"],
            tuple(scale * edge for edge in r["edges"]),
            scale * r["top"],
            scale * r["bottom"],
            r["clear"],
            r["spaces"],
        )
        for r in data["runs"]
    )
    return Segment(data["kind"], runs)


# --- which phrases are unambiguous, and where they are --------------------------------------------------
@dataclass(frozen=True)
class Phrase:
    text: str  # as drawn inside its boxes
    kind: str
    boxes: tuple[Box, ...]


def words_of(text: str) -> str:
    """Lowercase, punctuation read as spaces: how a tolerant matcher compares text."""
    return " ".join(NOT_WORD.sub(" ", text.lower()).split())


def phrase_table(reading: Reading) -> dict[str, Phrase]:
    """Phrases (lowercased key) whose every appearance on screen is a clear occurrence (see the module doc)."""
    found: dict[str, list[tuple[str, str, Box]]] = defaultdict(list)
    for segment in reading.segments:
        for text, box in [*_phrases_in(segment), *_tokens_in(segment)]:
            found[text.lower()].append((text, segment.kind, box))
    haystack = "\n".join([screen_text(reading.segments), *reading.elsewhere]).lower()
    spoken = "\n".join(words_of(line) for line in haystack.splitlines())
    table = {}
    for key, hits in found.items():
        unique = haystack.count(key) == len(hits) and spoken.count(words_of(key)) == len(hits)
        if len(hits) <= MAX_OCCURRENCES and unique and _worth_asking(key):
            table[key] = Phrase(hits[0][0], hits[0][1], tuple(box for _, _, box in hits))
    return table


def _worth_asking(phrase: str) -> bool:
    return sum(c.isalnum() for c in phrase) >= MIN_LENGTH and any(c.isalpha() for c in phrase)


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


def _tokens_in(segment: Segment) -> Iterator[tuple[str, Box]]:
    """Single clear runs with punctuation inside that a word phrase would not ask for as drawn."""
    for run in segment.runs:
        token = run.text.rstrip(",;:.")
        core = CORE.fullmatch(token)
        if run.clear and not PLAIN.fullmatch(token) and not (core and core.group(1) == token):
            yield token, (run.edges[0], run.top, run.edges[len(token)], run.bottom)


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
    """A phrase to find, every box (screen px) where the screen shows it, and its class (one of CLASSES)."""

    phrase: str
    kind: str
    boxes: tuple[Rect, ...]
    category: str = "normal"

    def hit(self, x: float, y: float) -> bool:
        return any(box.contains(math.floor(x), math.floor(y)) for box in self.boxes)

    def to_json(self) -> dict[str, Any]:
        boxes = [rect_list(b) for b in self.boxes]
        return {"phrase": self.phrase, "kind": self.kind, "boxes": boxes, "category": self.category}

    @classmethod
    def from_json(cls, data: dict[str, Any]) -> Target:
        return cls(data["phrase"], data["kind"], tuple(rect(b) for b in data["boxes"]), data["category"])


def rect_list(box: Rect) -> list[int]:
    return [box.left, box.top, box.width, box.height]


def rect(values: Sequence[int]) -> Rect:
    left, top, width, height = values
    return Rect(left=left, top=top, width=width, height=height)


def box_rect(box: Box) -> Rect:
    left, top = math.floor(box[0]), math.floor(box[1])
    return Rect(left=left, top=top, width=max(1, math.ceil(box[2]) - left), height=max(1, math.ceil(box[3]) - top))


@dataclass(frozen=True)
class Inked:
    box: Rect
    contrast: float  # WCAG contrast ratio of the strongest ink against the background


class Inker:
    """Trims layout boxes to the ink of their glyphs: tight boxes, and proof the text was drawn there."""

    def __init__(self, image: Image.Image) -> None:
        self.pixels = np.asarray(image, dtype=np.int16)

    def target(self, phrase: Phrase) -> Target | None:
        inked = [self.trim(box) for box in phrase.boxes]
        found = [ink for ink in inked if ink is not None]
        if len(found) < len(inked):
            return None
        contrast = min(ink.contrast for ink in found)
        return Target(phrase.text, phrase.kind, tuple(ink.box for ink in found), classify(phrase, contrast))

    def trim(self, box: Box) -> Inked | None:
        height, width = self.pixels.shape[:2]
        left, top = max(0, math.floor(box[0])), max(0, math.floor(box[1]))
        right, bottom = min(width, math.ceil(box[2])), min(height, math.ceil(box[3]))
        crop = self.pixels[top:bottom, left:right]
        if crop.shape[0] < 3 or crop.shape[1] < 3:
            return None
        border = np.concatenate([crop[0], crop[-1], crop[:, 0], crop[:, -1]])
        colours, counts = np.unique(border, axis=0, return_counts=True)
        background = colours[counts.argmax()]
        distance = np.abs(crop - background).max(axis=2)
        ink = distance > max(MIN_INK_THRESHOLD, min(INK_THRESHOLD, int(distance.max()) // 2))
        rows, cols = np.flatnonzero(ink.any(axis=1)), np.flatnonzero(ink.any(axis=0))
        # Glyphs fill most of their advance width; much less ink means the text is not (all) there.
        if cols.size == 0 or cols[-1] - cols[0] + 1 < 0.5 * (right - left):
            return None
        strongest = crop.reshape(-1, 3)[int(distance.argmax())]
        found = Rect(
            left=left + int(cols[0]),
            top=top + int(rows[0]),
            width=int(cols[-1] - cols[0]) + 1,
            height=int(rows[-1] - rows[0]) + 1,
        )
        return Inked(found, contrast_ratio(background, strongest))


def contrast_ratio(a: Sequence[int], b: Sequence[int]) -> float:
    """WCAG 2 contrast ratio of two sRGB colours (1 to 21)."""
    la, lb = _luminance(a), _luminance(b)
    return (max(la, lb) + 0.05) / (min(la, lb) + 0.05)


def _luminance(colour: Sequence[int]) -> float:
    linear = [c / 12.92 if c <= 0.04045 else ((c + 0.055) / 1.055) ** 2.4 for c in (int(v) / 255 for v in colour)]
    return 0.2126 * linear[0] + 0.7152 * linear[1] + 0.0722 * linear[2]


def classify(phrase: Phrase, contrast: float) -> str:
    """The phrase's class, first that applies: low contrast, punctuation in it, a short word, code font, normal."""
    if contrast < LOW_CONTRAST:
        return "low-contrast"
    if not PLAIN.fullmatch(phrase.text):
        return "code"
    if " " not in phrase.text and len(phrase.text) <= SHORT_WORD:
        return "short"
    return "code" if phrase.kind == "code" else "normal"


def choose_targets(reading: Reading, image: Image.Image, count: int, rng: random.Random) -> tuple[Target, ...]:
    """A seeded pick spread over phrase classes, kinds of text, single words vs phrases, and a 3x3 grid of
    the screen (every phrase is inked first, so its class is known and undrawn phrases are never picked)."""
    groups: dict[tuple[str, str, bool, int, int], list[Target]] = defaultdict(list)
    inker = Inker(image)
    for phrase in sorted(phrase_table(reading).values(), key=lambda p: p.text.lower()):
        target = inker.target(phrase)
        if target is None:
            continue
        left, top, right, bottom = phrase.boxes[0]
        cell = int(1.5 * (left + right) / image.width), int(1.5 * (top + bottom) / image.height)
        groups[(target.category, phrase.kind, " " in phrase.text, *cell)].append(target)
    order = sorted(groups)
    rng.shuffle(order)
    for key in order:
        rng.shuffle(groups[key])
    # Round robin over the groups of each class, then over the classes: a class with few groups is not
    # outnumbered by one with many.
    classes = sorted({key[0] for key in order})
    by_class = [_interleave([groups[key] for key in order if key[0] == category]) for category in classes]
    return tuple(_interleave(by_class)[:count])


def _interleave(lists: list[list[Target]]) -> list[Target]:
    return [item for batch in itertools.zip_longest(*lists) for item in batch if item is not None]


def targets_on(reading: Reading, image: Image.Image, line: Rect) -> tuple[Target, ...]:
    """Every target with a box on the given line, top to bottom, left to right."""
    inker, found = Inker(image), []
    for phrase in phrase_table(reading).values():
        if any(line.intersect(box_rect(box)) for box in phrase.boxes) and (target := inker.target(phrase)):
            found.append(target)
    return tuple(sorted(found, key=lambda t: (t.boxes[0].top, t.boxes[0].left, t.phrase)))


def rotate_words(text: str, step: int) -> str:
    """The same words in another order each step: the line keeps its length and still reads as words."""
    words = text.split()
    shift = 1 + (step - 1) % (len(words) - 1)
    lead, trail = text[: len(text) - len(text.lstrip())], text[len(text.rstrip()) :]
    return lead + " ".join(words[shift:] + words[:shift]) + trail


# --- phrases that are not on screen: what a tolerant matcher must not find ---------------------------------
LOOK_ALIKES = ("il1|", "o0", "s5", "b8")  # glyph groups OCR (and a tolerant matcher) may take for one another


def choose_absent(reading: Reading, targets: Sequence[Target], rng: random.Random) -> tuple[str, ...]:
    """Near misses of the targets that the screen does not show: each target with one letter or digit changed to
    another of its kind that is no look-alike of it ('Va4' -> 'Vk4', 'Sync' -> 'Synm').

    A phrase counts as absent only if the screen shows it nowhere, also inside longer words and with punctuation
    read as spaces (the haystack `phrase_table` uses), so any exact match for it is a false positive."""
    haystack = "\n".join([screen_text(reading.segments), *reading.elsewhere]).lower()
    spoken = "\n".join(words_of(line) for line in haystack.splitlines())
    absent = []
    for target in targets:
        phrase = _near_miss(target.phrase, rng)
        if phrase is not None and phrase.lower() not in haystack and words_of(phrase) not in spoken:
            absent.append(phrase)
    return tuple(absent)


def _near_miss(phrase: str, rng: random.Random) -> str | None:
    places = [i for i, c in enumerate(phrase) if c.isascii() and c.isalnum()]
    if not places:
        return None
    i = rng.choice(places)
    old = phrase[i]
    pool = "0123456789" if old.isdigit() else "abcdefghijklmnopqrstuvwxyz"
    group = next((g for g in LOOK_ALIKES if old.lower() in g), old.lower())
    new = rng.choice([c for c in pool if c not in group])
    return phrase[:i] + (new.upper() if old.isupper() else new) + phrase[i + 1 :]
