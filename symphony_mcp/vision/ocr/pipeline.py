"""OCR of whole frames, fast on a CPU: exact caches per frame and per text block, engines on every core.

A frame is split into blocks (layout.py); each block is recognised on its own, padded crop,
keyed by a hash of exactly those pixels. So a repeated frame costs a byte comparison with the
last frame (nothing when it is the very image read last; a hash for an older one), a frame with one
edited line re-runs only that line's block, and the result always equals a fresh full OCR of the same
pixels (the engines are deterministic for identical input). A caller with a goal (`find_text`: the first match)
has the blocks read top first and may stop once the goal is settled; the next call on the same pixels goes on
from there.
"""

from __future__ import annotations

import atexit
import hashlib
import math
import threading
import time
from collections import OrderedDict, deque
from collections.abc import Sequence
from concurrent.futures import FIRST_COMPLETED, Future, ThreadPoolExecutor, wait
from dataclasses import dataclass
from typing import Generic, Protocol, TypeVar

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
class PartialReading:
    """The words of the blocks read so far, assembled exactly as a whole reading is, and how far down that reaches."""

    result: OcrResult
    read_above: float  # screen y: every block whose crop starts above it has been read (inf: the whole frame)

    @property
    def complete(self) -> bool:
        return math.isinf(self.read_above)


class ReadingGoal(Protocol):
    """What a caller needs from a frame, so that reading may stop before the last block (`find_text`'s first
    match); without a goal every block is read."""

    def may_settle(self, words: Sequence[RecognizedWord]) -> bool:
        """Cheap: whether a newly read block's words could change `reach` (only then is it asked again)."""

    def reach(self, reading: PartialReading) -> float | None:
        """The screen y down to which every block must be read for this reading to answer the caller as the whole
        frame's reading would (None: not known yet, read on)."""


@dataclass(frozen=True)
class _BlockCrop:
    image: Image.Image  # the block's padded crop
    left: int  # where the crop lies in the frame
    top: int
    key: bytes  # digest of the crop's pixels: the block cache's key


class _FrameReading:
    """One frame read block by block, and the words of the blocks read so far. The frame read last is kept as one,
    so a call that stopped early (a goal settled) is continued by the next call on the same pixels; a frame is
    recognised again by being the very image read last (the capturer hands out the same image for unchanged pixels,
    desktop/capture.py) or by comparing bytes, several times cheaper than hashing them."""

    def __init__(self, image: Image.Image, pixels: bytes, key: bytes, area: Rect, done: OcrResult | None) -> None:
        self.image = image
        self.pixels = pixels
        self.key = key
        self.area = area
        self.lock = threading.Lock()
        self.done = done
        self.blocks = [] if done is not None else _block_crops(image)
        self.words: dict[int, tuple[RecognizedWord, ...]] = {}  # by block index, in frame pixels
        self._assembled: OcrResult | None = None

    def is_image(self, image: Image.Image, area: Rect) -> bool:
        return self.image is image and self.area == area

    def shows(self, size: tuple[int, int], pixels: bytes, area: Rect) -> bool:
        return self.image.size == size and self.area == area and self.pixels == pixels

    def unread(self) -> list[int]:
        """Blocks not read yet, in reading order: top first, then left."""
        left = [i for i in range(len(self.blocks)) if i not in self.words]
        return sorted(left, key=lambda i: (self.blocks[i].top, self.blocks[i].left))

    def top_of(self, index: int) -> int:
        """Where a block's crop starts, in screen pixels."""
        return self.area.top + self.blocks[index].top

    def add(self, index: int, words: tuple[RecognizedWord, ...]) -> tuple[RecognizedWord, ...]:
        block = self.blocks[index]
        self.words[index] = tuple(word.shifted(block.left, block.top) for word in words)
        self._assembled = None
        return self.words[index]

    def reading(self, engine: str) -> PartialReading:
        if self.done is not None:
            return PartialReading(self.done, math.inf)
        if self._assembled is None:
            read = [self.words[i] for i in range(len(self.blocks)) if i in self.words]
            self._assembled = _assemble(read, len(self.blocks), self.area, engine)
        read_above = min((self.top_of(i) for i in range(len(self.blocks)) if i not in self.words), default=math.inf)
        if math.isinf(read_above):  # read whole: the crops and words per block are no longer needed
            self.done, self.blocks, self.words = self._assembled, [], {}
        return PartialReading(self._assembled, read_above)


