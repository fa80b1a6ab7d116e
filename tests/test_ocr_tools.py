"""OCR and text-grounded actions on real windows (Tk on Xvfb, Chromium) through the MCP client."""

from __future__ import annotations

import importlib.util
import json
import os
import subprocess
import sys
from collections.abc import AsyncIterator
from pathlib import Path

import anyio
import numpy as np
import pytest
from mcp import Client
from PIL import Image, ImageDraw

from symphony_mcp.config import load_settings
from symphony_mcp.desktop.capture import ScreenCapturer
from symphony_mcp.imaging.geometry import Rect
from symphony_mcp.server import SymphonyServer, build_server
from symphony_mcp.vision.ocr.engines import engine_spec
from symphony_mcp.vision.ocr.pipeline import OcrPipeline
from testkit.mcp_calls import call_error, call_ok
from testkit.tk_probe import TkProbe
from testkit.waiting import wait_for

pytestmark = pytest.mark.anyio

ENGINES = ["tesseract", "easyocr"]
_ENGINE_MODULES = {"tesseract": "tesserocr", "rapidocr": "rapidocr", "easyocr": "easyocr"}


@pytest.fixture(scope="module", params=ENGINES)
def engine(request: pytest.FixtureRequest) -> str:
    """Every engine runs the same suite; one that is not installed fails in CI and is skipped elsewhere."""
    name: str = request.param
    if importlib.util.find_spec(_ENGINE_MODULES[name]) is None:
        if os.environ.get("CI"):
            pytest.fail(f"OCR engine {name} is not installed (scripts/install.sh --dev installs it)")
        pytest.skip(f"OCR engine {name} is not installed")
    return name


@pytest.fixture
async def server(xdisplay: object, engine: str) -> AsyncIterator[SymphonyServer]:
    built = build_server(load_settings(ocr={"engine": engine}))
    yield built
    built.close()


def inside(point: dict, box: dict, slack: int = 0) -> bool:
    return (
        box["left"] - slack <= point["x"] < box["left"] + box["width"] + slack
        and box["top"] - slack <= point["y"] < box["top"] + box["height"] + slack
    )


async def type_into_entry(client: Client, probe: TkProbe, text: str) -> None:
    x, y = probe.centre("entry")
    await call_ok(client, "click", x=x, y=y, space="screen")
    probe.wait(lambda s: s["focus"].endswith("entry"))
    await call_ok(client, "type", text=text, overwrite=True)
    probe.wait(lambda s: s["entry"] == text)
    # Tk has the text before it draws it: wait until the entry shows it (a caret is only a column or two).
    box = probe.state()["widgets"]["entry"]
    inside = Rect(left=box["left"] + 4, top=box["top"] + 4, width=box["width"] - 8, height=box["height"] - 8)
    capturer = ScreenCapturer()
    try:
        wait_for(lambda: inked_columns(capturer.grab(inside)) > 2 * len(text))
    finally:
        capturer.close()


async def test_find_text_boxes_lie_on_the_widgets(client: Client, tk_probe: TkProbe) -> None:
    found = await call_ok(client, "find_text", phrase="Press me", space="screen")
    best = found["matches"][0]
    assert best["text"] == "Press me" and best["score"] >= 95 and best["exact"]
    assert inside(best["center"], tk_probe.state()["widgets"]["button"])
    # By default the same match is given in the latest screenshot's pixels (none yet: the default size, 2/3).
    scaled = await call_ok(client, "find_text", phrase="Press me")
    assert scaled["space"] == "screenshot" and scaled["frame_id"]
    assert abs(scaled["matches"][0]["center"]["x"] - best["center"]["x"] * 2 / 3) <= 1.5


