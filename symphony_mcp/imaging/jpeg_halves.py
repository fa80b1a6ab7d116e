"""JPEG of BGRX pixels written in two halves at once, one per core.

libjpeg-turbo encodes on one core: 2.7 ms of a 1280x720 screenshot, the largest single part of the server's own
work for one. JPEG's restart markers (RST0-RST7, resynchronisation points every baseline decoder reads) reset the
entropy coder at each interval, so two halves of an image, each encoded with a restart interval of one MCU row,
join into one valid scan: the top half's headers with the whole height, its scan, the next RSTn, then the bottom
half's scan. Quantisation and the standard Huffman tables are the same in both halves, so the decoded pixels are
exactly those of the image encoded whole (tests/test_encoding.py decodes both). The top half holds a multiple of 8
MCU rows, so the bottom half's own markers continue the RST0-7 cycle as they are.
"""

from __future__ import annotations

import os
import struct
from concurrent.futures import ThreadPoolExecutor
from functools import cache
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    import numpy as np
    from numpy.typing import NDArray

_MCU_SIDE = 16  # 4:2:0 sampling: an MCU covers 16x16 pixels
_SMALLEST_SPLIT = 16  # MCU rows (256 pixels): a smaller image is encoded whole
_SOF0, _SOS, _EOI, _RST0 = 0xC0, 0xDA, 0xD9, 0xD0


def jpeg_of_bgrx(pixels: NDArray[np.uint8], quality: int) -> bytes:
    """Baseline 4:2:0 JPEG of height x width x 4 BGRX pixels (the fourth byte dropped), in halves where it pays."""
    height, width = pixels.shape[:2]
    rows = -(-height // _MCU_SIDE)
    if rows < _SMALLEST_SPLIT or _cores() < 2:
        return _encode(pixels, quality)
    top_rows = 8 * round(rows / 16)
    cut, per_row = top_rows * _MCU_SIDE, -(-width // _MCU_SIDE)
    half = pixels[cut:]
    bottom = _second_core().submit(_encode, half, quality, per_row)  # OpenCV lets go of the GIL
    top = _encode(pixels[:cut], quality, per_row)
    # On a busy machine the other thread may not have had a core yet: then this one does both halves.
    bottom_jpeg = _encode(half, quality, per_row) if bottom.cancel() else bottom.result()
    return _join(top, bottom_jpeg, height, top_rows)


def _encode(pixels: NDArray[np.uint8], quality: int, restart_interval: int = 0) -> bytes:
    import cv2

    options = [
        cv2.IMWRITE_JPEG_QUALITY,
        quality,
        cv2.IMWRITE_JPEG_SAMPLING_FACTOR,
        cv2.IMWRITE_JPEG_SAMPLING_FACTOR_420,
        cv2.IMWRITE_JPEG_RST_INTERVAL,
        restart_interval,
    ]
    written, data = cv2.imencode(".jpg", pixels, options)
    if not written:
        raise ValueError(f"OpenCV could not encode a {pixels.shape[1]}x{pixels.shape[0]} image as JPEG")
    return bytes(data)


def _join(top: bytes, bottom: bytes, height: int, top_rows: int) -> bytes:
    """One JPEG of the two halves: top's headers (SOF0 given the whole height), top's scan, RST(top_rows - 1 mod 8),
    bottom's scan and end."""
    top_sof, top_scan = _layout(top)
    _, bottom_scan = _layout(bottom)
    head = bytearray(top[:top_scan])
    head[top_sof + 5 : top_sof + 7] = struct.pack(">H", height)  # FF C0, length, precision, then the height
    marker = bytes((0xFF, _RST0 + (top_rows - 1) % 8))
    return bytes(head) + top[top_scan:-2] + marker + bottom[bottom_scan:]


def _layout(jpeg: bytes) -> tuple[int, int]:
    """Where a baseline JPEG's SOF0 segment starts and where its scan data starts (after the SOS header)."""
    if jpeg[:2] != b"\xff\xd8" or jpeg[-2:] != bytes((0xFF, _EOI)):
        raise ValueError("not a whole JPEG")
    sof, at = -1, 2
    while at + 4 <= len(jpeg) and jpeg[at] == 0xFF:
        marker, length = jpeg[at + 1], struct.unpack(">H", jpeg[at + 2 : at + 4])[0]
        if marker == _SOF0:
            sof = at
        if marker == _SOS:
            if sof < 0:
                raise ValueError("a JPEG without a baseline frame header")
            return sof, at + 2 + length
        at += 2 + length
    raise ValueError("a JPEG without a scan")


@cache
def _cores() -> int:
    return len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else os.cpu_count() or 1


@cache
def _second_core() -> ThreadPoolExecutor:
    return ThreadPoolExecutor(max_workers=1, thread_name_prefix="jpeg-half")
