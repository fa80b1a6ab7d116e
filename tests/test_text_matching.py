"""Phrase matching over OCR words (symphony_mcp.vision.ocr.matching): pure unit tests on built OCR results.

Each test reproduces a failure class seen on real screens: ranking of case and punctuation variants, phrases
inside punctuated words, runs that reached into the next line, near misses reported as found, short words.
"""

from __future__ import annotations

import cProfile
import pstats

import pytest

from symphony_mcp.imaging.geometry import Point, Rect, union
from symphony_mcp.vision.ocr.matching import TokenDifference, find_phrase, normalize, rank
from symphony_mcp.vision.ocr.types import OcrLine, OcrResult, OcrWord

CHAR = 8  # px per character
HEIGHT = 14  # px per line of text; lines 20 px apart continue each other, farther ones do not


def page(*lines: tuple[int, int, str]) -> OcrResult:
    """An OCR result in reading order: one (left, top, text) per line, words split at spaces."""
    words: list[OcrWord] = []
    ocr_lines: list[OcrLine] = []
    for line_id, (left, top, text) in enumerate(lines):
        ids = []
        x = left
        for token in text.split():
            box = Rect(left=x, top=top, width=CHAR * len(token), height=HEIGHT)
            words.append(OcrWord(id=len(words), text=token, box=box, confidence=0.9, line_id=line_id))
            ids.append(len(words) - 1)
            x += CHAR * (len(token) + 1)
        box = union([words[i].box for i in ids])
        ocr_lines.append(OcrLine(id=line_id, text=text, box=box, word_ids=ids))
    area = Rect(left=0, top=0, width=1920, height=1080)
    return OcrResult(
        engine="test", area=area, words=words, lines=ocr_lines, elapsed_ms=0, blocks=1, blocks_recognized=1
    )


def texts(result: OcrResult, phrase: str, min_score: float = 80) -> list[str]:
    return [match.text for match in find_phrase(result, phrase, min_score)]


# --- 1. ranking: exact case, then whole tokens ---------------------------------------------------------------
MAN_PAGE = page(
    (0, 0, "usage: tool [-h] [-V] [--all options]"),
    (0, 40, "OPTIONS"),
    (40, 60, "-V, --version    print the version and exit"),
    (40, 80, "-v, --verbose    say more"),
)


def test_all_caps_heading_ranks_before_lower_case_word_with_a_bracket() -> None:
    first, second = find_phrase(MAN_PAGE, "OPTIONS")
    assert (first.text, first.score, first.exact, first.case_exact) == ("OPTIONS", 100, True, True)
    assert (second.text, second.score, second.exact, second.case_exact) == ("options]", 100, True, False)


def test_lower_case_option_ranks_before_its_upper_case_twin() -> None:
    assert texts(MAN_PAGE, "-v") == ["-v,", "[-V]", "-V,"]
    assert texts(MAN_PAGE, "-V") == ["[-V]", "-V,", "-v,"]
    assert [m.case_exact for m in find_phrase(MAN_PAGE, "-v")] == [True, False, False]


def test_case_only_difference_is_exact_but_ranked_after_case_exact() -> None:
    result = page((0, 0, "SAVE ALL"), (0, 100, "Save all"))
    matches = find_phrase(result, "Save all")
    assert [(m.text, m.exact, m.case_exact, m.differences) for m in matches] == [
        ("Save all", True, True, []),
        ("SAVE ALL", True, False, []),
    ]


def test_verbatim_punctuation_breaks_a_tie() -> None:
    result = page((0, 0, "(options)"), (0, 100, "options"))
    assert texts(result, "options") == ["options", "(options)"]


# --- 2. a phrase inside one word with punctuation attached -----------------------------------------------
@pytest.mark.parametrize(
    ("line", "phrase", "word"),
    [
        ("see «/usr/share/doc» for details", "/usr/share/doc", "«/usr/share/doc»"),
        ("hosts are listed in (/etc/hosts) first", "/etc/hosts", "(/etc/hosts)"),
    ],
)
def test_phrase_inside_a_punctuated_word_matches_the_whole_word(line: str, phrase: str, word: str) -> None:
    result = page((0, 0, line))
    [match] = find_phrase(result, phrase)
    seen = next(w for w in result.words if w.text == word)
    assert (match.text, match.exact, match.case_exact, match.score) == (word, True, True, 100)
    assert match.word_ids == [seen.id]
    assert match.box == seen.box
    assert match.boxes == [seen.box]


