"""The EasyOCR engine on real text: DejaVu fonts rendered at screen sizes, and a real Tk window on Xvfb."""

from __future__ import annotations

import importlib.util
import json
import os
import random
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest
from PIL import Image, ImageDraw, ImageFont

from symphony_mcp.desktop.capture import ScreenCapturer
from symphony_mcp.vision.ocr import easyocr_engine
from symphony_mcp.vision.ocr.easyocr_engine import (
    INSTALL_HINT,
    EasyOcrEngine,
    EasyOcrUnavailableError,
    easyocr_spec,
    shared_reader,
)
from symphony_mcp.vision.ocr.types import RecognizedWord
from testkit.tk_probe import TkProbe

if not all(importlib.util.find_spec(name) for name in ("easyocr", "easyocr_en_models")) and not os.environ.get("CI"):
    pytest.skip(f"EasyOCR is not installed: {INSTALL_HINT}", allow_module_level=True)

FONTS = Path("/usr/share/fonts/truetype/dejavu")
SANS, MONO = FONTS / "DejaVuSans.ttf", FONTS / "DejaVuSansMono.ttf"
VOCABULARY = [
    "the",
    "quick",
    "brown",
    "fox",
    "jumps",
    "over",
    "lazy",
    "dog",
    "settings",
    "window",
    "file",
    "edit",
    "view",
    "help",
    "search",
    "results",
    "open",
    "save",
    "close",
    "cancel",
    "apply",
    "options",
    "preferences",
    "network",
    "display",
    "keyboard",
    "mouse",
    "printer",
    "document",
    "folder",
    "download",
    "upload",
    "account",
    "password",
    "username",
    "message",
    "inbox",
    "contacts",
    "calendar",
    "2024",
    "report.pdf",
]
# Foreground and background: a dialog, a dark panel, a link.
SCHEMES = [("black", "white"), ("#e8e8e8", "#2b2b2b"), ("#1f5fa8", "white")]
Box = tuple[float, float, float, float]  # left, top, right, bottom


@pytest.fixture(scope="module")
def engine() -> EasyOcrEngine:
    return EasyOcrEngine()


