"""MCP tools that read text on screen and act on it: ocr, find_text, click_text, locate_cursor,
highlight_text_span."""

from __future__ import annotations

from typing import Annotated, Literal

from mcp.server.mcpserver import Context, Image
from mcp.types import CallToolResult, TextContent
from pydantic import Field

from symphony_mcp.desktop.records import ActionRecord
from symphony_mcp.desktop.types import MouseButton
from symphony_mcp.errors import InvalidInputError
from symphony_mcp.imaging.geometry import CoordinateSpace, Region
from symphony_mcp.tools.arguments import (
    AreaRegion,
    Count,
    Described,
    FrameId,
    Index,
    Monitor,
    Space,
    TypedText,
    both,
    coordinate,
    given,
    missing,
)
from symphony_mcp.tools.common import DESTRUCTIVE_INPUT, READ_ONLY
from symphony_mcp.tools.cores import Cores
from symphony_mcp.tools.definition import define_tool
from symphony_mcp.vision.annotate import draw_marks
from symphony_mcp.vision.ocr.grounder import FoundText, SpanSelection, TextSearch
from symphony_mcp.vision.ocr.types import OcrResult

Area = Annotated[
    AreaRegion, Field(description="read only this {left, top, width, height} (any box from a result fits)")
]
Phrase = Annotated[
    Described, Field(description="text as it appears on screen; case, punctuation and line breaks may differ")
]
NearX = Annotated[float | None, coordinate("prefer matches nearest this point (with near_y)")]
NearY = Annotated[float | None, coordinate("prefer matches nearest this point (with near_x)")]
Approximate = Annotated[
    bool,
    Field(
        description="act on the best match even if it differs from the phrase (exact=false in find_text); "
        "default: only text that equals the phrase (case, punctuation and line breaks aside)"
    ),
]
LookAt = Annotated[Monitor, Field(description="read this monitor instead (its frame becomes the latest)")]
# near_x and near_y come together or not at all.
HALF_NEAR = (both(given("near_x"), missing("near_y")), both(given("near_y"), missing("near_x")))


async def _ensure_loaded(cores: Cores, ctx: Context) -> None:
    """Loading an engine can take seconds (EasyOCR: much longer): tell the host what is happening."""
    if not cores.text.is_loaded():
        await ctx.report_progress(0, 1, f"loading the {cores.text.settings.engine} OCR engine")
        await cores.text.warm_up()
        await ctx.report_progress(1, 1, "OCR engine ready")


async def _text_search(
    cores: Cores,
    region: Region | None,
    space: CoordinateSpace,
    frame_id: str | None,
    near_x: float | None = None,
    near_y: float | None = None,
    monitor: int | None = None,
    approximate: bool = False,
) -> TextSearch:
    near = None
    if near_x is not None or near_y is not None:
        if near_x is None or near_y is None:
            raise InvalidInputError("give both near_x and near_y, or neither")
        near = (near_x, near_y)
    view = await cores.screen.caller_space(space, frame_id, monitor)
    return TextSearch(view=view, region=region, near=near, approximate=approximate)


@define_tool(READ_ONLY)
async def ocr(
    cores: Cores,
    ctx: Context,
    region: Area = None,
    space: Space = "screenshot",
    frame_id: FrameId = None,
    monitor: LookAt = None,
    min_confidence: Annotated[
        float, Field(ge=0, le=1, allow_inf_nan=False, description="drop words below this confidence")
    ] = 0.0,
    annotate: Annotated[
        bool, Field(description="also return the screen with every word boxed and numbered by its id")
    ] = False,
) -> Annotated[CallToolResult, OcrResult]:
    """Read all text on a fresh capture of the latest screenshot's area (or a region of it): words and lines with
    ids, boxes in that screenshot's pixels, and confidence. Repeated calls on an unchanged screen are nearly free;
    after a change only changed text blocks are re-read."""
    await _ensure_loaded(cores, ctx)
    text_search = await _text_search(cores, region, space, frame_id, monitor=monitor)
    frame, result = await cores.text.read(text_search)
    if min_confidence > 0:
        result = _filter(result, min_confidence)
    content: list = [TextContent(type="text", text="\n".join(line.text for line in result.lines) or "(no text)")]
    view = text_search.view
    if annotate:  # the numbered image becomes the latest frame: the result is given in its pixels
        marked = draw_marks(frame.image, frame.area, [(word.id, word.box) for word in result.words])
        encoded, info = await cores.screen.make_latest(frame, marked)
        view = await cores.screen.caller_space(space, info.frame_id if space == "screenshot" else None)
        content.insert(0, Image(data=encoded.data, format=encoded.format).to_image_content())
        content.append(TextContent(type="text", text=f"annotated image is frame {info.frame_id}, now the latest"))
    return CallToolResult(content=content, structured_content=view.express(result).model_dump(mode="json"))


