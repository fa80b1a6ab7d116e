"""`find_text` reads top first and stops once its first match is certain: that match, its word ids and box are
those of a whole reading, the stop is reported (`complete`), and the frame's reading goes on where it stopped."""

from __future__ import annotations

import dataclasses
from collections.abc import AsyncIterator, Sequence
from pathlib import Path

import pytest
from mcp import Client
from PIL import Image, ImageDraw

from symphony_mcp.config import load_settings
from symphony_mcp.imaging.geometry import Rect
from symphony_mcp.vision.ocr.engines import engine_spec
from symphony_mcp.vision.ocr.first_match import FirstMatch
from symphony_mcp.vision.ocr.matching import find_phrase
from symphony_mcp.vision.ocr.pipeline import OcrPipeline, PartialReading, shared_pipeline
from symphony_mcp.vision.ocr.types import OcrResult, RecognizedWord
from testkit.mcp_calls import call_ok

pytestmark = pytest.mark.anyio

# Two columns of numbered paragraphs; "quick brown fox" twice in capitals near the top, in lower case lower down,
# and "lazy dog today" exactly twice: a whole reading ranks the case-exact one first, then the upper of equals.
ROWS = 14
PAGE = (
    "<!doctype html><html><head><title>Paragraphs</title></head>"
    "<body style='margin:0;background:#fff;font:22px sans-serif;color:#111'>"
    "<div style='display:flex;gap:120px;padding:30px 60px'>"
    + "".join(
        f"<div style='width:700px'>{''.join(f'<p>{cell}</p>' for cell in column)}</div>"
        for column in (
            [
                "Opening words of the page",
                "The QUICK BROWN FOX is here",
                "Section three holds plain words",
                "Then a lazy dog today sleeps",
                *(f"Filler paragraph number {n}" for n in range(4, ROWS - 3)),
                "Below, the quick brown fox runs",
                "Again a lazy dog today naps",
                "Closing words of the page",
            ],
            [f"Side note {n} in the margin" for n in range(ROWS)],
        )
    )
    + "</div></body></html>"
)


@pytest.fixture
async def paragraphs(xdisplay: object, tmp_path: Path) -> AsyncIterator[object]:
    """The page on screen, with the process-wide OCR caches emptied: earlier tests may have read the same blocks."""
    from testkit.kiosk_page import open_kiosk_page

    settings = load_settings().ocr
    shared_pipeline(settings.engine, settings.language).clear()
    html = tmp_path / "paragraphs.html"
    html.write_text(PAGE)
    async with open_kiosk_page(html.as_uri(), tmp_path) as page:
        await page.evaluate("document.fonts.ready")
        yield page


def first_of_whole_reading(reading: dict, phrase: str) -> dict:
    """The first match a whole reading gives, from the `ocr` tool's result (same space as find_text's)."""
    (first, *_) = find_phrase(OcrResult.model_validate(reading), phrase)
    return first.model_dump(mode="json")


async def test_the_first_match_is_the_whole_readings_and_reading_goes_on(client: Client, paragraphs: object) -> None:
    found = await call_ok(client, "find_text", phrase="Section three holds", space="screen")
    assert found["complete"] is False, "a phrase near the top needs only the top of the screen"
    reading = await call_ok(client, "ocr", space="screen")  # the rest of the same frame
    assert 0 < reading["blocks_recognized"] < reading["blocks"], "the ocr call went on from where find_text stopped"
    assert found["matches"][0] == first_of_whole_reading(reading, "Section three holds")
    words = [reading["words"][i]["text"] for i in found["matches"][0]["word_ids"]]
    assert words == ["Section", "three", "holds"], "find_text's word ids index the whole reading's words"

    for phrase in ("quick brown fox", "lazy dog today", "Side note 2 in"):
        found = await call_ok(client, "find_text", phrase=phrase, space="screen")
        assert found["matches"][0] == first_of_whole_reading(reading, phrase), phrase
    lower = await call_ok(client, "find_text", phrase="quick brown fox", space="screen")
    assert lower["matches"][0]["case_exact"] and lower["matches"][0]["text"].startswith("quick")
    twice = await call_ok(client, "find_text", phrase="lazy dog today", space="screen")
    assert len([m for m in twice["matches"] if m["exact"]]) == 2, "the whole frame was read by then: both listed"


async def test_click_text_reads_only_as_far_as_its_match(client: Client, paragraphs: object) -> None:
    record = await call_ok(client, "click_text", phrase="Section three holds", space="screen")
    reading = await call_ok(client, "ocr", space="screen")
    assert 0 < reading["blocks_recognized"] < reading["blocks"], "click_text left the rest of the frame unread"
    assert record["grounding"][0]["box"] == first_of_whole_reading(reading, "Section three holds")["box"]


async def test_a_phrase_not_on_screen_or_not_exact_reads_the_whole_frame(client: Client, paragraphs: object) -> None:
    near_miss = await call_ok(client, "find_text", phrase="Section three holds plain wards", space="screen")
    assert near_miss["complete"] is True and not near_miss["matches"][0]["exact"]
    reading = await call_ok(client, "ocr", space="screen")
    assert reading["blocks_recognized"] == 0, "every block was read by the find_text before"


class _Reads:
    """A goal that needs the frame read down to the bottom of a given word: the pipeline's side of the contract."""

    def __init__(self, word: str) -> None:
        self.word = word
        self.asked: list[PartialReading] = []

    def may_settle(self, words: Sequence[RecognizedWord]) -> bool:
        return any(w.text == self.word for w in words)

    def reach(self, reading: PartialReading) -> float | None:
        self.asked.append(reading)
        boxes = [w.box for w in reading.result.words if w.text == self.word]
        return boxes[0].top + boxes[0].height if boxes else None


