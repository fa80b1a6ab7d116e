"""MCP tools that look things up: `search_tutorial` hands a question to the searcher (a browsing agent in an
isolated Chromium, symphony_mcp/search) and returns a tutorial with pictures; `search_docs` queries the
configured engine or offline docs index without a model. Search transcripts are resources."""

from __future__ import annotations

import base64
from pathlib import Path
from typing import Annotated

from mcp.types import CallToolResult, ImageContent, TextContent, ToolAnnotations
from pydantic import BaseModel, Field

from symphony_mcp.limits import MAX_QUERY
from symphony_mcp.search.result_schemas import TutorialResult
from symphony_mcp.search.types import DocHit
from symphony_mcp.tools.cores import Cores
from symphony_mcp.tools.definition import define_resource, define_tool
from symphony_mcp.tools.progress import report_step

# Both read the web (or the local docs) and change nothing on the desktop; a search writes only its transcript.
SEARCHES_THE_WEB = ToolAnnotations(readOnlyHint=True, destructiveHint=False, idempotentHint=False, openWorldHint=True)
QUERIES_THE_WEB = ToolAnnotations(readOnlyHint=True, destructiveHint=False, idempotentHint=True, openWorldHint=True)
MAX_SEARCH_BUDGET = 50
MAX_DOC_RESULTS = 50
Query = Annotated[str, Field(min_length=1, max_length=MAX_QUERY, description="what to look up, in plain words")]


class DocResults(BaseModel):
    query: str
    engine: str = Field(description="the backend that answered: duckduckgo, searxng or local")
    results: list[DocHit]


@define_tool(SEARCHES_THE_WEB)
async def search_tutorial(
    cores: Cores,
    query: Query,
    budget: Annotated[
        int | None,
        Field(ge=2, le=MAX_SEARCH_BUDGET, description="browsing steps (the last only concludes); default 20"),
    ] = None,
) -> Annotated[CallToolResult, TutorialResult]:
    """Find a how-to for a task in the application on screen: a browsing agent searches the web (or the
    offline docs) in an isolated browser, guided by the current screenshot, and returns numbered steps in
    Markdown with the key pictures, source URLs and how it ended (DONE, FAIL with a hint, BUDGET_EXHAUSTED,
    ERROR). Takes a minute or more; progress is reported per step."""

    result = await cores.searcher.search(query, budget, report_step)
    content: list[TextContent | ImageContent] = [TextContent(type="text", text=result.folded())]
    for image in result.images:
        content.append(_image_content(image.file, image.mime_type))
        content.append(TextContent(type="text", text=f"Picture: {image.caption} (from {image.source_url})"))
    return CallToolResult(content=content, structured_content=result.model_dump(mode="json"))


@define_tool(QUERIES_THE_WEB)
async def search_docs(
    cores: Cores,
    query: Query,
    limit: Annotated[int, Field(ge=1, le=MAX_DOC_RESULTS, description="results at most")] = 5,
) -> DocResults:
    """Search the configured engine (DuckDuckGo, SearXNG) or the offline docs index, without a model:
    title, URL and snippet per result, best first."""
    results = await cores.searcher.search_docs(query, limit)
    return DocResults(query=query, engine=cores.searcher.backend.name, results=results[:limit])


@define_resource(
    "trajectory://{task_id}/search/{run}",
    name="search-transcript",
    description="A search_tutorial run's browsing transcript (JSON): every page, answer, action and the result",
    mime_type="application/json",
)
async def search_transcript(cores: Cores, task_id: str, run: str) -> str:
    return cores.searcher.transcript(task_id, run).read_text(encoding="utf-8")


def _image_content(file: str, mime_type: str) -> ImageContent:
    data = base64.b64encode(Path(file).read_bytes()).decode("ascii")
    return ImageContent(type="image", data=data, mimeType=mime_type)


DEFINITIONS = (
    search_tutorial,
    search_docs,
    search_transcript,
)
