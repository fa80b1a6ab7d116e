"""Chat messages in the OpenAI wire format, with images as data URLs."""

from __future__ import annotations

import base64
import functools
from dataclasses import dataclass
from typing import Literal

from pydantic import BaseModel


@dataclass(frozen=True)
class ModelImage:
    """An encoded image as sent to a model. Its width and height are the pixel space the model sees.

    The picture fills `content_width x content_height` from the top-left corner; the rest (if any) is
    padding added instead of a slight upscale (see `models.images.prepare_image`).
    """

    data: bytes
    format: str
    width: int
    height: int
    content_width: int
    content_height: int

    @functools.cached_property
    def data_url(self) -> str:  # cached: a planner history sends the same screenshots every step
        return f"data:image/{self.format};base64,{base64.b64encode(self.data).decode('ascii')}"


class TextPart(BaseModel):
    type: Literal["text"] = "text"
    text: str


class ImageUrl(BaseModel):
    url: str


class ImagePart(BaseModel):
    type: Literal["image_url"] = "image_url"
    image_url: ImageUrl


class ChatMessage(BaseModel):
    role: Literal["system", "user", "assistant"]
    content: str | list[TextPart | ImagePart]


def system(text: str) -> ChatMessage:
    return ChatMessage(role="system", content=text)


def assistant(text: str) -> ChatMessage:
    return ChatMessage(role="assistant", content=text)


def user(*parts: str | ModelImage) -> ChatMessage:
    """A user turn of text and images, in the order given."""
    if len(parts) == 1 and isinstance(parts[0], str):
        return ChatMessage(role="user", content=parts[0])
    content: list[TextPart | ImagePart] = [
        TextPart(text=part) if isinstance(part, str) else ImagePart(image_url=ImageUrl(url=part.data_url))
        for part in parts
    ]
    return ChatMessage(role="user", content=content)
