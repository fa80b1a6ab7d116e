"""A live terminal view of a run (rich): step, state, action, reflection; plain lines when not a terminal."""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager

from rich.console import Console
from rich.live import Live
from rich.table import Table

from symphony_mcp.orchestrator.loop import EventSink, RunEvent
from symphony_mcp.orchestrator.records import State
from symphony_mcp.orchestrator.terminal import styled

_STYLES = {State.SUCCESS: "bold green", State.FAIL: "bold red", State.ERROR: "bold red", State.VERIFY: "yellow"}
_ROWS_SHOWN = 12


@contextmanager
def live_view(console: Console) -> Iterator[EventSink]:
    """Yields the event sink to pass to `run_task`; renders while the run goes."""
    events: list[RunEvent] = []

    def table() -> Table:
        view = Table(title=styled(events[0].task_id if events else "starting"), expand=True)
        for column in ("step", "state", "what"):
            view.add_column(column, no_wrap=column != "what")
        for event in events[-_ROWS_SHOWN:]:
            view.add_row(
                styled(f"{event.step}/{event.max_steps}"),
                styled(event.state, _STYLES.get(event.state, "")),
                styled(event.message),
            )
        return view

    if not console.is_terminal:

        def print_line(event: RunEvent) -> None:
            line = f"[{event.task_id}] step {event.step}/{event.max_steps} {event.state}: {event.message}"
            console.print(styled(line), soft_wrap=True)

        yield print_line
        return
    with Live(table(), console=console, refresh_per_second=8, transient=False) as live:

        def update(event: RunEvent) -> None:
            events.append(event)
            live.update(table())

        yield update