def test_phrase_inside_a_longer_word_is_found_but_not_exact() -> None:
    result = page((0, 0, "json.dump(obj, fp, sort_keys=False, indent=None)"))
    [match] = find_phrase(result, "sort_keys")
    assert (match.text, match.score, match.exact, match.case_exact) == ("sort_keys=False,", 100, False, False)
    assert match.differences == [TokenDifference(expected=None, seen="False")]
    word = result.words[2].box  # the phrase's part of the word's box, by its share of the characters
    assert match.box == Rect(left=word.left, top=word.top, width=9 * CHAR, height=HEIGHT)
    assert (match.start.x, match.end.x) == (word.left, word.left + 9 * CHAR - 1)


def test_phrase_in_the_middle_of_a_word_is_clicked_on_itself() -> None:
    result = page((0, 0, "Popen(args, close_fds=True, user=None)"))
    [match] = find_phrase(result, "True")  # a click on the box's centre lands on True, not on the '='
    word = result.words[1].box
    assert match.text == "close_fds=True," and not match.exact
    assert match.box == Rect(left=word.left + 10 * CHAR, top=word.top, width=4 * CHAR, height=HEIGHT)
    [whole] = find_phrase(result, "close_fds=True")  # all of the word's tokens: its whole box
    assert whole.box == word


def test_part_of_a_word_ranks_after_whole_words() -> None:
    result = page((0, 0, "call sort_keys=False, f(argument7, x)"), (0, 100, "sort keys argumentl"))
    assert texts(result, "sort_keys") == ["sort keys", "sort_keys=False,"]  # exact first
    assert texts(result, "argument1") == ["argumentl", "f(argument7,"]  # both 88.9: the whole word first


# --- 3. runs hold only what the phrase needs -----------------------------------------------------------------
TRAJECTORY_HELP = page(
    (0, 0, "options: --trajectory-dir"),
    (80, 20, "DIR directory where trajectories are written"),
)


def test_option_token_does_not_swallow_the_next_line() -> None:
    [match] = find_phrase(TRAJECTORY_HELP, "--trajectory-dir")
    assert match.text == "--trajectory-dir"
    assert match.word_ids == [1]
    assert len(match.boxes) == 1


def test_phrase_inside_an_option_token_does_not_swallow_the_line_above() -> None:
    result = page((0, 0, "Where to write:"), (0, 20, "--trajectory-dir"), (80, 40, "DIR directory for trajectories"))
    match, *others = find_phrase(result, "--trajectory")
    assert (match.text, match.word_ids, match.exact) == ("--trajectory-dir", [3], False)
    assert match.differences == [TokenDifference(expected=None, seen="dir")]
    assert [(m.text, m.exact) for m in others] == [("trajectories", False)]


def test_misread_option_token_still_stops_at_its_own_word() -> None:
    result = page((0, 0, "options: --trajectory-dlr"), (80, 20, "dir directory where trajectories are written"))
    [match] = find_phrase(result, "--trajectory-dir")
    assert match.word_ids == [1]
    assert not match.exact
    assert match.differences == [TokenDifference(expected="dir", seen="dlr")]


def test_trailing_word_that_does_not_raise_the_score_is_left_out() -> None:
    result = page((0, 0, "Opem configuration file now"))
    [match] = find_phrase(result, "Open configuration")
    assert match.text == "Opem configuration"
    assert match.differences == [TokenDifference(expected="Open", seen="Opem")]


