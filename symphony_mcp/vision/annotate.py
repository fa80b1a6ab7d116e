"""Set-of-marks drawings: numbered boxes over a frame, so a model can refer to elements by id."""

from __future__ import annotations

from collections.abc import Sequence

from PIL import Image, ImageDraw, ImageFont

from symphony_mcp.imaging.geometry import Rect

_BOX = (230, 20, 60)
_LABEL_TEXT = (255, 255, 255)


def draw_marks(image: Image.Image, origin: Rect, marks: Sequence[tuple[int, Rect]]) -> Image.Image:
    """A copy of `image` (showing screen area `origin`) with each box outlined and labelled with its id."""
    marked = image.convert("RGB")
    draw = ImageDraw.Draw(marked)
    font = ImageFont.load_default(size=max(10, round(image.height / 90)))
    for mark_id, box in marks:
        left, top = box.left - origin.left, box.top - origin.top
        draw.rectangle((left, top, left + box.width - 1, top + box.height - 1), outline=_BOX, width=1)
        label = str(mark_id)
        text_box = draw.textbbox((0, 0), label, font=font)
        width, height = text_box[2] - text_box[0] + 2, text_box[3] - text_box[1] + 2
        label_top = max(0, top - height)
        draw.rectangle((left, label_top, left + width, label_top + height), fill=_BOX)
        draw.text((left + 1, label_top - text_box[1] + 1), label, fill=_LABEL_TEXT, font=font)
    return marked
