"""Find a phrase among OCR words: tolerant of OCR noise, case, punctuation and line breaks.

Text is compared as tokens: split at spaces and punctuation, so the OCR word `«/usr/share/doc»`
holds the three tokens of the phrase `/usr/share/doc`. The phrase is compared, with a fuzzy ratio
on normalised text, to every run of consecutive tokens in reading order (a run may continue onto
the line below) of the phrase's token count or one more or fewer, since OCR splits and merges
words. A run loses leading and trailing tokens its score does not need, so a match never reaches
into the next word or line for nothing. A match reports the whole words that hold its tokens: a run
that is only part of a word (`sort_keys` in `sort_keys=False,`) can score 100 but is never exact.
Its box, though, is that part's share of the word's box by character count (engines give one box
per word): a click on `True` in `close_fds=True,` lands on `True`, not on the `=` in the middle.

Matches are ordered by one explicit key (`_ranking`), best first:
1. exact (the words hold the phrase's tokens and nothing else, up to case, punctuation and OCR
   glyph mix-ups) before approximate ones: a fuzzy or partial match ("no" in "note") never
   outranks the whole word;
2. case-exact before case-folded ("OPTIONS" before "options]" for the phrase "OPTIONS");
3. on one line before a span onto another line, unless the span scores `WRAP_MARGIN` more than
   every one-line candidate: only then does the phrase really continue there;
4. higher score (the similarity of the matched tokens, 0..100, with glyphs OCR mixes up, I/l/1, O/0, S/5
   and B/8, counted as the same: '0O8' for the label 'OOB' scores 100, though it is not exact);
5. whole words before part of a word;
6. verbatim (punctuation as in the phrase too) first;
7. reading order, then fewer tokens.
"""

from __future__ import annotations

import itertools
import math
import re
import unicodedata
from bisect import bisect_left, bisect_right
from collections.abc import Iterator
from dataclasses import dataclass
from difflib import SequenceMatcher
from itertools import zip_longest

from pydantic import BaseModel, Field
from rapidfuzz import fuzz

from symphony_mcp.imaging.geometry import Point, Rect, union
from symphony_mcp.vision.ocr.types import OcrLine, OcrResult, OcrWord

_PUNCTUATION = re.compile(r"[^\w\s]|_")
_TOKEN = re.compile(r"\S+")
_BAR_BEFORE_LETTER = re.compile(r"(?<!\S)\|(?=[^\W\d_])")
_EQUIVALENT = str.maketrans(
    {"‘": "'", "’": "'", "“": '"', "”": '"', "‐": "-", "–": "-", "—": "-", "−": "-", "\u00ad": "-", "\u00a0": " "}
)
_CONFUSABLE = ("Il1", "O0")
_WITHOUT_CONFUSABLE = str.maketrans("", "", "".join(_CONFUSABLE))
# Glyphs OCR mixes up, as one glyph each for the similarity score (after casefolding, so 'I' is 'i' there): a
# label read with a 0 for an O still scores as that label, though only `_same` can make it exact.
_LOOK_ALIKE = str.maketrans({"i": "l", "1": "l", "|": "l", "0": "o", "5": "s", "8": "b"})
MIN_SCORE = 80.0
WRAP_MARGIN = 10.0

Reading = list[str]


class TokenDifference(BaseModel):
    """One place where the screen's words differ from the phrase's."""

    expected: str | None = Field(description="the phrase's word; null: the screen has an extra word here")
    seen: str | None = Field(description="the word OCR read; null: the phrase's word is missing on screen")