@pytest.mark.parametrize(
    ("one_line", "span_first"),
    [("Opem recemt files", False), ("Opem rec3nt fil", True)],  # scoring 88 and 81 against the span's 94
)
def test_fuzzy_span_across_lines_wins_only_when_clearly_better(one_line: str, span_first: bool) -> None:
    result = page(
        (0, 0, "Recent: Open recent"),  # "filez" below continues this line
        (0, 20, "filez and folders"),
        (0, 200, one_line),
    )
    span, single = ("Open recent filez", 2, False), (one_line, 1, False)
    matches = find_phrase(result, "Open recent files")
    assert [(m.text, len(m.boxes), m.exact) for m in matches] == ([span, single] if span_first else [single, span])


def test_phrase_that_really_continues_on_the_next_line_matches_across_it() -> None:
    result = page(
        (0, 0, "Press Save to"),
        (0, 20, "keep your changes."),
        (0, 200, "Save to disk"),
    )
    [match] = find_phrase(result, "Save to keep your changes")
    assert (match.text, match.exact, match.case_exact) == ("Save to keep your changes.", True, True)
    first, second = (result.words[i].box for i in (1, 3))
    assert match.boxes == [union([first, result.words[2].box]), union([second, result.words[5].box])]
    assert match.center == Point(x=match.boxes[0].left + match.boxes[0].width // 2, y=7)
    assert match.start == Point(x=first.left, y=7)
    assert match.end == Point(x=result.words[5].box.left + result.words[5].box.width - 1, y=27)


@pytest.mark.parametrize(
    ("phrase", "first", "second"), [("configuration", "config-", "uration"), ("command-line", "command-", "line")]
)
def test_word_hyphenated_at_a_line_end_matches(phrase: str, first: str, second: str) -> None:
    result = page((0, 0, f"edit the {first}"), (0, 20, f"{second} file first"))
    [match] = find_phrase(result, phrase)
    assert (match.text, match.exact, match.score, len(match.boxes)) == (f"{first} {second}", True, 100, 2)


def test_one_line_exact_match_beats_the_same_words_across_lines() -> None:
    result = page((0, 0, "click Save"), (0, 20, "as shown"), (0, 200, "Save as"))
    assert texts(result, "Save as") == ["Save as", "Save as"]
    assert [len(m.boxes) for m in find_phrase(result, "Save as")] == [1, 2]


# --- 4. near misses are reported as such ----------------------------------------------------------------
def test_near_miss_is_found_but_not_exact() -> None:
    result = page((0, 0, "MARKER TEXT"), (600, 300, "PROBE12 MARKER TEXT"))  # PROBE2's first word unread
    [match] = find_phrase(result, "PROBE2 MARKER TEXT")
    assert match.text == "PROBE12 MARKER TEXT"
    assert match.score == pytest.approx(97.1, abs=0.5)
    assert (match.exact, match.case_exact) == (False, False)
    assert match.differences == [TokenDifference(expected="PROBE2", seen="PROBE12")]


@pytest.mark.parametrize(("seen", "phrase"), [("expand tabs", "expand_tabs"), ("_enter__()", "__enter__")])
def test_underscores_are_punctuation_which_ocr_may_miss(seen: str, phrase: str) -> None:
    [match] = find_phrase(page((0, 0, f"call {seen} first")), phrase)
    assert (match.text, match.exact, match.case_exact) == (seen, True, True)


def test_missing_and_extra_words_are_listed() -> None:
    missing = find_phrase(page((0, 0, "Save files")), "Save all files")[0]
    assert missing.differences == [TokenDifference(expected="all", seen=None)]
    extra = find_phrase(page((0, 0, "Save all the files")), "Save all files")[0]
    assert extra.differences == [TokenDifference(expected=None, seen="the")]


@pytest.mark.parametrize(
    ("seen", "phrase"),
    [("Fi1e", "File"), ("PR0BE", "PROBE"), ("|nstall", "Install"), ("0pen", "Open"), ("FaIl", "Fall")],
)
def test_glyph_mix_ups_inside_a_word_of_letters_are_exact(seen: str, phrase: str) -> None:
    [match] = find_phrase(page((0, 0, f"then {seen} now")), phrase)  # found though 'Fi1e' scores 75, under 80
    assert match.text == seen
    assert (match.exact, match.differences) == (True, [])


@pytest.mark.parametrize(
    ("seen", "phrase"),
    [("PROBE1", "PROBEl"), ("v1", "vl"), ("x11", "xll"), ("10", "lO"), ("A1B2", "AlB2"), ("fail", "fall")],
)
def test_glyphs_that_may_be_meant_are_not_mix_ups(seen: str, phrase: str) -> None:
    matches = find_phrase(page((0, 0, seen)), phrase, min_score=0)
    assert [m.exact for m in matches] == [False]


@pytest.mark.parametrize(("seen", "phrase"), [("80H", "8OH"), ("SOBO", "S0B0"), ("1085J", "lO85J"), ("O08", "OOB")])
def test_look_alike_glyphs_in_a_code_score_as_the_code_but_are_not_exact(seen: str, phrase: str) -> None:
    """A random label read with O/0, I/l/1, S/5 or B/8 mixed up is found (it scored 67-80 and was not), ranked
    above other near words, and reported as not exact: in a code every glyph may matter."""
    matches = find_phrase(page((0, 0, f"{phrase[:-1]}X {seen} {phrase}Q")), phrase)
    assert (matches[0].text, matches[0].score, matches[0].exact) == (seen, 100, False)
    assert matches[0].differences == [TokenDifference(expected=phrase, seen=seen)]


def test_an_exact_match_still_ranks_before_a_look_alike() -> None:
    matches = find_phrase(page((0, 0, "S0B0 SOBO")), "SOBO")
    assert [(m.text, m.exact) for m in matches] == [("SOBO", True), ("S0B0", False)]


# --- 5. short words ------------------------------------------------------------------------------------
BUTTONS = page(
    (0, 0, "note: nothing in Nextcloud is going to Google now"),
    (0, 200, "OK No Next Go"),
)


@pytest.mark.parametrize(("phrase", "button"), [("ok", "OK"), ("no", "No"), ("Next", "Next"), ("Go", "Go")])
def test_short_phrase_matches_its_whole_word_only(phrase: str, button: str) -> None:
    match, *partial = find_phrase(BUTTONS, phrase)
    assert (match.text, match.score, match.exact) == (button, 100, True)
    assert match.case_exact == (phrase == button)
    assert all(not m.exact and m.score < 100 for m in partial)  # "no" in "now" scores 80, the default minimum


def test_short_phrase_inside_a_longer_word_is_partial_and_ranked_last() -> None:
    matches = find_phrase(BUTTONS, "no", min_score=60)
    assert [(m.text, m.exact) for m in matches] == [("No", True), ("now", False), ("note:", False)]
    assert matches[2].score < 80


# --- rank and normalize --------------------------------------------------------------------------------
def test_rank_near_puts_the_nearest_first_and_filters_by_region() -> None:
    result = page((0, 0, "Apply"), (0, 400, "Apply"))
    matches = find_phrase(result, "Apply")
    assert [m.word_ids for m in rank(matches, near=Point(x=10, y=390))] == [[1], [0]]
    assert [m.word_ids for m in rank(matches, inside=Rect(left=0, top=300, width=200, height=200))] == [[1]]


def test_normalize_folds_case_quotes_dashes_and_punctuation() -> None:
    assert normalize("«Don’t» — SAVE ﬁle… expand_tabs") == "don t save file expand tabs"


def python_calls_to_match(rows: int) -> int:
    """Function calls one first search of a page of `rows` lines makes (5 words of 3 tokens each a line): a count,
    the same on any machine at any load, where a time is not."""
    lines = [(0, 20 * row, " ".join(f"w{row}x{col} (opt{col}) -v" for col in range(5))) for row in range(rows)]
    result = page(*lines)
    assert len(result.words) == 15 * rows
    profile = cProfile.Profile()
    profile.runcall(find_phrase, result, "open the configuration file")
    return int(pstats.Stats(profile).total_calls)  # type: ignore[attr-defined]


def test_matching_a_page_grows_with_its_words_not_their_square() -> None:
    small, large = python_calls_to_match(100), python_calls_to_match(400)
    assert large < 6 * small, (small, large)  # 4x the words: linear work is ~4x, pairwise work ~16x
