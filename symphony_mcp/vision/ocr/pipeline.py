"""OCR of whole frames, fast on a CPU: exact caches per frame and per text block, engines on every core.

A frame is split into blocks (layout.py); each block is recognised on its own, padded crop,
keyed by a hash of exactly those pixels. So a repeated frame costs a byte comparison with the
last frame (nothing when it is the very image read last; a hash for an older one), a frame with one
edited line re-runs only that line's block, and the result always equals a fresh full OCR of the same
pixels (the engines are deterministic for identical input).
"""

from __future__ import annotations

import atexit
import hashlib
import threading
import time
from collections import OrderedDict
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from typing import Generic, TypeVar

import numpy as np
from PIL import Image

from symphony_mcp.errors import SymphonyError
from symphony_mcp.imaging.geometry import Rect, union
from symphony_mcp.vision.ocr.engine import EngineSpec, OcrEngine, OcrEngineError
from symphony_mcp.vision.ocr.layout import Block, CutRules, split_blocks
from symphony_mcp.vision.ocr.types import OcrLine, OcrResult, OcrWord, RecognizedWord

BLOCK_PADDING = 4  # background kept around a block: engines misread glyphs that touch the edge
LINE_GAP_HEIGHTS = 2.5  # a horizontal gap wider than this many text heights ends a line
K = TypeVar("K")
V = TypeVar("V")


class LruCache(Generic[K, V]):
    def __init__(self, capacity: int) -> None:
        self._items: OrderedDict[K, V] = OrderedDict()
        self._capacity = capacity
        self._lock = threading.Lock()

    def get(self, key: K) -> V | None:
        with self._lock:
            if key not in self._items:
                return None
            self._items.move_to_end(key)
            return self._items[key]

    def clear(self) -> None:
        with self._lock:
            self._items.clear()

    def put(self, key: K, value: V) -> None:
        with self._lock:
            self._items[key] = value
            self._items.move_to_end(key)
            while len(self._items) > self._capacity:
                self._items.popitem(last=False)


@dataclass(frozen=True)
class _LastFrame:
    """The frame read last, its pixels and its result: the same screen again (an agent asking twice about an
    unchanged screen) is the very same image when the capturer saw its pixels unchanged (desktop/capture.py), else
    recognised by comparing bytes, several times cheaper than hashing them."""

    image: Image.Image
    pixels: bytes
    result: OcrResult

    def is_image(self, image: Image.Image, area: Rect) -> bool:
        return self.image is image and self.result.area == area

    def shows(self, size: tuple[int, int], pixels: bytes, area: Rect) -> bool:
        return self.image.size == size and self.result.area == area and self.pixels == pixels


@dataclass(frozen=True)
class _FrameWords:
    """Words of one image in its own pixels, grouped by block, plus how much work it took."""

    blocks: tuple[tuple[RecognizedWord, ...], ...]
    recognized: int


class OcrPipeline:
    def __init__(self, spec: EngineSpec, block_cache_size: int = 20_000, frame_cache_size: int = 16) -> None:
        self.spec = spec
        self._executor = ThreadPoolExecutor(max_workers=spec.workers, thread_name_prefix=f"ocr-{spec.name}")
        self._local = threading.local()
        self._engines: list[OcrEngine] = []
        self._engines_lock = threading.Lock()
        self._blocks: LruCache[bytes, tuple[RecognizedWord, ...]] = LruCache(block_cache_size)
        self._frames: LruCache[bytes, OcrResult] = LruCache(frame_cache_size)
        self._last: _LastFrame | None = None

    def _recognize(self, image: Image.Image) -> tuple[RecognizedWord, ...]:
        """This thread's engine on `image`. Whatever the engine (or a library under it) raises becomes an error that
        names the engine and the way out, rather than a bare third-party exception."""
        try:
            return tuple(self._engine().recognize(image))
        except SymphonyError:
            raise
        except Exception as exc:
            raise OcrEngineError(self.spec.name, exc) from exc

    def _engine(self) -> OcrEngine:
        engine: OcrEngine | None = getattr(self._local, "engine", None)
        if engine is None:
            engine = self.spec.factory()
            self._local.engine = engine
            with self._engines_lock:
                self._engines.append(engine)
        return engine

    def warm_up(self) -> None:
        """Load one engine per worker now (model loading can take seconds)."""
        blank = Image.new("RGB", (64, 32), "white")
        futures = [self._executor.submit(self._recognize, blank) for _ in range(self.spec.workers)]
        for future in futures:
            future.result()

    def read(self, image: Image.Image, area: Rect) -> OcrResult:
        """All words in `image`, which shows screen `area` at full resolution."""
        started = time.perf_counter()
        last = self._last
        if last is not None and last.is_image(image, area):
            return last.result.model_copy(update={"elapsed_ms": _ms_since(started), "blocks_recognized": 0})
        if image.mode != "RGB":
            image = image.convert("RGB")
        pixels = image.tobytes()
        if last is not None and last.shows(image.size, pixels, area):
            self._last = _LastFrame(image, pixels, last.result)
            return last.result.model_copy(update={"elapsed_ms": _ms_since(started), "blocks_recognized": 0})
        key = _digest_pixels(image.mode, image.size, pixels)
        cached = self._frames.get(key)
        if cached is not None and cached.area == area:
            self._last = _LastFrame(image, pixels, cached)
            return cached.model_copy(update={"elapsed_ms": _ms_since(started), "blocks_recognized": 0})
        frame = self._recognize_frame(image)
        result = _assemble(frame, area, self.spec.name, _ms_since(started))
        self._frames.put(key, result)
        self._last = _LastFrame(image, pixels, result)
        return result

    def clear(self) -> None:
        """Forget every cached result (the next frame is read in full); loaded engines stay."""
        self._blocks.clear()
        self._frames.clear()
        self._last = None

    def _recognize_frame(self, image: Image.Image) -> _FrameWords:
        blocks = split_blocks(np.asarray(image.convert("L")), CutRules(), np.asarray(image))
        crops = [_padded_crop(image, block) for block in blocks]
        keys = [_digest(crop) for crop, _ in crops]
        cached = [self._blocks.get(key) for key in keys]
        misses = [i for i, words in enumerate(cached) if words is None]
        # Largest first: the workers then finish close together instead of one waiting on a big block at the end.
        by_size = sorted(misses, key=lambda i: -crops[i][0].width * crops[i][0].height)
        futures = {i: self._executor.submit(self._recognize, crops[i][0]) for i in by_size}
        results: list[tuple[RecognizedWord, ...]] = []
        for i, ((_, (dx, dy)), key) in enumerate(zip(crops, keys, strict=True)):
            words = cached[i]
            if words is None:
                words = futures[i].result()
                self._blocks.put(key, words)
            results.append(tuple(word.shifted(dx, dy) for word in words))
        return _FrameWords(blocks=tuple(results), recognized=len(misses))

    def close(self) -> None:
        self._executor.shutdown(wait=True)
        for engine in self._engines:
            close = getattr(engine, "close", None)
            if close is not None:
                close()