class TextMatch(BaseModel):
    """Where a phrase was seen: the words, their boxes per line, and the points to act on."""

    text: str = Field(description="the words as OCR read them")
    score: float = Field(description="similarity of the matched text to the phrase, 0..100")
    exact: bool = Field(
        description="true: the matched words read as the phrase and nothing more (case, punctuation and OCR "
        "glyph mix-ups aside); false: the text on screen differs from the phrase (see differences); acting "
        "tools refuse it unless approximate=true"
    )
    case_exact: bool = Field(
        description="exact with the same letter case; false while exact is true: only case differs, "
        "check it is the text you meant"
    )
    differences: list[TokenDifference] = Field(
        description="where the screen's words differ from the phrase's (empty when exact): judge from them "
        "whether this is still the text you meant"
    )
    word_ids: list[int]
    boxes: list[Rect] = Field(description="one box per line the match spans, in the result's space")
    box: Rect = Field(description="union of the match's boxes, in the result's space")
    center: Point = Field(description="centre of the first line's box: where a click lands")
    start: Point = Field(description="left edge of the first word, vertically centred: caret before the phrase")
    end: Point = Field(description="right edge of the last word, vertically centred: caret after the phrase")


def normalize(text: str) -> str:
    """Casefold, unify quotes and dashes, drop punctuation and accents' compatibility forms, squeeze spaces."""
    return " ".join(_tokens(text)).casefold()


def _clean(text: str) -> str:
    """Compatibility forms (ligatures, full-width letters) and quote or dash variants as their plain forms."""
    return unicodedata.normalize("NFKC", text).translate(_EQUIVALENT)


def _tokens(text: str) -> Reading:
    """Case-kept tokens: text split at spaces and punctuation (underscores too, which OCR often misses).

    A '|' that starts a word before a letter is taken as the 'I' or 'l' OCR mistook it for, so '|nstall' stays
    one word; inside a word it stays a separator ('start|stop').
    """
    return _split(_clean(text))


def _split(clean: str) -> Reading:
    return _spaced(clean).split()


def _spaced(clean: str) -> str:
    """`clean` with every separator as a space, character for character: tokens keep their places in the word."""
    return _PUNCTUATION.sub(" ", _BAR_BEFORE_LETTER.sub("l", clean))


def _same(expected: str, seen: str, keep_case: bool) -> bool:
    """Whether a token read is the phrase's token: equal (up to case unless `keep_case`), or equal but for
    glyphs OCR mixes up (I/l/1, O/0; '|' at a word's start, see `_tokens`) in a word of letters, which a human
    reads as the same word.

    Letters for letters ('I' for 'l') count anywhere in such a word. A digit for a letter counts only between two
    letters, or first before two ('Fi1e', 'PR0BE', '0pen'): last ('PROBE1', 'v1') or next to another digit a digit
    is more likely meant, and a token with other digits ('A1B2', 'PROBE12') is a code where every glyph matters.
    Only substitutions count: a glyph more or less ('PROBE12' for 'PROBE2') makes another word.
    """
    if expected == seen or (not keep_case and expected.casefold() == seen.casefold()):
        return True
    if len(expected) != len(seen) or not (_letter_word(expected) and _letter_word(seen)):
        return False
    return all(_same_glyph(expected, seen, k, keep_case) for k in range(len(expected)))


def _same_glyph(expected: str, seen: str, k: int, keep_case: bool) -> bool:
    a, b = expected[k], seen[k]
    if a == b or (not keep_case and a.casefold() == b.casefold()):
        return True
    if not any(a in group and b in group for group in _CONFUSABLE):
        return False
    if not (a.isdigit() or b.isdigit()):
        return True
    word = seen if a.isdigit() else expected  # the token with a letter here
    around = word[k - 1] + word[k + 1] if 0 < k < len(word) - 1 else word[1:3] if k == 0 else ""
    return len(around) == 2 and around.isalpha()


def _for_score(text: str) -> str:
    """Text as the similarity score compares it: casefolded, look-alike glyphs as one (same length)."""
    return text.casefold().translate(_LOOK_ALIKE)


def _letter_word(token: str) -> bool:
    """Letters only once the confusable glyphs are set aside (and not only those glyphs: '10' is a number)."""
    return token.translate(_WITHOUT_CONFUSABLE).isalpha()


