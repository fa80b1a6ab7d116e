"""The contracts inside tutorial search: what a search backend answers, what the browser shows the agent.

The backends (`backends.py`: DuckDuckGo, SearXNG, a URL template, the offline docs index) and the browser
(`browser.py`: an isolated Chromium page) are separate parts; the searcher loop (`agent.py`) sees only these
types, so each part is tested on its own and can be replaced.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Literal, Protocol

from PIL import Image
from pydantic import BaseModel, Field

from symphony_mcp.elements.types import NumberedElement
from symphony_mcp.errors import InvalidInputError, SymphonyError

ScrollDirection = Literal["up", "down"]
SCROLL_STEP_PX = 100  # one unit of scroll(amount): CSS pixels


class DocHit(BaseModel):
    """One search result; the same shape for every backend (SearXNG's fields), so they are interchangeable."""

    title: str
    url: str
    snippet: str = Field(description="text around the query's words, from the result page or the engine")
    engine: str = Field(description="which backend found it: duckduckgo, searxng or local")


class SearchBackend(Protocol):
    """Where a search starts (a results page to browse) and a model-free query (search_docs)."""

    name: str

    async def results_page(self, query: str) -> str:
        """The URL of a results page for `query` (the local backend starts its docs server on first use)."""
        ...

    async def search(self, query: str, limit: int) -> list[DocHit]:
        """Results read from the engine itself; raises SearchUnavailableError when it cannot answer."""
        ...

    def trusted_hosts(self) -> list[str]:
        """host:port of the engine and docs server, reachable even on loopback or private addresses."""
        ...

    async def aclose(self) -> None: ...


class SearchUnavailableError(SymphonyError):
    """The search engine or docs index cannot answer (unreachable, refused, missing index); says which and why."""


class UrlRefusedError(InvalidInputError):
    """A URL the policy does not let the browser open (scheme, address, allow/deny patterns); says why."""


@dataclass(frozen=True)
class Refusal:
    """A request or connection the URL policy refused: what (a URL, or host:port for a connection) and why."""

    url: str
    reason: str


class HostUnresolvedError(UrlRefusedError):
    """A host name that does not resolve (or not in time): refused, as no address could be checked, but a
    network failure rather than the policy's verdict."""


class BrowserError(SymphonyError):
    """The browser cannot go on: it did not start, or the page crashed again after being reopened once."""


class PageElement(NumberedElement):
    """An interactive element of the visible page, numbered for this view (its mark on the screenshot): its role is
    the tag or ARIA role (link, button, textbox, checkbox, select, ...), its name what it says (text, label,
    placeholder or value, capped), its box in screenshot pixels (CSS pixels of the viewport)."""

    href: str | None = None


@dataclass
class PageView:
    """What the agent sees of the page at one step. The image carries no marks; `marked` draws them."""

    url: str
    title: str
    image: Image.Image
    elements: list[PageElement]
    text: str  # the viewport's visible text, capped: page content, data for the model, never instructions
    scroll_top: int
    scroll_height: int
    load_error: str | None = None  # e.g. "net::ERR_CONNECTION_REFUSED" when the last navigation failed
    notices: list[str] = field(default_factory=list)  # e.g. "the page crashed and was reopened at ..."
    refused: list[Refusal] = field(default_factory=list)  # refused since the last view, first of each URL

    def element(self, element_id: int) -> PageElement | None:
        return next((e for e in self.elements if e.id == element_id), None)


class Browser(Protocol):
    """One isolated browsing session: a fresh context, one current page, every URL checked by the policy."""

    async def open(self, url: str) -> None:
        """Navigate to `url`; UrlRefusedError when the policy forbids it (nothing is loaded then)."""
        ...

    async def view(self) -> PageView: ...

    async def click(self, element: PageElement) -> None: ...

    async def type(self, element: PageElement, text: str, enter: bool) -> None: ...

    async def scroll(self, direction: ScrollDirection, amount: int) -> None:
        """Scroll the page by `amount` × SCROLL_STEP_PX."""
        ...

    async def go_back(self) -> None: ...

    async def close(self) -> None: ...
