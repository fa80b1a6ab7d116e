"""The offline docs index: build time over real Debian documentation and query latency.

Builds the index over the full libreoffice-help-en-us (2,561 pages) and, when installed, python3.11-doc's HTML
(/usr/share/doc/python3.11/html), then both together; times the html.parser share of the LibreOffice build (what
a faster parser could save at most); and times ~30 realistic queries through `DocsIndex.search` and through the
docs server's results page over HTTP; measures ranking on the question set benchmarks/data/docs_questions.json
(expected pages chosen by reading the HTML before the ranking was run on them; "tune" questions guided the ranking,
"heldout" ones only measure it) over both corpora together. No display is needed. Run from the repository root:

    python -m benchmarks.accuracy.docs_index
"""

from __future__ import annotations

import argparse
import datetime
import json
import statistics
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path

import httpx

from benchmarks.common import REPO, Stats, elapsed_ms, interpreter, log, machine_facts, publish_report, table
from symphony_mcp.search.docs_index import DocsIndex, IndexReport, build_index, parse_page
from symphony_mcp.search.docs_server import DocsServer

DEFAULT_OUTPUT = REPO / "benchmarks" / "results" / "docs_index.md"
QUESTIONS = REPO / "benchmarks" / "data" / "docs_questions.json"
LIBREOFFICE = Path("/usr/share/libreoffice/help/en-US")
PYTHON = Path("/usr/share/doc/python3.11/html")
QUERIES = (
    "how to freeze rows in Calc",
    "apply autofilter to a column",
    "conditional formatting",
    "insert page numbers in footer",
    "merge cells in a table",
    "sort data by two columns",
    "insert a chart from spreadsheet data",
    "change the page orientation to landscape",
    "add a header to every page",
    "protect a sheet with a password",
    "create a pivot table",
    "VLOOKUP function",
    "remove duplicate rows",
    "wrap text in a cell",
    "set the print range",
    "insert a table of contents",
    "track changes in a document",
    "mail merge with a spreadsheet",
    "change the default font",
    "export as PDF",
    "insert an image and wrap text around it",
    "number format with two decimals",
    "hide a column",
    "split the window",
    "slide transition effects",
    "start the slide show from the first slide",
    "record a macro",
    "read a CSV file with Python",
    "regular expression groups",
    "asyncio run a coroutine with a timeout",
)


CORPORA = {"libreoffice": LIBREOFFICE, "python": PYTHON}


@dataclass(frozen=True)
class Answer:
    split: str
    question: str
    rank: int | None  # of the first expected page among the top 10, from 1
    first: str  # the first hit's title
    ms: float


def answer_questions(index: DocsIndex) -> list[Answer]:
    """Each question of the set asked once (after one warm-up round), with where its expected page ranked."""
    questions = json.loads(QUESTIONS.read_text())["questions"]
    answers = []
    for warm_up in (True, False):
        for item in questions:
            expected = {CORPORA[item["corpus"]] / page for page in item["expected"]}
            start = time.perf_counter()
            hits = index.search(item["question"], 10)
            ms = elapsed_ms(start)
            rank = next((n for n, hit in enumerate(hits, start=1) if hit.path in expected), None)
            if not warm_up:
                answers.append(Answer(item["split"], item["question"], rank, hits[0].title if hits else "", ms))
    return answers


def ranking_summary(answers: list[Answer]) -> list[list[str]]:
    rows = []
    for split in ("tune", "heldout"):
        mine = [a for a in answers if a.split == split]
        first = sum(a.rank == 1 for a in mine)
        top3 = sum(a.rank is not None and a.rank <= 3 for a in mine)
        median = statistics.median(a.ms for a in mine)
        rows.append(
            [
                split,
                str(len(mine)),
                f"{first} ({100 * first / len(mine):.0f}%)",
                f"{top3} ({100 * top3 / len(mine):.0f}%)",
                f"{median:.2f}",
            ]
        )
    return rows


def build(paths: list[Path], index: Path) -> IndexReport:
    log(f"indexing {', '.join(map(str, paths))}")
    return build_index(paths, index)