def _digest(image: Image.Image) -> bytes:
    return _digest_pixels(image.mode, image.size, image.tobytes())


def _digest_pixels(mode: str, size: tuple[int, int], pixels: bytes) -> bytes:
    # SHA-256 has CPU support on current x86 and ARM: ~2x faster than BLAKE2b on a 1080p frame here.
    hasher = hashlib.sha256()
    hasher.update(f"{mode}{size}".encode())
    hasher.update(pixels)
    return hasher.digest()


def _padded_crop(image: Image.Image, block: Block) -> tuple[Image.Image, tuple[int, int]]:
    left, top = max(0, block.left - BLOCK_PADDING), max(0, block.top - BLOCK_PADDING)
    right = min(image.width, block.right + BLOCK_PADDING)
    bottom = min(image.height, block.bottom + BLOCK_PADDING)
    return image.crop((left, top, right, bottom)), (left, top)


def _ms_since(started: float) -> float:
    return round((time.perf_counter() - started) * 1000, 2)


def _assemble(frame: _FrameWords, area: Rect, engine: str, elapsed_ms: float) -> OcrResult:
    words: list[OcrWord] = []
    lines: list[OcrLine] = []
    for line in join_lines([line for block in frame.blocks for line in block_lines(block)]):
        line_id = len(lines)
        ids = []
        for word in line:
            ids.append(len(words))
            box = Rect(left=area.left + word.left, top=area.top + word.top, width=word.width, height=word.height)
            words.append(OcrWord(id=len(words), text=word.text, confidence=word.confidence, line_id=line_id, box=box))
        text = " ".join(w.text for w in line)
        lines.append(OcrLine(id=line_id, text=text, word_ids=ids, box=union([words[i].box for i in ids])))
    return OcrResult(
        engine=engine,
        area=area,
        words=words,
        lines=lines,
        elapsed_ms=elapsed_ms,
        blocks=len(frame.blocks),
        blocks_recognized=frame.recognized,
    )


Line = list[RecognizedWord]


def block_lines(words: tuple[RecognizedWord, ...]) -> list[Line]:
    """Lines within one block (one column of text): words whose centre falls in a line's band."""
    lines: list[Line] = []
    for word in sorted(words, key=lambda w: (w.top + w.height / 2, w.left)):
        centre = word.top + word.height / 2
        for line in lines:
            if min(w.top for w in line) <= centre <= max(w.top + w.height for w in line):
                line.append(word)
                break
        else:
            lines.append([word])
    for line in lines:
        line.sort(key=lambda w: w.left)
    return lines


def join_lines(lines: list[Line]) -> list[Line]:
    """Join lines of neighbouring blocks that continue each other on the same baseline; reading order."""
    joined: list[Line] = []
    for line in sorted(lines, key=lambda line: line[0].left):
        head = line[0]
        height = max(w.height for w in line)
        for target in joined:
            tail = target[-1]
            gap = head.left - (tail.left + tail.width)
            aligned = abs((head.top + head.height / 2) - (tail.top + tail.height / 2)) <= height / 3
            if aligned and 0 <= gap <= LINE_GAP_HEIGHTS * height:
                target.extend(line)
                break
        else:
            joined.append(list(line))
    joined.sort(key=lambda line: (min(w.top for w in line), line[0].left))
    return joined


_shared: dict[tuple[str, str], OcrPipeline] = {}
_shared_lock = threading.Lock()


def shared_pipeline(engine: str, language: str) -> OcrPipeline:
    """The process-wide pipeline of an engine: models load once per process, caches serve every session."""
    from symphony_mcp.vision.ocr.engines import engine_spec

    with _shared_lock:
        key = (engine, language)
        if key not in _shared:
            _shared[key] = OcrPipeline(engine_spec(engine, language))
            atexit.register(_shared[key].close)
        return _shared[key]


def is_loaded(engine: str, language: str) -> bool:
    return (engine, language) in _shared
