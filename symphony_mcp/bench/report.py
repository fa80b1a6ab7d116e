"""The HTML page of a benchmark's results folder: success per domain, every task with a link to its
trajectory report, and the skipped tasks with their reasons.

It sits above the orchestrator's report and reuses it: each domain folder gets the ordinary report
(`<domain>/report/`, one page per task), and this page (`<benchmark>/report/index.html`) links into them.
The same autoescaped templates and base page: all run text is untrusted.
"""

from __future__ import annotations

import os
from collections.abc import Iterator
from pathlib import Path
from urllib.parse import quote

from symphony_mcp.bench.summary import SUMMARY_FILE, TaskRow, read_summary
from symphony_mcp.orchestrator.report import (
    INDEX_FILE,
    REPORT_DIR,
    Verdict,
    now_text,
    template_environment,
    write_report_pages,
)

TEMPLATES = Path(__file__).parent / "templates"


def is_benchmark_folder(directory: Path) -> bool:
    return (directory / SUMMARY_FILE).is_file()


def benchmark_folders(directory: Path) -> Iterator[Path]:
    """`directory` itself when it is a benchmark's folder, else the benchmark folders right inside it."""
    if is_benchmark_folder(directory):
        yield directory
    elif directory.is_dir():
        yield from (d for d in sorted(directory.iterdir()) if is_benchmark_folder(d))


def write_bench_report(directory: Path) -> Path:
    """Write the domains' reports and the benchmark's page; return the page."""
    directory = directory.absolute()
    summary = read_summary(directory)
    output = directory / REPORT_DIR
    output.mkdir(parents=True, exist_ok=True)
    links: dict[tuple[str, str], str] = {}
    for domain in sorted({task.domain for task in summary.tasks}):
        if (directory / domain).is_dir():
            verdicts = {row.task_id: verdict(row) for row in summary.tasks if row.domain == domain}
            written = write_report_pages(directory / domain, verdicts=verdicts)
            for name, page in written.pages.items():
                links[(domain, name)] = quote(Path(os.path.relpath(page, output)).as_posix())
    html = (
        template_environment(TEMPLATES)
        .get_template("bench.html")
        .render(summary=summary, links=links, results_dir=str(directory), generated=now_text())
    )
    index = output / INDEX_FILE
    index.write_text(html, encoding="utf-8")
    return index


def verdict(row: TaskRow) -> Verdict:
    """The benchmark's verdict in the report's words: its score decides what a task page shows, whatever the agent
    said (a done() that scored 0 is a fail, with the benchmark's reason)."""
    scored = f"benchmark score {row.score:g}"
    if row.failure is not None:
        outcome = "error" if row.failure.endswith("_error") else "fail"
        return Verdict(outcome, f"{scored} ({row.failure})" + (f": {row.message}" if row.message else ""))
    return Verdict("success" if row.score >= 1 else "partial", scored)