def render(size: int, lines: int = 6, seed: int = 0) -> tuple[Image.Image, list[tuple[str, Box]]]:
    """Lines of random words at `size` px in each colour scheme; returns each word's true ink box."""
    rng = random.Random(size * 100 + seed)
    font = ImageFont.truetype(str(SANS), size)
    pitch = size * 2 + 4
    image = Image.new("RGB", (900, 20 + lines * pitch), "white")
    draw = ImageDraw.Draw(image)
    truth: list[tuple[str, Box]] = []
    for row in range(lines):
        ink, paper = SCHEMES[row % len(SCHEMES)]
        y = 10 + row * pitch
        draw.rectangle((0, y - size // 2, image.width, y + size + size // 2), fill=paper)
        x: float = 10 + rng.randint(0, 40)
        for word in rng.sample(VOCABULARY, rng.randint(3, 8)):
            box = draw.textbbox((x, y), word, font=font)
            draw.text((x, y), word, fill=ink, font=font)
            truth.append((word, (box[0], box[1], box[2], box[3])))
            x = box[2] + draw.textlength(" ", font=font)
    return image, truth


def centre(box: Box) -> tuple[float, float]:
    return (box[0] + box[2]) / 2, (box[1] + box[3]) / 2


def inside(point: tuple[float, float], box: Box) -> bool:
    return box[0] <= point[0] <= box[2] and box[1] <= point[1] <= box[3]


def contains(outer: Box, inner: Box, slack: float = 2) -> bool:
    """`inner` lies in `outer` give or take `slack` px: PIL's text box includes faint anti-aliased columns."""
    return (
        outer[0] <= inner[0] + slack
        and outer[1] <= inner[1] + slack
        and outer[2] >= inner[2] - slack
        and outer[3] >= inner[3] - slack
    )


def edges(word: RecognizedWord) -> Box:
    return word.left, word.top, word.left + word.width, word.top + word.height


def matched(words: list[RecognizedWord], truth: list[tuple[str, Box]]) -> list[tuple[Box, Box]]:
    """(true box, read box) of each true word that was read with the same text where it is."""
    pairs, used = [], set()
    for text, box in truth:
        for i, word in enumerate(words):
            if i not in used and word.text == text and inside(centre(edges(word)), box):
                used.add(i)
                pairs.append((box, edges(word)))
                break
    return pairs


@pytest.mark.parametrize("size", [11, 12, 13, 14, 15, 16])
def test_words_at_screen_sizes_are_read_with_boxes_around_them(engine: EasyOcrEngine, size: int) -> None:
    image, truth = render(size)
    words = engine.recognize(image)
    pairs = matched(words, truth)
    # Known misses: the recogniser drops the dot of "report.pdf" or reads it as a space, and CRAFT now and then
    # ends a box inside a thin last letter ("cance").
    assert len(pairs) >= 0.9 * len(truth), sorted({w.text for w in words} ^ {text for text, _ in truth})
    for true_box, read_box in pairs:
        # One word per entry: the read box holds the whole true word and no other word's middle.
        assert contains(read_box, true_box), (true_box, read_box)
        assert [box for _, box in truth if inside(centre(box), read_box)] == [true_box]
        # Narrowed to the ink: the caret goes to a word's left or right edge.
        assert abs(read_box[0] - true_box[0]) <= 2 and abs(read_box[2] - true_box[2]) <= 2, (true_box, read_box)
    assert all(0 < w.confidence <= 1 for w in words)


@pytest.mark.parametrize(("ink", "paper"), SCHEMES)
def test_a_box_read_as_several_words_is_cut_between_them(ink: str, paper: str) -> None:
    """The cut follows the blank columns, even where the box reaches past a dark panel into white above it."""
    font = ImageFont.truetype(str(SANS), 13)
    image = Image.new("RGB", (400, 40), "white")
    draw = ImageDraw.Draw(image)
    draw.rectangle((0, 12, 400, 40), fill=paper)
    truth, x = [], 10.0
    for word in ["Wide", "margins", "will", "fill", "the", "page"]:
        box = draw.textbbox((x, 18), word, font=font)
        draw.text((x, 18), word, fill=ink, font=font)
        truth.append((word, (box[0], box[1], box[2], box[3])))
        x = box[2] + draw.textlength(" ", font=font)
    grey = np.asarray(image.convert("L"))
    box = (6, 8, int(truth[-1][1][2]) + 4, 39)
    words = easyocr_engine.split_words(grey, box, "Wide margins will fill the page", 0.8)
    assert [w.text for w in words] == [text for text, _ in truth]
    for word, (_, true_box) in zip(words, truth, strict=True):
        assert contains(edges(word), true_box) and abs(word.left - true_box[0]) <= 2, (word, true_box)
        assert word.confidence == 0.8


def test_spaces_read_around_brackets_are_dropped() -> None:
    """Monospace "()" leaves a gap as wide as a space: the recogniser's "getenv ( )" is one word."""
    font = ImageFont.truetype(str(MONO), 13)
    image = Image.new("L", (200, 30), 255)
    draw = ImageDraw.Draw(image)
    ink = draw.textbbox((10, 8), "getenv(),", font=font)
    draw.text((10, 8), "getenv(),", fill=0, font=font)
    words = easyocr_engine.split_words(np.asarray(image), (6, 4, 120, 28), "getenv ( ) ,", 0.5)
    assert [w.text for w in words] == ["getenv(),"]
    assert contains(edges(words[0]), ink) and abs(words[0].left - ink[0]) <= 2


def test_a_small_block_crop_reads_in_its_own_pixels(engine: EasyOcrEngine) -> None:
    """The pipeline hands over single-line blocks with a few pixels of margin."""
    image, truth = render(13, lines=1)
    left, top = truth[0][1][0] - 4, truth[0][1][1] - 4
    crop = image.crop((left, top, truth[-1][1][2] + 4, truth[0][1][3] + 4))
    shifted = [(text, (b[0] - left, b[1] - top, b[2] - left, b[3] - top)) for text, b in truth]
    assert len(matched(engine.recognize(crop), shifted)) == len(truth)


def test_blank_and_tiny_images_have_no_words(engine: EasyOcrEngine) -> None:
    assert engine.recognize(Image.new("RGB", (640, 200), "white")) == []
    assert engine.recognize(Image.new("RGB", (8, 8), (40, 40, 40))) == []
    assert engine.recognize(Image.new("RGBA", (1, 1))) == []


@pytest.mark.timeout(300)
def test_tk_window_screenshot(engine: EasyOcrEngine, tk_probe: TkProbe) -> None:
    widgets = tk_probe.state()["widgets"]
    capturer = ScreenCapturer()
    try:
        screen = capturer.grab(capturer.monitor_rect(1))
    finally:
        capturer.close()
    words = engine.recognize(screen)
    button = widgets["button"]
    button_box = (button["left"], button["top"], button["left"] + button["width"], button["top"] + button["height"])
    label = [w for w in words if w.text in ("Press", "me") and contains(button_box, edges(w), slack=0)]
    assert [w.text for w in sorted(label, key=lambda w: w.left)] == ["Press", "me"], words
    # The text widget shows "line N wide wide ..." in DejaVu Sans Mono: row N holds the number N.
    text = widgets["text"]
    text_box = (text["left"], text["top"], text["left"] + text["width"], text["top"] + text["height"])
    rows = [w for w in words if inside(centre(edges(w)), text_box)]
    numbers = {int(w.text): w for w in rows if w.text.isdigit()}
    assert set(range(12)) <= set(numbers), sorted(numbers)
    tops = [numbers[n].top for n in range(12)]
    assert tops == sorted(tops) and len(set(tops)) == 12
    assert sum(w.text == "wide" for w in rows) >= 12 * 5
    title = [w.text for w in words if w.top < button["top"] and button["left"] - 30 < w.left < text_box[2]]
    assert "Symphony" in title and "Probe" in title


def test_one_reader_per_process() -> None:
    spec = easyocr_spec()
    built = spec.factory()
    assert (spec.name, spec.workers) == ("easyocr", 1) and isinstance(built, EasyOcrEngine)
    assert built.reader is EasyOcrEngine().reader is shared_reader()


def test_missing_install_names_the_pip_command(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(easyocr_engine, "_reader", None)
    monkeypatch.setitem(sys.modules, "easyocr", None)  # makes `import easyocr` raise ImportError
    with pytest.raises(EasyOcrUnavailableError, match=r"needs `easyocr`.*pip install torch==2\.13\.0"):
        EasyOcrEngine()


def test_only_the_torchvision_built_for_this_torch_is_patched() -> None:
    import torch

    assert easyocr_engine.torchvision_built_for(torch.__version__)
    assert not easyocr_engine.torchvision_built_for("1.0.0")


@pytest.mark.timeout(300)
def test_fresh_process_imports_lazily_reads_offline_and_writes_nothing(tmp_path: Path) -> None:
    """Importing loads no torch; the engine then reads with the network refused and leaves HOME untouched."""
    import easyocr_en_models

    model_dir = Path(easyocr_en_models.model_dir())
    before = sorted(model_dir.iterdir())
    code = """
import json, os, socket, sys
from PIL import Image, ImageDraw, ImageFont
def refuse(*args, **kwargs):
    raise OSError("network disabled by the test")
socket.getaddrinfo = refuse
socket.socket.connect = refuse
from symphony_mcp.vision.ocr.easyocr_engine import EasyOcrEngine
heavy = sorted(m for m in ("torch", "torchvision", "easyocr", "cv2") if m in sys.modules)
image = Image.new("RGB", (300, 40), "white")
font = ImageFont.truetype("/usr/share/fonts/truetype/dejavu/DejaVuSans.ttf", 14)
ImageDraw.Draw(image).text((10, 10), "Preferences saved", fill="black", font=font)
words = [w.text for w in EasyOcrEngine().recognize(image)]
import torch, torchvision
nms_error = ""
if not torchvision.extension._has_ops():
    try:
        torchvision.ops.nms(torch.zeros(1, 4), torch.zeros(1), 0.5)
    except RuntimeError as exc:
        nms_error = str(exc)
print(json.dumps({"heavy": heavy, "words": words, "threads": torch.get_num_threads(),
                  "cores": len(os.sched_getaffinity(0)), "has_ops": torchvision.extension._has_ops(),
                  "nms_error": nms_error}))
"""
    env = {**os.environ, "HOME": str(tmp_path)}
    result = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=env, check=True)
    report = json.loads(result.stdout.splitlines()[-1])
    assert report["heavy"] == []
    assert report["words"] == ["Preferences", "saved"]
    assert report["threads"] == report["cores"]
    # Without torchvision's ops library, its ops still fail with torchvision's own explanation.
    assert report["has_ops"] or "Couldn't load custom C++ ops" in report["nms_error"]
    assert list(tmp_path.iterdir()) == []
    assert sorted(model_dir.iterdir()) == before