def test_a_goal_stops_the_reading_and_the_next_call_reads_only_the_rest() -> None:
    page = Image.new("RGB", (1280, 720), "white")
    draw = ImageDraw.Draw(page)
    for row in range(12):
        draw.text((40, 30 + row * 55), f"Paragraph {row}: the quick brown fox", fill="black", font_size=20)
    area = Rect(left=0, top=0, width=1280, height=720)
    pipeline, fresh = OcrPipeline(engine_spec("tesseract")), OcrPipeline(engine_spec("tesseract"))
    try:
        goal = _Reads("2:")
        partial = pipeline.read_until(page, area, goal)
        assert not partial.complete and goal.asked, "settled on the third row"
        assert partial.result.blocks_recognized < partial.result.blocks
        assert [line.text.split(":")[0] for line in partial.result.lines][:3] == [f"Paragraph {n}" for n in range(3)]
        (word,) = [w.box for w in partial.result.words if w.text == "2:"]
        assert word.top + word.height <= partial.read_above, "every block above the word's bottom was read"
        ahead = pipeline.spec.workers  # at most one block per worker begun beyond the three rows needed
        assert partial.result.blocks_recognized <= 3 + ahead < partial.result.blocks, "the rows below were not begun"
        again = pipeline.read_until(page, area, _Reads("2:"))
        assert again.result.blocks_recognized == 0 and again.result.words == partial.result.words
        whole = pipeline.read(page, area)
        assert whole.blocks_recognized == whole.blocks - partial.result.blocks_recognized
        expected = fresh.read(page, area)
        ignored = {"elapsed_ms", "blocks_recognized"}
        assert whole.model_dump(exclude=ignored) == expected.model_dump(exclude=ignored)
        unsettled = pipeline.read_until(page, area, _Reads("absent"))
        assert unsettled.complete and unsettled.result.blocks_recognized == 0
    finally:
        pipeline.close()
        fresh.close()


def tall_heading_beside_the_match() -> Image.Image:
    """Two columns: a paragraph whose second line is the phrase, and beside it a tall heading whose top lies between
    the paragraph's lines (its line comes before the phrase's) and whose bottom lies far below the phrase's line. The
    paragraph's block starts higher, so it is read first and the match is found before the heading is read. Right of
    the heading, a word whose block starts just below the phrase's line and which a whole reading joins to the
    heading's line, before the phrase's words: stopping at the phrase's line would give other word ids. Drawn with
    Pillow's own font, so the layout does not depend on the fonts installed."""
    page = Image.new("RGB", (1280, 300), "white")
    draw = ImageDraw.Draw(page)
    draw.text((40, 70), "Opening words here", fill="black", font_size=20, anchor="lt")
    draw.text((40, 90), "Save the file now", fill="black", font_size=14, anchor="lt")
    draw.text((700, 87), "Heading", fill="black", font_size=56, anchor="lt")
    heading_right = draw.textbbox((700, 87), "Heading", font_size=56, anchor="lt")[2]
    draw.text((heading_right + 25, 109), "NOTE", fill="black", font_size=20, anchor="lt")
    draw.text((40, 240), "Closing words far below", fill="black", font_size=20, anchor="lt")
    return page


def test_a_tall_line_in_the_next_column_read_after_the_match_is_read_whole_first() -> None:
    """With one worker the blocks are read strictly top first, so the heading's block always comes in after the
    match was found: the reading must go on below the heading's bottom before it stops."""
    page = tall_heading_beside_the_match()
    area = Rect(left=0, top=0, width=1280, height=300)
    one_at_a_time = dataclasses.replace(engine_spec("tesseract"), workers=1)  # blocks strictly top first
    pipeline, fresh = OcrPipeline(one_at_a_time), OcrPipeline(one_at_a_time)
    try:
        partial = pipeline.read_until(page, area, FirstMatch("Save the file", find_phrase))
        whole = fresh.read(page, area)
        lines = [line.text for line in whole.lines]
        assert lines[:3] == ["Opening words here", "Heading NOTE", "Save the file now"], "the layout meant"
        assert not partial.complete, "the line far below was left unread"
        (first, *_) = find_phrase(partial.result, "Save the file")
        assert first == find_phrase(whole, "Save the file")[0], "the same first match, word ids and box"
        upto = first.word_ids[-1] + 1
        assert partial.result.words[:upto] == whole.words[:upto], "every line up to the match read whole"
    finally:
        pipeline.close()
        fresh.close()


async def test_find_text_beside_a_tall_heading_gives_the_whole_readings_first_match(
    client: Client, xdisplay: object, tmp_path: Path
) -> None:
    """The same layout on the screen, found by the server (a worker per core: blocks come in in any order, so where it
    stops varies) and read whole by the `ocr` tool from the same frame."""
    from testkit.kiosk_page import open_kiosk_page

    settings = load_settings().ocr
    shared_pipeline(settings.engine, settings.language).clear()
    tall_heading_beside_the_match().save(tmp_path / "layout.png")  # shown 1:1 at the screen's top left
    html = tmp_path / "layout.html"
    html.write_text("<!doctype html><title>Layout</title><body style='margin:0;background:#fff'><img src='layout.png'>")
    async with open_kiosk_page(html.as_uri(), tmp_path) as page:
        await page.wait_for_function("document.images[0].complete && document.images[0].naturalWidth == 1280")
        found = await call_ok(client, "find_text", phrase="Save the file", space="screen")
        reading = await call_ok(client, "ocr", space="screen")
    lines = [line["text"] for line in reading["lines"]]
    assert lines.index("Heading NOTE") < lines.index("Save the file now"), lines
    assert found["matches"][0] == first_of_whole_reading(reading, "Save the file")  # its word ids too
