"""Printing to a terminal with rich: every text a model, a task or a page wrote is data, never markup.

A planner's `[/bold]` once crashed `symphony-mcp run` (rich.errors.MarkupError) and a task id `[probe-plain]`
vanished as an unknown tag. So consoles are made here with markup off, and styles come only from `styled`,
which never parses its text: no print site can let data through as markup.
"""

from __future__ import annotations

from typing import IO, Any

from rich.console import Console
from rich.text import Text


def make_console(file: IO[str] | None = None, **options: Any) -> Console:
    """A console that prints strings as they are (no markup, no highlighting, no emoji codes)."""
    return Console(file=file, markup=False, highlight=False, emoji=False, **options)


def styled(text: object, style: str = "") -> Text:
    """`text` shown literally, in `style`."""
    return Text(str(text), style=style)