async def test_a_repeated_find_text_follows_the_screen(client: Client, tk_probe: TkProbe) -> None:
    """The same search again on an unchanged screen gives the same matches; once the screen shows the phrase a
    second time, a search near it (which reads the whole screen, so lists every match) finds both, nearest first."""
    first = await call_ok(client, "find_text", phrase="Press me", space="screen")
    again = await call_ok(client, "find_text", phrase="Press me", space="screen")
    assert again["matches"] == first["matches"] and len(first["matches"]) >= 1
    await type_into_entry(client, tk_probe, "Press me")
    x, y = tk_probe.centre("entry")
    after = await call_ok(client, "find_text", phrase="Press me", near_x=x, near_y=y, space="screen")
    widgets = tk_probe.state()["widgets"]
    assert after["complete"] and len(after["matches"]) == 2
    assert [inside(m["center"], widgets["entry"]) for m in after["matches"]] == [True, False]


async def test_click_text_activates_the_button_and_records_the_match(client: Client, tk_probe: TkProbe) -> None:
    record = await call_ok(client, "click_text", phrase="press ME")  # case differs from the label
    tk_probe.wait(lambda s: s["clicks"] == 1)
    grounding = record["grounding"][0]
    assert grounding["method"] == "ocr" and grounding["query"] == "press ME"
    assert grounding["matched_text"] == "Press me" and grounding["candidates"] == 1
    history = (await call_ok(client, "action_history"))["records"]
    assert history[-1]["grounding"] == record["grounding"]


async def test_locate_cursor_then_type_inserts_at_the_phrase(client: Client, tk_probe: TkProbe) -> None:
    await type_into_entry(client, tk_probe, "alpha beta gamma delta")
    await call_ok(client, "locate_cursor", phrase="gamma", position="start")
    await call_ok(client, "type", text="NEW ")
    tk_probe.wait(lambda s: s["entry"] == "alpha beta NEW gamma delta")
    await call_ok(client, "locate_cursor", phrase="delta", position="end")
    await call_ok(client, "type", text="!")
    tk_probe.wait(lambda s: s["entry"] == "alpha beta NEW gamma delta!")


async def test_highlight_text_span_selects_exactly_the_span(client: Client, tk_probe: TkProbe) -> None:
    await type_into_entry(client, tk_probe, "one two three four five")
    span = await call_ok(client, "highlight_text_span", start_phrase="two", end_phrase="four")
    assert span["start"]["text"] == "two" and span["end"]["text"] == "four"
    tk_probe.wait(lambda s: s["selection"] == "two three four")
    await call_ok(client, "highlight_text_span", start_phrase="three", end_phrase="three", replace_with="3")
    tk_probe.wait(lambda s: s["entry"] == "one two 3 four five")


async def test_not_found_lists_closest_text(client: Client, tk_probe: TkProbe) -> None:
    message = await call_error(client, "click_text", phrase="Press you")
    assert "is not on screen" in message and "Press me" in message
    message = await call_error(client, "find_text", phrase="   ")
    assert "phrase is empty" in message
    assert tk_probe.state()["clicks"] == 0


async def test_ocr_tool_reads_words_and_annotates(client: Client, tk_probe: TkProbe) -> None:
    box = tk_probe.state()["widgets"]["button"]
    region = {
        "left": box["left"] - 10,
        "top": box["top"] - 10,
        "width": box["width"] + 20,
        "height": box["height"] + 20,
    }
    result = await client.call_tool("ocr", {"region": region, "space": "screen", "annotate": True})
    assert not result.is_error
    data = result.structured_content
    # The button's 3D border may read as a stray '|'; the label must be there, as one line.
    assert "Press me" in [line["text"].strip(" |") for line in data["lines"]]
    assert result.content[0].type == "image"
    label = [w for w in data["words"] if w["text"] in ("Press", "me")]
    assert len(label) == 2 and all(inside({"x": w["box"]["left"] + 1, "y": w["box"]["top"] + 1}, box) for w in label)


async def test_incremental_ocr_equals_full_ocr(tk_probe: TkProbe, client: Client, engine: str) -> None:
    """Same pipeline across a real change to the screen: only changed blocks re-read, same result as fresh."""
    pipeline = OcrPipeline(engine_spec(engine))
    fresh = OcrPipeline(engine_spec(engine))
    capturer = ScreenCapturer()
    try:
        area = capturer.monitor_rect(1)
        before = pipeline.read(capturer.grab(area), area)
        await type_into_entry(client, tk_probe, "the screen changed here")
        image = capturer.grab(area)
        incremental = pipeline.read(image, area)
        full = fresh.read(image, area)
        assert incremental.words == full.words and incremental.lines == full.lines
        assert 0 < incremental.blocks_recognized < incremental.blocks
        assert "changed" in [w.text for w in incremental.words]
        again = pipeline.read(image, area)
        assert again.words == full.words and before.words != full.words
    finally:
        capturer.close()
        pipeline.close()
        fresh.close()


