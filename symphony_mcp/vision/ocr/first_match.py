"""`find_text`'s reading goal: read top first and stop once the first match is the one a whole reading ranks first."""

from __future__ import annotations

from collections.abc import Callable, Sequence

from symphony_mcp.vision.ocr.matching import TextMatch
from symphony_mcp.vision.ocr.pipeline import PartialReading
from symphony_mcp.vision.ocr.types import OcrResult, RecognizedWord

Matcher = Callable[[OcrResult, str], list[TextMatch]]  # a phrase's matches in a reading, ranked best first


class FirstMatch:
    """Stop once the first match of `phrase` in the blocks read so far is final.

    That holds when the first match is as good as a match can be (exact, case-exact, on one line, score 100, each
    word as the phrase spells it), so only reading order ranks it against others, and every block starting above the
    bottom of every line up to its own (in reading order) has been read. Every line before it is then read whole: a
    word of a block not read yet starts below all of them, so it can neither start a line before it nor be joined to
    one (joined words are centred within a third of a line height of each other), no earlier match can appear, and
    its words keep their ids (words are numbered in reading order). Such a match has every word of the phrase as an
    OCR word verbatim, so only a block holding one of them, once all of them have been read somewhere, can bring
    one."""

    def __init__(self, phrase: str, matches: Matcher) -> None:
        self._phrase = phrase
        self._matches = matches
        self._missing = set(phrase.split())
        self._words = frozenset(self._missing)

    def may_settle(self, words: Sequence[RecognizedWord]) -> bool:
        held = self._words.intersection(word.text for word in words)
        self._missing -= held
        return bool(held) and not self._missing

    def reach(self, reading: PartialReading) -> float | None:
        result = reading.result
        matches = self._matches(result, self._phrase)
        if not matches:
            return None
        first = matches[0]
        best = first.exact and first.case_exact and len(first.boxes) == 1 and first.score == 100
        if not best or first.text.split() != self._phrase.split():
            return None
        last = result.words[first.word_ids[0]].line_id
        return max(line.box.top + line.box.height for line in result.lines[: last + 1])
