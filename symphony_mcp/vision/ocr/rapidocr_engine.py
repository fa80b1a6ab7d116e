"""RapidOCR (PP-OCRv6 models on onnxruntime) as an OCR engine, offline with the models its wheel ships.

RapidOCR reads text lines. Its own word boxes (`return_word_box`) split words at wide letters ("m|essage"),
so words are built here from its per-character boxes (`return_single_char_box`), which come from where the
recogniser's CTC columns fired: they stay right when a line mixes fonts, where splitting a line box by
font-width guesses was off by up to 56 px on a documentation page.
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import Any

from PIL import Image

from symphony_mcp.errors import SymphonyError
from symphony_mcp.vision.ocr.engine import EngineSpec
from symphony_mcp.vision.ocr.models import RecognizedWord

INSTALL_COMMAND = "pip install 'rapidocr==3.10.0' 'onnxruntime>=1.20,<2'"

# The detector and recogniser inside the rapidocr 3.10 wheel. Naming the files makes rapidocr load them as
# they are; without a path it resolves a download URL, and any other language, version or model type
# downloads, which fails offline.
DET_MODEL = "PP-OCRv6_det_small.onnx"
REC_MODEL = "PP-OCRv6_rec_small.onnx"

# One engine with both cores: measured on 2 cores, 1 instance x 2 threads read a 1080p page in ??? s against
# ??? s for 2 instances x 1 thread working on its halves, and each instance costs ??? MB.
WORKERS = 1
THREADS = 2

Quad = Sequence[Sequence[float]]
CharBox = tuple[str, float, Quad]


class OcrEngineUnavailableError(SymphonyError, RuntimeError):
    """The engine's packages or models are missing; the message names the command that installs them."""


class RapidOcrEngine:
    """Reads words with RapidOCR. Nothing is imported or loaded until the first `recognize`."""

    def __init__(self, threads: int = THREADS) -> None:
        self._threads = threads
        self._ocr: Any = None

    def recognize(self, image: Image.Image) -> list[RecognizedWord]:
        if self._ocr is None:
            self._ocr = build_rapidocr(self._threads)
        result = self._ocr(image.convert("RGB"), return_word_box=True, return_single_char_box=True)
        if not result.txts:
            return []
        # Both come from one list filtered the same way; a length mismatch means the library changed.
        chars = result.word_results if len(result.word_results) == len(result.txts) else [()] * len(result.txts)
        words: list[RecognizedWord] = []
        for text, score, line_box, line_chars in zip(result.txts, result.scores, result.boxes, chars, strict=True):
            words.extend(line_words(text, float(score), line_box, line_chars))
        return [clip(word, image.width, image.height) for word in words]


def rapidocr_spec() -> EngineSpec:
    return EngineSpec(name="rapidocr", factory=RapidOcrEngine, workers=WORKERS)


def build_rapidocr(threads: int) -> Any:
    """A RapidOCR pinned to the packaged models, without the orientation classifier.

    Screen text is upright; the classifier only costs time, and it turned a 14 px line upside down
    ("dog message options" became "op   n sn  s nt").
    """
    try:
        import onnxruntime  # noqa: F401  # rapidocr imports it only when the first model loads
        from rapidocr import RapidOCR
    except ImportError as exc:
        raise OcrEngineUnavailableError(
            f"the rapidocr OCR engine is not installed ({exc}): run {INSTALL_COMMAND}"
        ) from exc
    models = packaged_models_dir()
    return RapidOCR(
        params={
            "Global.use_cls": False,
            "Global.log_level": "error",  # an image without text is normal here, not a warning
            "Det.model_path": str(models / DET_MODEL),
            "Rec.model_path": str(models / REC_MODEL),
            "EngineConfig.onnxruntime.intra_op_num_threads": threads,
            "EngineConfig.onnxruntime.inter_op_num_threads": 1,
        }
    )


def packaged_models_dir() -> Path:
    """The wheel's model folder, checked so that a different rapidocr fails here rather than downloading."""
    import rapidocr

    models = Path(rapidocr.__file__).parent / "models"
    missing = [name for name in (DET_MODEL, REC_MODEL) if not (models / name).is_file()]
    if missing:
        raise OcrEngineUnavailableError(
            f"rapidocr {getattr(rapidocr, '__version__', '?')} does not ship {', '.join(missing)} in {models}: "
            f"run {INSTALL_COMMAND}"
        )
    return models


def line_words(text: str, score: float, line_box: Quad, chars: Sequence[CharBox]) -> list[RecognizedWord]:
    """The whitespace-separated words of one line, boxed by their characters' boxes.

    Falls back to even character widths across the line box if the character boxes do not spell the
    line, so a word is never given another word's box.
    """
    glyphs = [c for c in text if not c.isspace()]
    if [char[0] for char in chars] != glyphs:
        return even_split(text, score, line_box)
    words, start = [], 0
    for token in text.split():
        words.append(word_from_quads(token, score, [char[2] for char in chars[start : start + len(token)]]))
        start += len(token)
    return words


def even_split(text: str, score: float, line_box: Quad) -> list[RecognizedWord]:
    """Words placed by character count along the line box."""
    left, top, right, bottom = bounds([line_box])
    step = (right - left) / max(len(text), 1)
    words, position = [], 0
    for token in text.split():
        position = text.index(token, position)
        x0, x1 = left + step * position, left + step * (position + len(token))
        words.append(word_from_bounds(token, score, (x0, top, x1, bottom)))
        position += len(token)
    return words


def word_from_quads(text: str, score: float, quads: Sequence[Quad]) -> RecognizedWord:
    return word_from_bounds(text, score, bounds(quads))


def word_from_bounds(text: str, score: float, box: tuple[float, float, float, float]) -> RecognizedWord:
    left, top, right, bottom = (round(v) for v in box)
    confidence = min(max(score, 0.0), 1.0)
    return RecognizedWord(text, left, top, max(right - left, 1), max(bottom - top, 1), confidence)


def bounds(quads: Sequence[Quad]) -> tuple[float, float, float, float]:
    xs = [float(point[0]) for quad in quads for point in quad]
    ys = [float(point[1]) for quad in quads for point in quad]
    return min(xs), min(ys), max(xs), max(ys)


def clip(word: RecognizedWord, width: int, height: int) -> RecognizedWord:
    """Keep a box inside the image: detection boxes are padded and may reach past an edge."""
    left, top = min(max(word.left, 0), width - 1), min(max(word.top, 0), height - 1)
    right, bottom = min(word.left + word.width, width), min(word.top + word.height, height)
    return RecognizedWord(word.text, left, top, max(right - left, 1), max(bottom - top, 1), word.confidence)