def inked_columns(image: Image.Image) -> int:
    """Columns of a light widget that hold dark pixels (drawn text)."""
    dark = np.asarray(image.convert("L")) < 128
    return int(dark.any(axis=0).sum())


def test_incremental_ocr_of_an_edited_page_equals_full_ocr(engine: str) -> None:
    page = Image.new("RGB", (1280, 720), "white")
    draw = ImageDraw.Draw(page)
    for row in range(12):
        draw.text((40, 30 + row * 50), f"Paragraph {row}: the quick brown fox jumps", fill="black", font_size=20)
    edited = page.copy()
    ImageDraw.Draw(edited).rectangle((40, 330, 900, 360), fill="white")
    ImageDraw.Draw(edited).text((40, 330), "Paragraph 6: an edited line", fill="black", font_size=20)
    area = Rect(left=0, top=0, width=1280, height=720)
    cached, fresh = OcrPipeline(engine_spec(engine)), OcrPipeline(engine_spec(engine))
    try:
        cached.read(page, area)
        incremental = cached.read(edited, area)
        assert incremental.blocks_recognized == 1
        assert incremental.model_dump(exclude={"elapsed_ms", "blocks_recognized"}) == fresh.read(
            edited, area
        ).model_dump(exclude={"elapsed_ms", "blocks_recognized"})
    finally:
        cached.close()
        fresh.close()


def test_a_frame_one_pixel_off_the_last_one_is_read_again(engine: str) -> None:
    """The repeated-frame check compares the whole frame: one changed pixel in a text line re-reads that line."""
    page = Image.new("RGB", (640, 200), "white")
    for row in range(3):
        ImageDraw.Draw(page).text((20, 20 + row * 60), f"Line {row} of the page", fill="black", font_size=20)
    touched = page.copy()
    touched.putpixel((25, 85), (0, 0, 0))  # inside line 1's block
    area = Rect(left=0, top=0, width=640, height=200)
    pipeline = OcrPipeline(engine_spec(engine))
    try:
        first = pipeline.read(page, area)
        assert pipeline.read(page, area).blocks_recognized == 0
        assert pipeline.read(touched, area).blocks_recognized == 1
        again = pipeline.read(page, area)  # an older frame: found by its hash
        assert again.blocks_recognized == 0 and again.words == first.words
        assert pipeline.read(page, Rect(left=10, top=0, width=640, height=200)).area.left == 10
    finally:
        pipeline.close()


@pytest.fixture
async def doc_page(xdisplay: object, tmp_path: Path) -> AsyncIterator[object]:
    from testkit.kiosk_page import open_kiosk_page

    docs = Path("/usr/share/doc/python3/html/tutorial/controlflow.html")
    if not docs.exists():
        pytest.fail("python3-doc is not installed (apt-get install python3-doc)")
    async with open_kiosk_page(docs.as_uri(), tmp_path) as page:
        yield page


DOM_BOX = """phrase => {
  const walker = document.createTreeWalker(document.body, NodeFilter.SHOW_TEXT);
  while (walker.nextNode()) {
    const node = walker.currentNode, at = node.data.indexOf(phrase);
    if (at < 0) continue;
    const range = document.createRange();
    range.setStart(node, at); range.setEnd(node, at + phrase.length);
    const r = range.getBoundingClientRect();
    const inView = r.width > 0 && r.left >= 0 && r.right <= innerWidth && r.top >= 0 && r.bottom <= innerHeight;
    // Not clipped by a scrolled container or covered: the element on top at its centre holds the text.
    const top = inView && document.elementFromPoint(r.left + r.width / 2, r.top + r.height / 2);
    const parent = node.parentElement;
    if (top && (top.contains(node) || parent.contains(top)))
      return {left: r.left, top: r.top, width: r.width, height: r.height};
  }
  return null;
}"""