@define_tool(READ_ONLY, refused=HALF_NEAR)
async def find_text(
    cores: Cores,
    ctx: Context,
    phrase: Phrase,
    region: Area = None,
    near_x: NearX = None,
    near_y: NearY = None,
    space: Space = "screenshot",
    frame_id: FrameId = None,
    max_results: Annotated[int, Field(ge=1, le=100)] = 10,
    monitor: LookAt = None,
) -> FoundText:
    """Where a phrase is on a fresh capture of the latest screenshot's area: ranked matches, each with its box,
    centre (a click point), start and end in that screenshot's pixels, and `exact` (false: the text seen differs
    from the phrase). Reading stops early at an exact first match that is certain (`complete` false: further
    matches are listed only from the text read). When it is not found the error lists the closest text seen."""
    await _ensure_loaded(cores, ctx)
    text_search = await _text_search(cores, region, space, frame_id, near_x, near_y, monitor)
    found = await cores.text.find(phrase, text_search)
    return text_search.view.express(found.model_copy(update={"matches": found.matches[:max_results]}))


@define_tool(DESTRUCTIVE_INPUT, refused=HALF_NEAR)
async def click_text(
    cores: Cores,
    ctx: Context,
    phrase: Phrase,
    index: Index = 0,
    near_x: NearX = None,
    near_y: NearY = None,
    region: Area = None,
    button: MouseButton = "left",
    count: Count = 1,
    approximate: Approximate = False,
    space: Space = "screenshot",
    frame_id: FrameId = None,
) -> ActionRecord:
    """Click the centre of a phrase found by OCR in the latest screenshot's area (buttons, links, menu items)."""
    await _ensure_loaded(cores, ctx)
    text_search = await _text_search(cores, region, space, frame_id, near_x, near_y, approximate=approximate)
    record = await cores.text.click_text(phrase, text_search, index=index, button=button, count=count)
    return text_search.view.express(record)


@define_tool(DESTRUCTIVE_INPUT, refused=HALF_NEAR)
async def locate_cursor(
    cores: Cores,
    ctx: Context,
    phrase: Phrase,
    position: Annotated[
        Literal["start", "end"], Field(description="put the caret right before (start) or after (end) the phrase")
    ],
    index: Index = 0,
    near_x: NearX = None,
    near_y: NearY = None,
    region: Area = None,
    approximate: Approximate = False,
    space: Space = "screenshot",
    frame_id: FrameId = None,
) -> ActionRecord:
    """Click at the start or end edge of a phrase in editable text, so typing inserts exactly there."""
    await _ensure_loaded(cores, ctx)
    text_search = await _text_search(cores, region, space, frame_id, near_x, near_y, approximate=approximate)
    return text_search.view.express(await cores.text.locate_cursor(phrase, position, text_search, index=index))


@define_tool(
    DESTRUCTIVE_INPUT, bounds=lambda cores: {"replace_with": {"maxLength": cores.settings.input.max_text_length}}
)
async def highlight_text_span(
    cores: Cores,
    ctx: Context,
    start_phrase: Annotated[Described, Field(description="the selection starts at the beginning of this phrase")],
    end_phrase: Annotated[Described, Field(description="the selection ends at the end of this phrase")],
    start_index: Index = 0,
    end_index: Index = 0,
    replace_with: Annotated[
        TypedText | None, Field(description="type this over the selection ('' deletes it); default: only select")
    ] = None,
    region: Area = None,
    approximate: Approximate = False,
    space: Space = "screenshot",
    frame_id: FrameId = None,
) -> SpanSelection:
    """Select text by dragging from the start of one phrase to the end of another (the same phrase twice
    selects just it); optionally replace the selection."""
    await _ensure_loaded(cores, ctx)
    text_search = await _text_search(cores, region, space, frame_id, approximate=approximate)
    selection = await cores.text.highlight_span(
        start_phrase, end_phrase, text_search, start_index, end_index, replace_with
    )
    return text_search.view.express(selection)


DEFINITIONS = (ocr, find_text, click_text, locate_cursor, highlight_text_span)


def _filter(result: OcrResult, min_confidence: float) -> OcrResult:
    """Drop low-confidence words; ids stay those of the full result so they match an annotated image."""
    kept = {word.id: word for word in result.words if word.confidence >= min_confidence}
    lines = []
    for line in result.lines:
        ids = [i for i in line.word_ids if i in kept]
        if ids:
            lines.append(line.model_copy(update={"word_ids": ids, "text": " ".join(kept[i].text for i in ids)}))
    return result.model_copy(update={"words": list(kept.values()), "lines": lines})