def parse_seconds(root: Path) -> float:
    pages = [path.read_text(errors="replace") for path in sorted(root.rglob("*.html"))]
    start = time.perf_counter()
    for page in pages:
        parse_page(page)
    return time.perf_counter() - start


def query_stats(index: DocsIndex, repeats: int) -> Stats:
    samples = []
    for n in range(repeats + 1):
        for query in QUERIES:
            start = time.perf_counter()
            index.search(query, 10)
            if n:  # the first round warms the page cache
                samples.append(elapsed_ms(start))
    return Stats(tuple(samples))


def page_stats(server: DocsServer, repeats: int) -> Stats:
    samples = []
    with httpx.Client(timeout=10) as client:
        for n in range(repeats + 1):
            for query in QUERIES:
                start = time.perf_counter()
                client.get(server.results_url(query)).raise_for_status()
                if n:
                    samples.append(elapsed_ms(start))
    return Stats(tuple(samples))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--output", type=Path, default=DEFAULT_OUTPUT)
    parser.add_argument("--repeats", type=int, default=10, help="rounds of the queries (default 10)")
    args = parser.parse_args()
    directory = Path(tempfile.mkdtemp(prefix="docs-bench-"))
    corpora = [[LIBREOFFICE]] + ([[PYTHON], [LIBREOFFICE, PYTHON]] if PYTHON.is_dir() else [])
    builds = [build(paths, directory / f"{n}.sqlite") for n, paths in enumerate(corpora)]
    parsing = parse_seconds(LIBREOFFICE)
    build_rows = [
        [
            " + ".join(map(str, report.roots)),
            str(report.pages),
            str(sum(report.skipped.values())),
            f"{report.seconds:.2f}",
            f"{report.index.stat().st_size / 1e6:.1f}",
        ]
        for report in builds
    ]
    ranking: list[str] = []
    if len(builds) == 3:
        index = DocsIndex(builds[2].index)
        answers = answer_questions(index)
        index.close()
        ranking = [
            f"## Ranking: the question set over both corpora ({builds[2].pages} pages)",
            "",
            "Target on the held-out part: >= 90% with the expected page in the top 3, >= 70% first, median <= 20 ms.",
            "",
            *table(
                ["split", "questions", "expected page first", "in the top 3", "median ms"], ranking_summary(answers)
            ),
            "",
            *table(
                ["split", "question", "rank of the expected page", "first hit"],
                [[a.split, a.question, str(a.rank or "> 10"), a.first] for a in answers],
            ),
            "",
        ]
    query_rows = []
    for report in builds:
        index = DocsIndex(report.index)
        log(f"querying {report.index.name}")
        queries = query_stats(index, args.repeats)
        server = DocsServer(index)
        pages = page_stats(server, args.repeats)
        server.close()
        index.close()
        for what, stats in (("DocsIndex.search", queries), ("results page over HTTP", pages)):
            query_rows.append(
                [f"{report.pages} pages", what, f"{stats.median:.2f}", f"{stats.p90:.2f}", f"{stats.p99:.2f}"]
            )
    command = f"{interpreter()} -m benchmarks.accuracy.docs_index"
    lines = [
        "# Offline docs index: build time and query latency",
        "",
        f"- Date: {datetime.datetime.now(datetime.UTC):%Y-%m-%d %H:%M} UTC",
        *machine_facts(),
        f"- Command: `{command}`",
        f"- Queries: {len(QUERIES)} realistic ones (see QUERIES), {args.repeats} rounds after one warm-up round, "
        "10 hits each",
        "",
        "## Build",
        "",
        *table(["corpus", "pages", "skipped", "seconds", "index MB"], build_rows),
        "",
        f"html.parser alone takes {parsing:.2f} s of the LibreOffice build (every page parsed once, files already "
        "read): the most a faster parser such as lxml could save.",
        "",
        "## Query latency (target: median <= 20 ms over a few thousand pages)",
        "",
        *table(["index", "path", "median ms", "p90 ms", "p99 ms"], query_rows),
        "",
        *ranking,
    ]
    publish_report("\n".join(lines), args.output)


if __name__ == "__main__":
    main()
