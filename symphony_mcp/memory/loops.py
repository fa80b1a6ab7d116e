"""Loop detection without a model: the last N (action, resulting screen) pairs repeat an earlier window.

Two pairs match when the actions match (same tool, points within a fraction of the screen
diagonal, same text/keys/direction, similar queries) and the screens match (pHash Hamming
distance and SSIM thresholds). Screens are indexed by pHash, so a check only computes SSIM for
the few earlier steps whose hash is within the distance: its cost does not grow with the trajectory.
"""

from __future__ import annotations

import itertools
import json
import math
from collections import defaultdict
from dataclasses import dataclass

import imagehash
import numpy as np
from PIL import Image
from rapidfuzz import fuzz
from skimage.metrics import structural_similarity

from symphony_mcp.config import MemorySettings
from symphony_mcp.desktop.records import ActionRecord
from symphony_mcp.memory.result_schemas import LoopReport

_PRINT_WIDTH = 320  # screens are compared at about this width: SSIM at full size costs ~50x more
_HASH_BITS = 64
_INDEXED_DISTANCE = 2  # up to this Hamming distance, candidates come from the index; beyond it, a scan
# Arguments that must be equal for two actions to match (points and queries are compared separately).
_EXACT_ARGUMENTS = (
    "text",
    "keys",
    "key",
    "hold_keys",
    "press_keys",
    "button",
    "count",
    "overwrite",
    "enter",
    "target",
    "window_id",
    "seconds",
)


@dataclass(frozen=True)
class ScreenPrint:
    """A screen reduced to what loop detection compares: a 64-bit pHash and a small grey image."""

    phash: int
    grey: np.ndarray

    @classmethod
    def of(cls, image: Image.Image) -> ScreenPrint:
        factor = max(1, image.width // _PRINT_WIDTH)
        grey = (image.reduce(factor) if factor > 1 else image).convert("L")
        return cls(phash=int(str(imagehash.phash(grey)), 16), grey=np.asarray(grey))

    def matches(self, other: ScreenPrint, max_hamming: int, min_ssim: float) -> bool:
        if (self.phash ^ other.phash).bit_count() > max_hamming or self.grey.shape != other.grey.shape:
            return False
        return float(structural_similarity(self.grey, other.grey, data_range=255)) >= min_ssim


@dataclass(frozen=True)
class ActionSignature:
    """What identifies an action for loop detection."""

    name: str
    points: tuple[tuple[int, int], ...]
    arguments: tuple[tuple[str, str], ...]
    queries: tuple[str, ...]

    @classmethod
    def of(cls, record: ActionRecord) -> ActionSignature:
        args = dict(record.arguments)
        for axis in ("vertical", "horizontal"):  # scrolling: the direction matters, not the amount
            if isinstance(args.get(axis), int | float):
                args[axis] = (args[axis] > 0) - (args[axis] < 0)
        kept = [*_EXACT_ARGUMENTS, "vertical", "horizontal"]
        return cls(
            name=record.action,
            points=tuple((p.x, p.y) for p in record.screen_points),
            arguments=tuple((k, json.dumps(args[k], sort_keys=True)) for k in kept if k in args),
            queries=tuple(g.query.casefold() for g in record.grounding),
        )

    def matches(self, other: ActionSignature, max_distance: float, min_similarity: float) -> bool:
        if (self.name, self.arguments, len(self.points), len(self.queries)) != (
            other.name,
            other.arguments,
            len(other.points),
            len(other.queries),
        ):
            return False
        if any(math.dist(a, b) > max_distance for a, b in zip(self.points, other.points, strict=True)):
            return False
        return all(fuzz.ratio(a, b) >= min_similarity for a, b in zip(self.queries, other.queries, strict=True))


class LoopDetector:
    """Holds one (action, screen) pair per step; step numbers start at 1."""

    def __init__(self, settings: MemorySettings, screen_diagonal: float) -> None:
        self.settings = settings
        self.max_distance = settings.loop_point_tolerance * screen_diagonal
        self._pairs: list[tuple[ActionSignature, ScreenPrint]] = []
        self._by_hash: defaultdict[int, list[int]] = defaultdict(list)

    def __len__(self) -> int:
        return len(self._pairs)

    def add(self, action: ActionSignature, screen: ScreenPrint) -> None:
        self._by_hash[screen.phash].append(len(self._pairs))
        self._pairs.append((action, screen))

    def check(self) -> LoopReport:
        """Whether the last `loop_window` pairs match an earlier window (shifted by at least one step)."""
        size, count = self.settings.loop_window, len(self._pairs)
        if count < size + 1:
            return LoopReport(detected=False, message=f"no loop: {count} step(s), a loop needs {size + 1} or more")
        start = count - size
        for candidate in sorted(self._candidates(start), reverse=True):  # the most recent repeat first
            if all(self._pair_matches(candidate + k, start + k) for k in range(size)):
                window = list(range(start + 1, count + 1))
                earlier = list(range(candidate + 1, candidate + size + 1))
                return LoopReport(
                    detected=True,
                    window=window,
                    earlier=earlier,
                    message=(
                        f"loop: steps {window[0]}-{window[-1]} repeat steps {earlier[0]}-{earlier[-1]} "
                        "(same actions on the same screens)"
                    ),
                )
        return LoopReport(detected=False, message=f"no loop in the last {size} steps")

    def _candidates(self, start: int) -> set[int]:
        """Earlier steps whose screen hash is close to the window's first screen."""
        target, limit = self._pairs[start][1].phash, self.settings.loop_max_hamming
        if limit > _INDEXED_DISTANCE:
            hashes = [h for h in self._by_hash if (h ^ target).bit_count() <= limit]
        else:
            hashes = [target]
            for distance in range(1, limit + 1):
                for bits in itertools.combinations(range(_HASH_BITS), distance):
                    hashes.append(target ^ sum(1 << b for b in bits))
        return {i for h in hashes for i in self._by_hash.get(h, ()) if i < start}

    def _pair_matches(self, a: int, b: int) -> bool:
        (action_a, screen_a), (action_b, screen_b) = self._pairs[a], self._pairs[b]
        settings = self.settings
        return action_a.matches(action_b, self.max_distance, settings.loop_query_similarity) and screen_a.matches(
            screen_b, settings.loop_max_hamming, settings.loop_min_ssim
        )