def _equal(expected: Reading, seen: Reading, keep_case: bool) -> bool:
    return len(expected) == len(seen) and all(_same(e, s, keep_case) for e, s in zip(expected, seen, strict=True))


def _differences(expected: Reading, seen: Reading) -> list[TokenDifference]:
    """The tokens that differ, aligned so that a missing or an extra word shows as one."""
    aligned = SequenceMatcher(None, [t.casefold() for t in expected], [t.casefold() for t in seen], autojunk=False)
    differences = []
    for tag, e0, e1, s0, s1 in aligned.get_opcodes():
        if tag == "equal":
            continue
        for e, s in zip_longest(expected[e0:e1], seen[s0:s1]):
            if e is None or s is None or not _same(e, s, keep_case=False):
                differences.append(TokenDifference(expected=e, seen=s))
    return differences


@dataclass(frozen=True)
class _Candidate:
    tokens: tuple[int, ...]  # the run's token indices on the page
    ids: tuple[int, ...]  # the words that hold them
    score: float
    exact: bool
    case_exact: bool
    whole_words: bool
    verbatim: bool
    lines: int
    differences: list[TokenDifference]


def _ranking(candidate: _Candidate, best_one_line: float) -> tuple[bool, bool, bool, float, bool, bool, int, int]:
    """The ranking key, smallest first (the order is the module docstring's)."""
    wraps_needlessly = candidate.lines > 1 and candidate.score < best_one_line + WRAP_MARGIN
    return (
        not candidate.exact,
        not candidate.case_exact,
        wraps_needlessly,
        -candidate.score,
        not candidate.whole_words,
        not candidate.verbatim,
        candidate.tokens[0],
        len(candidate.tokens),
    )


@dataclass(frozen=True)
class _PageTokens:
    """A reading's tokens in reading order and how they sit in its words and lines: the same for every phrase
    looked for in that reading (about half of a search's time on a page of ~500 words)."""

    words: list[OcrWord]  # the reading's own lists: their identity says which reading this is
    lines: list[OcrLine]
    word_tokens: list[range]  # per word, its tokens' numbers
    spans: list[tuple[float, float]]  # per token, where it lies in its word: share of the characters before its end
    text: Reading
    word_of: list[int]  # per token, its word's id
    hyphenated: list[bool]  # per word, whether it ends with a hyphen
    folded: list[str]  # per token, its text as scored
    below: dict[int, int | None]
    positions: dict[int, int]  # per word id, its place in its line

    @classmethod
    def of(cls, result: OcrResult) -> _PageTokens:
        word_tokens: list[range] = []
        spans: list[tuple[float, float]] = []
        text: Reading = []
        word_of: list[int] = []
        hyphenated: list[bool] = []
        for word in result.words:
            clean = _clean(word.text)
            found = list(_TOKEN.finditer(_spaced(clean)))
            tokens = [m.group() for m in found]
            spans += [(m.start() / len(clean), m.end() / len(clean)) for m in found]  # no token: no division
            word_tokens.append(range(len(text), len(text) + len(tokens)))
            text += tokens
            word_of += [word.id] * len(tokens)
            hyphenated.append(clean.endswith("-"))
        return cls(
            words=result.words,
            lines=result.lines,
            word_tokens=word_tokens,
            spans=spans,
            text=text,
            word_of=word_of,
            hyphenated=hyphenated,
            folded=[_for_score(token) for token in text],
            below=_lines_below(result),
            positions={i: position for line in result.lines for position, i in enumerate(line.word_ids)},
        )


_last_page: list[_PageTokens] = []  # the reading searched last (a repeated frame's reading is the same object)


