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
    one, no earlier match can appear, and its words keep their ids (words are numbered in reading order). (Lines join
    when their facing words are centred within a third of the joining line's tallest word of each other; a word
    starting below a line's bottom is centred at least 4 px of crop padding plus half its height and half the facing
    word's below it, which only a line holding a word about 1.5 times taller than those two together could bridge:
    text of such mixed sizes on one line is the case this rule does not guard.)

    The lines up to the match are those of the reading as it stands after the last block read, so `reach` is asked
    again after every block once the match can exist, not only after blocks holding a word of the phrase: blocks are
    read in parallel, and a block starting higher may come in after the match was found, with a line before the
    match's that reaches further down (a tall heading in the next column, its top above the match's line), which a
    block starting below the old reach can join. The match has every word of the phrase as an OCR word verbatim, so
    until all of them have been read somewhere there is nothing to ask."""

    def __init__(self, phrase: str, matches: Matcher) -> None:
        self._phrase = phrase
        self._matches = matches
        self._unseen = set(phrase.split())

    def may_settle(self, words: Sequence[RecognizedWord]) -> bool:
        self._unseen.difference_update(word.text for word in words)
        return not self._unseen

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
