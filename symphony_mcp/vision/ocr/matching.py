"""Find a phrase among OCR words: tolerant of OCR noise, case, punctuation and line breaks.

A phrase is compared, with a fuzzy ratio on normalised text, to every run of consecutive
words in reading order (a run may continue onto the next line). Runs of the phrase's word
count and one more or fewer are tried, since OCR splits and merges words. The caller gets
every match above the threshold, best first, with the boxes of the matched words.
"""

from __future__ import annotations

import math
import re
import unicodedata

from pydantic import BaseModel, Field
from rapidfuzz import fuzz

from symphony_mcp.desktop.geometry import Point, Rect, union
from symphony_mcp.vision.ocr.models import OcrResult, OcrWord

_PUNCTUATION = re.compile(r"[^\w\s]", re.UNICODE)
_EQUIVALENT = str.maketrans({"‘": "'", "’": "'", "“": '"', "”": '"', "–": "-", "—": "-", "\u00a0": " "})
MIN_SCORE = 80.0


class TextMatch(BaseModel):
    """Where a phrase was seen: the words, their boxes per line, and the points to act on."""

    text: str = Field(description="the words as OCR read them")
    score: float = Field(description="similarity to the phrase, 0..100")
    word_ids: list[int]
    boxes: list[Rect] = Field(description="one box per line the match spans, screen pixels")
    box: Rect = Field(description="union of the match's boxes, screen pixels")
    center: Point = Field(description="centre of the first line's box: where a click lands")
    start: Point = Field(description="left edge of the first word, vertically centred: caret before the phrase")
    end: Point = Field(description="right edge of the last word, vertically centred: caret after the phrase")


def normalize(text: str) -> str:
    """Casefold, unify quotes and dashes, drop punctuation and accents' compatibility forms, squeeze spaces."""
    text = unicodedata.normalize("NFKC", text).translate(_EQUIVALENT).casefold()
    return " ".join(_PUNCTUATION.sub(" ", text).split())


def find_phrase(result: OcrResult, phrase: str, min_score: float = MIN_SCORE) -> list[TextMatch]:
    """All non-overlapping matches of `phrase`, best first (ties in reading order)."""
    target = normalize(phrase)
    if not target:
        return []
    words = result.words
    normalized = [normalize(word.text) for word in words]
    size = len(target.split())
    below = _lines_below(result)
    candidates: list[tuple[float, tuple[int, ...]]] = []
    for start in range(len(words)):
        if not normalized[start]:
            continue
        run = _run_from(result, below, start, size + 1)
        for count in range(max(1, size - 1), min(size + 1, len(run)) + 1):
            ids = run[:count]
            score = _score(target, _join([normalized[i] for i in ids], [words[i] for i in ids]))
            if score >= min_score:
                candidates.append((score, tuple(ids)))
    return [_match([words[i] for i in ids], score) for score, ids in _best_disjoint(candidates)]


def _run_from(result: OcrResult, below: dict[int, int | None], start: int, limit: int) -> list[int]:
    """Word ids in reading order from `start`: the rest of its line, then the line below it in the same column."""
    ids: list[int] = []
    word = result.words[start]
    line = result.lines[word.line_id]
    position = line.word_ids.index(start)
    while len(ids) < limit:
        ids.extend(line.word_ids[position : position + limit - len(ids)])
        following = below[line.id]
        if following is None:
            break
        line, position = result.lines[following], 0
    return ids


def _lines_below(result: OcrResult) -> dict[int, int | None]:
    """Each line's next line in the same column: overlapping horizontally, starting within about a line below."""
    below: dict[int, int | None] = {}
    for line in result.lines:
        box = line.box
        best: tuple[int, int] | None = None
        for other in result.lines:
            gap = other.box.top - (box.top + box.height)
            overlaps = other.box.left < box.left + box.width and box.left < other.box.left + other.box.width
            if overlaps and -box.height // 3 <= gap <= box.height and (best is None or other.box.top < best[0]):
                best = (other.box.top, other.id)
        below[line.id] = None if best is None else best[1]
    return below


def _join(parts: list[str], words: list[OcrWord]) -> str:
    """Join words; a word ending in a hyphen at a line end continues on the next line."""
    joined = ""
    for index, part in enumerate(parts):
        if not part:
            continue
        hyphenated = (
            index > 0 and words[index - 1].text.endswith("-") and words[index - 1].line_id != words[index].line_id
        )
        joined += part if hyphenated or not joined else " " + part
    return joined


def _score(target: str, candidate: str) -> float:
    if not candidate:
        return 0.0
    score = fuzz.ratio(target, candidate)
    # Short targets inside a word with decoration ("Save" in "Save…") still count, a little lower.
    if len(target) >= 3 and target in candidate.split():
        score = max(score, 95.0)
    return float(score)


def _best_disjoint(candidates: list[tuple[float, tuple[int, ...]]]) -> list[tuple[float, tuple[int, ...]]]:
    """Greedy by score (then reading order, then fewer words): drop candidates overlapping a better one."""
    chosen: list[tuple[float, tuple[int, ...]]] = []
    taken: set[int] = set()
    for score, ids in sorted(candidates, key=lambda c: (-c[0], c[1][0], len(c[1]))):
        if taken.intersection(ids):
            continue
        taken.update(ids)
        chosen.append((score, ids))
    return chosen


def _match(words: list[OcrWord], score: float) -> TextMatch:
    boxes = []
    for line_id in dict.fromkeys(w.line_id for w in words):
        boxes.append(union([w.box for w in words if w.line_id == line_id]))
    first, last = words[0].box, words[-1].box
    return TextMatch(
        text=" ".join(w.text for w in words),
        score=round(score, 1),
        word_ids=[w.id for w in words],
        boxes=boxes,
        box=union(boxes),
        center=Point(x=boxes[0].left + boxes[0].width // 2, y=boxes[0].top + boxes[0].height // 2),
        start=Point(x=first.left, y=first.top + first.height // 2),
        end=Point(x=last.left + last.width - 1, y=last.top + last.height // 2),
    )


def rank(matches: list[TextMatch], near: Point | None = None, inside: Rect | None = None) -> list[TextMatch]:
    """Keep matches inside a region (by centre) and order by nearness to a point, if given."""
    if inside is not None:
        matches = [m for m in matches if inside.contains(m.center.x, m.center.y)]
    if near is not None:
        matches = sorted(matches, key=lambda m: (math.dist((m.center.x, m.center.y), (near.x, near.y)), -m.score))
    return matches


def closest_texts(result: OcrResult, phrase: str, limit: int = 5) -> list[str]:
    """The lines most similar to the phrase, for a 'not found' message that helps the caller."""
    target = normalize(phrase)
    scored = sorted(
        ((fuzz.partial_ratio(target, normalize(line.text)), line.text) for line in result.lines if line.text.strip()),
        key=lambda item: -item[0],
    )
    return [text for _, text in scored[:limit]]