def _page_tokens(result: OcrResult) -> _PageTokens:
    """The reading's tokens, made once per reading: another phrase on an unchanged screen (or an acting tool after
    `find_text`) searches the same reading, whose word and line lists the pipeline's cache hands out again."""
    last = _last_page[0] if _last_page else None
    if last is not None and last.words is result.words and last.lines is result.lines:
        return last
    tokens = _PageTokens.of(result)
    _last_page[:] = [tokens]
    return tokens


class _Search:
    """One phrase against one OCR result, in tokens: a run may start or end inside an OCR word.

    The page's tokens are numbered in reading order; `word_of[t]` is the word holding token t.
    """

    def __init__(self, result: OcrResult, phrase: str, min_score: float) -> None:
        self.result = result
        self.phrase = phrase
        self.expected = _tokens(phrase)
        self.target = _for_score(" ".join(self.expected))
        self.min_score = min_score
        # A ratio is at most 2 * min(a, b) / (a + b) for texts of lengths a and b: far shorter or longer texts
        # cannot reach min_score, nor be exact (same length as the phrase).
        reach = min_score / 100
        self.shortest = len(self.target) * reach / (2 - reach) - 1e-9
        self.longest = len(self.target) * (2 - reach) / reach + 1e-9 if reach > 0 else math.inf
        tokens = _page_tokens(result)
        self.word_tokens = tokens.word_tokens
        self.spans = tokens.spans
        self.text = tokens.text
        self.word_of = tokens.word_of
        self.hyphenated = tokens.hyphenated
        self.folded = tokens.folded
        self.below = tokens.below
        self.positions = tokens.positions
        self.scores: dict[tuple[int, ...], float] = {}

    def candidates(self) -> list[_Candidate]:
        """Every distinct trimmed run that scores at least `min_score` or is exact."""
        found: dict[tuple[int, ...], _Candidate] = {}
        for run, text, plain in self._runs():
            score = fuzz.ratio(self.target, text) if plain else self.score(run)
            if score < self.min_score and (
                (plain and len(text) != len(self.target)) or self._exact_reading(run, keep_case=False) is None
            ):
                continue  # a run whose text differs in length from the phrase cannot be exact
            run = self._trim(run)
            if run not in found:
                found[run] = self._candidate(run)
        return [c for c in found.values() if c.exact or c.score >= self.min_score]

    def _runs(self) -> Iterator[tuple[tuple[int, ...], str, bool]]:
        """Runs of the phrase's token count +-1 from each token, with the run's casefolded text and whether that
        text is its only reading (no word broken at a line end); runs whose length rules them out are left out.

        The text grows token by token: this loop sees every token a few times and must stay cheap."""
        size = len(self.expected)
        for start, own in enumerate(self.word_tokens):
            if not own:
                continue
            words = self._words_from(start, limit=len(own) + size)
            chain = [t for i in words for t in self.word_tokens[i]]
            breaks = [False] * len(chain)
            if any(self.hyphenated[i] for i in words):
                breaks = [self._breaks_word(before, after) for before, after in itertools.pairwise(chain)]
            for offset in range(len(own)):
                text, plain = self.folded[chain[offset]], True
                for end in range(offset + 1, min(offset + size + 1, len(chain)) + 1):
                    if end > offset + 1:
                        text = f"{text} {self.folded[chain[end - 1]]}"
                        plain = plain and not breaks[end - 2]
                    if plain and len(text) > self.longest:
                        break
                    if end - offset >= size - 1 and (len(text) >= self.shortest or not plain):
                        yield tuple(chain[offset:end]), text, plain

    def _words_from(self, start: int, limit: int) -> list[int]:
        """Word ids in reading order from `start`: the rest of its line, then the line below it in the same column,
        until they hold `limit` tokens; words without tokens (stray punctuation) may add two more."""
        ids: list[int] = []
        count = 0
        line = self.result.lines[self.result.words[start].line_id]
        position = self.positions[start]
        while True:
            for i in line.word_ids[position:]:
                if count >= limit or len(ids) >= limit + 2:
                    return ids
                ids.append(i)
                count += len(self.word_tokens[i])
            following = self.below[line.id]
            if following is None:
                return ids
            line, position = self.result.lines[following], 0

    def _breaks_word(self, before: int, after: int) -> bool:
        """Whether token `before` ends a line with a hyphen and `after` continues that word on the next line."""
        first, second = self.word_of[before], self.word_of[after]
        words = self.result.words
        return self.hyphenated[first] and first != second and words[first].line_id != words[second].line_id

    def readings(self, run: tuple[int, ...]) -> list[Reading]:
        """The tokens a run reads as; two readings when a word ends a line with a hyphen: its last token joined
        to the next line's first ('infor-' 'mation') or not ('command-' 'line')."""
        split = [self.text[t] for t in run]
        joined = split[:1]
        for before, after in itertools.pairwise(run):
            if self._breaks_word(before, after):
                joined[-1] += self.text[after]
            else:
                joined.append(self.text[after])
        return [split] if joined == split else [joined, split]

    def score(self, run: tuple[int, ...]) -> float:
        """Similarity of the run's best reading to the phrase, 0..100 (memoised: runs are scored again when trimmed)."""
        if run not in self.scores:
            self.scores[run] = max(self._ratio(reading) for reading in self.readings(run))
        return self.scores[run]

    def _ratio(self, reading: Reading) -> float:
        return fuzz.ratio(self.target, _for_score(" ".join(reading)))

    def _exact_reading(self, run: tuple[int, ...], keep_case: bool) -> Reading | None:
        return next((r for r in self.readings(run) if _equal(self.expected, r, keep_case)), None)

    def _trim(self, run: tuple[int, ...]) -> tuple[int, ...]:
        """The shortest run within `run` that scores as well: leading and trailing tokens that do not raise the
        score go. A run that reads as the phrase is kept whole: it holds nothing else."""
        if self._exact_reading(run, keep_case=False) is not None:
            return run
        while len(run) > 1:
            shorter = max((run[1:], run[:-1]), key=self.score)
            if self.score(shorter) < self.score(run):
                break
            run = shorter
        return run

    def _candidate(self, run: tuple[int, ...]) -> _Candidate:
        """A run judged as the words it lies in: exact only if those words hold nothing but the phrase, since
        their boxes, which cannot be split, are what the caller acts on."""
        ids = tuple(dict.fromkeys(self.word_of[t] for t in run))
        words = [self.result.words[i] for i in ids]
        whole = tuple(range(self.word_tokens[ids[0]].start, self.word_tokens[ids[-1]].stop))
        exact = whole == run and self._exact_reading(run, keep_case=False) is not None
        return _Candidate(
            tokens=run,
            ids=ids,
            score=self.score(run),
            exact=exact,
            case_exact=exact and self._exact_reading(run, keep_case=True) is not None,
            whole_words=whole == run,
            verbatim=_clean(self.phrase).split() == _clean(" ".join(w.text for w in words)).split(),
            lines=len({w.line_id for w in words}),
            differences=[] if exact else _differences(self.expected, max(self.readings(whole), key=self._ratio)),
        )