class OcrPipeline:
    def __init__(self, spec: EngineSpec, block_cache_size: int = 20_000, frame_cache_size: int = 16) -> None:
        self.spec = spec
        self._executor = ThreadPoolExecutor(max_workers=spec.workers, thread_name_prefix=f"ocr-{spec.name}")
        self._local = threading.local()
        self._engines: list[OcrEngine] = []
        self._engines_lock = threading.Lock()
        self._blocks: LruCache[bytes, tuple[RecognizedWord, ...]] = LruCache(block_cache_size)
        self._frames: LruCache[bytes, OcrResult] = LruCache(frame_cache_size)
        self._last: _FrameReading | None = None

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
        return self.read_until(image, area, None).result

    def read_until(self, image: Image.Image, area: Rect, goal: ReadingGoal | None) -> PartialReading:
        """The words in `image` (screen `area` at full resolution), read top first until `goal` is settled; with no
        goal, or one never settled, all of them. Whatever was read stays cached, so reading on later costs only the
        blocks not read yet, and a whole reading always equals a fresh full OCR of the same pixels."""
        started = time.perf_counter()
        frame = self._frame(image, area)
        with frame.lock:
            recognized = self._advance(frame, goal)
            reading = frame.reading(self.spec.name)
        if reading.complete:
            self._frames.put(frame.key, reading.result)
        update = {"elapsed_ms": _ms_since(started), "blocks_recognized": recognized}
        return PartialReading(reading.result.model_copy(update=update), reading.read_above)

    def _frame(self, image: Image.Image, area: Rect) -> _FrameReading:
        """The reading of this frame: the last one when these are its pixels, else a new one (done at once when the
        frame cache has its result)."""
        last = self._last
        if last is not None and last.is_image(image, area):
            return last
        if image.mode != "RGB":
            image = image.convert("RGB")
        pixels = image.tobytes()
        if last is not None and last.shows(image.size, pixels, area):
            last.image = image
            return last
        key = _digest_pixels(image.mode, image.size, pixels)
        cached = self._frames.get(key)
        frame = _FrameReading(image, pixels, key, area, cached if cached is not None and cached.area == area else None)
        for i in frame.unread():  # blocks an earlier frame had: a kept frame gains blocks only by its own reading
            words = self._blocks.get(frame.blocks[i].key)
            if words is not None:
                frame.add(i, words)
        self._last = frame
        return frame

    def _advance(self, frame: _FrameReading, goal: ReadingGoal | None) -> int:
        """Read `frame`'s blocks until `goal` is settled, or all of them; returns how many needed the engine.

        Without a goal every block is queued at once, largest first (the workers then finish close together). With
        one, blocks go top first, one per worker at a time; once the goal says how far down it needs the frame read,
        no block starting below that is begun."""
        if frame.done is not None:
            return 0
        pending = frame.unread()
        if goal is None:
            pending.sort(key=lambda i: -frame.blocks[i].image.width * frame.blocks[i].image.height)
        reach = None
        if goal is not None and goal.may_settle([word for words in frame.words.values() for word in words]):
            reach = goal.reach(frame.reading(self.spec.name))
        queue = deque(pending)
        ahead = len(pending) if goal is None else self.spec.workers
        running: dict[Future[tuple[RecognizedWord, ...]], int] = {}
        recognized = 0
        while True:
            while queue and len(running) < ahead and (reach is None or frame.top_of(queue[0]) < reach):
                i = queue.popleft()
                running[self._executor.submit(self._recognize, frame.blocks[i].image)] = i
            if not running:
                return recognized
            finished, _ = wait(running, return_when=FIRST_COMPLETED)
            changed = False
            for future in finished:
                i = running.pop(future)
                words = future.result()
                self._blocks.put(frame.blocks[i].key, words)
                added = frame.add(i, words)
                recognized += 1
                changed = (goal is not None and goal.may_settle(added)) or changed
            if changed and goal is not None:
                reach = goal.reach(frame.reading(self.spec.name))

    def clear(self) -> None:
        """Forget every cached result (the next frame is read in full); loaded engines stay."""
        self._blocks.clear()
        self._frames.clear()
        self._last = None

    def close(self) -> None:
        self._executor.shutdown(wait=True)
        for engine in self._engines:
            close = getattr(engine, "close", None)
            if close is not None:
                close()


def _block_crops(image: Image.Image) -> list[_BlockCrop]:
    crops = []
    for block in split_blocks(np.asarray(image.convert("L")), CutRules(), np.asarray(image)):
        crop, (left, top) = _padded_crop(image, block)
        crops.append(_BlockCrop(crop, left, top, _digest(crop)))
    return crops


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


def _assemble(blocks: list[tuple[RecognizedWord, ...]], total: int, area: Rect, engine: str) -> OcrResult:
    """Words of the given blocks (in frame pixels, in block order) as lines in reading order, in screen pixels."""
    words: list[OcrWord] = []
    lines: list[OcrLine] = []
    for line in join_lines([line for block in blocks for line in block_lines(block)]):
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
        elapsed_ms=0.0,
        blocks=total,
        blocks_recognized=0,
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