async def test_find_text_on_a_real_documentation_page(client: Client, doc_page: object) -> None:
    """Every listed phrase that is on screen is found inside its DOM box; which ones are depends on layout."""
    page = doc_page
    missed = []
    phrases = [
        "More Control Flow Tools",
        "statement just introduced",
        "flow control statements",
        "Statements",
        "Perhaps the most well-known",
        "elif",
        "Keyword Arguments",
        "Previous topic",
    ]
    boxes = {phrase: await page.evaluate(DOM_BOX, phrase) for phrase in phrases}  # type: ignore[attr-defined]
    visible = {phrase: box for phrase, box in boxes.items() if box is not None}
    assert len(visible) >= 6, f"too few phrases on screen to check: {sorted(visible)}"
    for phrase, box in visible.items():
        found = await call_ok(
            client,
            "find_text",
            phrase=phrase,
            near_x=box["left"] + box["width"] / 2,
            near_y=box["top"] + box["height"] / 2,
            space="screen",
        )
        if not inside(found["matches"][0]["center"], box, slack=2):
            missed.append((phrase, box, found["matches"][:2]))
    assert not missed, f"grounded outside the DOM box: {json.dumps(missed)}"


async def test_find_text_in_a_terminal(client: Client, xdisplay: object) -> None:
    """A real xterm with known output: each phrase is found inside the window, rows in printed order."""
    script = "printf 'first row of output\\nsymphony terminal check 42\\nlast row\\n'; sleep 60"
    process = subprocess.Popen(
        [
            "xterm",
            "-T",
            "OCR Term",
            "-fa",
            "DejaVu Sans Mono",
            "-fs",
            "12",
            "-geometry",
            "60x8+100+100",
            "-e",
            "bash",
            "-c",
            script,
        ],
        env={**os.environ, "LANG": "C.UTF-8"},
    )
    try:
        window = None
        for _ in range(100):
            windows = (await call_ok(client, "list_windows"))["windows"]
            window = next((w for w in windows if w["title"] == "OCR Term"), None)
            if window is not None:
                break
            await anyio.sleep(0.1)
        assert window is not None, "the xterm did not appear"
        # Wait for the output as a person would: until its last line is on screen (not a fixed pause).
        for _ in range(50):
            if not (await client.call_tool("find_text", {"phrase": "last row"})).is_error:
                break
            await anyio.sleep(0.2)
        rows = []
        for phrase in ("first row of output", "symphony terminal check 42", "last row"):
            match = (await call_ok(client, "find_text", phrase=phrase))["matches"][0]
            assert match["score"] >= 90 and inside(match["center"], window["rect"]), (phrase, match, window)
            rows.append(match["center"]["y"])
        assert rows == sorted(rows) and len(set(rows)) == 3
    finally:
        process.terminate()
        process.wait(timeout=5)


def test_tesseract_leaves_no_openmp_limit_for_what_loads_after_it() -> None:
    """OMP_THREAD_LIMIT=1 is for Tesseract's OpenMP runtime only: left in the environment, torch's runtime loaded
    later took it too (EasyOCR's boxes then depended on which engine ran first: a word's edge 6 px off) and every
    program the server started inherited it. A limit the user set is kept."""
    probe = (
        "import os, sys\n"
        "from symphony_mcp.vision.ocr.tesseract_engine import TesseractEngine\n"
        "TesseractEngine()\n"
        "print(os.environ.get('OMP_THREAD_LIMIT'))\n"
    )
    env = {k: v for k, v in os.environ.items() if k != "OMP_THREAD_LIMIT"}
    unset = subprocess.run([sys.executable, "-c", probe], env=env, capture_output=True, text=True)
    assert unset.stdout.strip() == "None", unset.stderr
    kept = subprocess.run(
        [sys.executable, "-c", probe], env={**env, "OMP_THREAD_LIMIT": "3"}, capture_output=True, text=True
    )
    assert kept.stdout.strip() == "3", kept.stderr