def find_phrase(result: OcrResult, phrase: str, min_score: float = MIN_SCORE) -> list[TextMatch]:
    """All non-overlapping matches of `phrase`, best first by the ranking key (ties in reading order).

    A match scores at least `min_score`, or is exact with a glyph mix-up that scores it lower ('Fi1e' for 'File').
    """
    search = _Search(result, phrase, min_score)
    if not search.expected:
        return []
    candidates = search.candidates()
    best_one_line = max((c.score for c in candidates if c.lines == 1), default=-math.inf)
    chosen: list[_Candidate] = []
    taken: set[int] = set()
    for candidate in sorted(candidates, key=lambda c: _ranking(c, best_one_line)):
        if not taken.intersection(candidate.ids):
            taken.update(candidate.ids)
            chosen.append(candidate)
    return [_match(result, candidate, search.spans) for candidate in chosen]


def _lines_below(result: OcrResult) -> dict[int, int | None]:
    """Each line's next line in the same column: overlapping horizontally, starting within about a line below."""
    order = sorted(result.lines, key=lambda line: line.box.top)
    tops = [line.box.top for line in order]
    below: dict[int, int | None] = {}
    for line in result.lines:
        box = line.box
        bottom = box.top + box.height
        first = bisect_left(tops, max(box.top + 1, bottom - math.ceil(box.height / 3)))
        last = bisect_right(tops, bottom + box.height)
        below[line.id] = next((other.id for other in order[first:last] if _overlap_x(other, line)), None)
    return below


def _overlap_x(a: OcrLine, b: OcrLine) -> bool:
    return a.box.left < b.box.left + b.box.width and b.box.left < a.box.left + a.box.width


def _match(result: OcrResult, candidate: _Candidate, spans: list[tuple[float, float]]) -> TextMatch:
    words: list[OcrWord] = [result.words[i] for i in candidate.ids]
    parts = _parts(words, candidate, spans)
    boxes = [
        union([box for w, box in zip(words, parts, strict=True) if w.line_id == line_id])
        for line_id in dict.fromkeys(w.line_id for w in words)
    ]
    first, last = parts[0], parts[-1]
    return TextMatch(
        text=" ".join(w.text for w in words),
        score=round(candidate.score, 1),
        exact=candidate.exact,
        case_exact=candidate.case_exact,
        differences=candidate.differences,
        word_ids=[w.id for w in words],
        boxes=boxes,
        box=union(boxes),
        center=Point(x=boxes[0].left + boxes[0].width // 2, y=boxes[0].top + boxes[0].height // 2),
        start=Point(x=first.left, y=first.top + first.height // 2),
        end=Point(x=last.left + last.width - 1, y=last.top + last.height // 2),
    )


def _parts(words: list[OcrWord], candidate: _Candidate, spans: list[tuple[float, float]]) -> list[Rect]:
    """Per word, the box of the part the match covers: the whole box unless the match covers only some of the
    word's tokens, then those tokens' share of its width by character count (the first and last word of a match
    that is part of a word)."""
    if candidate.whole_words:
        return [w.box for w in words]
    first, last = candidate.tokens[0], candidate.tokens[-1]
    parts = [w.box for w in words]
    for index in dict.fromkeys((0, len(words) - 1)):
        start = spans[first][0] if index == 0 else 0.0
        end = spans[last][1] if index == len(words) - 1 else 1.0
        box = parts[index]
        left = box.left + math.floor(start * box.width)
        right = box.left + max(math.ceil(end * box.width), math.floor(start * box.width) + 1)
        parts[index] = Rect(left=left, top=box.top, width=right - left, height=box.height)
    return parts


def rank(matches: list[TextMatch], near: Point | None = None, inside: Rect | None = None) -> list[TextMatch]:
    """Keep matches inside a region (by centre) and, given a point, order them nearest first; at equal distance
    exact before approximate, then case-exact, then by score."""
    if inside is not None:
        matches = [m for m in matches if inside.contains(m.center.x, m.center.y)]
    if near is not None:
        matches = sorted(
            matches,
            key=lambda m: (
                math.dist((m.center.x, m.center.y), (near.x, near.y)),
                not m.exact,
                not m.case_exact,
                -m.score,
            ),
        )
    return matches


def closest_texts(result: OcrResult, phrase: str, limit: int = 5) -> list[str]:
    """The lines most similar to the phrase, for a 'not found' message that helps the caller."""
    target = normalize(phrase)
    scored = sorted(
        ((fuzz.partial_ratio(target, normalize(line.text)), line.text) for line in result.lines if line.text.strip()),
        key=lambda item: -item[0],
    )
    return [text for _, text in scored[:limit]]
