"""The offline docs index over real Debian documentation (libreoffice-help-en-us, installed by install.sh --dev)."""

from __future__ import annotations

import http.client
import os
import re
import signal
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from urllib.parse import urljoin

import httpx
import pytest

from symphony_mcp.errors import InvalidInputError
from symphony_mcp.search.docs_index import DocsIndex, build_index, match_expression, parse_page, plain_snippet
from symphony_mcp.search.docs_server import DocsServer
from symphony_mcp.search.types import SearchUnavailableError
from testkit.server_process import base_env
from testkit.waiting import wait_for

HELP = Path("/usr/share/libreoffice/help/en-US")
TEXT = HELP / "text"


@pytest.fixture(scope="module")
def help_index(tmp_path_factory: pytest.TempPathFactory) -> Path:
    if not (TEXT / "scalc/guide/line_fix.html").is_file():
        pytest.fail("libreoffice-help-en-us is not installed; scripts/install.sh --dev installs it")
    index = tmp_path_factory.mktemp("docs") / "docs.sqlite"
    report = build_index([HELP], index)
    assert report.pages == 2561 and report.skipped == {} and not report.truncated
    return index


@pytest.fixture(scope="module")
def docs(help_index: Path) -> DocsIndex:
    return DocsIndex(help_index)


@pytest.mark.parametrize(
    ("query", "pages"),
    [
        ("how to apply autofilter to data in calc", ["scalc/guide/autofilter.html"]),  # "Applying AutoFilter"
        ("insert page numbers in footer", ["swriter/guide/footer_pagenumber.html"]),  # "... Page Numbers in Footers"
        ("page numbers in Writer", ["swriter/guide/pagenumbers.html"]),  # "Page Numbers"
        # the how-to guide and the reference page of the command it uses, both answers, within 5% of each other
        ("how to freeze rows in Calc", ["scalc/01/07090000.html", "scalc/guide/line_fix.html"]),
        ("conditional formatting in calc", ["scalc/01/05120000.html", "scalc/guide/cellstyle_conditional.html"]),
    ],
)
def test_known_queries_find_the_right_pages_first(docs: DocsIndex, query: str, pages: list[str]) -> None:
    hits = docs.search(query, 5)
    assert sorted(hit.path for hit in hits[: len(pages)]) == sorted(TEXT / page for page in pages), [
        (h.title, str(h.path)) for h in hits
    ]


def test_hit_has_title_and_a_snippet_around_the_words(docs: DocsIndex) -> None:
    hit = next(hit for hit in docs.search("how to freeze rows in Calc", 2) if hit.path.name == "line_fix.html")
    assert hit.title == "Freezing Rows or Columns as Headers"
    assert "\x02rows\x03" in hit.snippet.lower()
    assert "long rows or columns of data" in plain_snippet(hit.snippet)


def test_page_text_leaves_the_help_chrome_out() -> None:
    page = parse_page((TEXT / "scalc/guide/line_fix.html").read_text())
    assert page.title == "Freezing Rows or Columns as Headers" and page.base == "../../../../"
    assert "freezing rows or columns" in page.keywords and "rows, freezing" in page.keywords
    body = " ".join("".join(page.body).split())
    assert "Select the row below, or the column to the right" in body
    assert "View - Freeze Rows and Columns" in body  # inline spans kept inside their sentence
    for chrome in ("LibreOffice 7.4 Help", "Search in chosen module", "Contents", "Help content debug info"):
        assert chrome not in body
    assert {"default.css", "help.js", "media/icon-themes/res/helpimg/note.svg"} <= set(page.references)


@pytest.mark.parametrize(
    "query",
    ["AND", "rows AND", '"freeze', 'freeze" OR "', "*", "rows*", "NEAR(rows", "-rows", "col:rows", "^rows", "{x}"],
)
def test_fts_syntax_in_a_query_is_only_text(docs: DocsIndex, query: str) -> None:
    expression = match_expression(query)
    assert expression is None or all(part.startswith('"') and part.endswith('"') for part in expression.split(" OR "))
    docs.search(query, 5)  # answers (maybe nothing) instead of an FTS5 syntax error


def test_a_query_of_nothing_but_punctuation_finds_nothing(docs: DocsIndex) -> None:
    assert docs.search('"*^-()', 5) == []


def test_sphinx_sidebars_are_left_out_by_their_aria_roles() -> None:
    page = parse_page(Path("/usr/share/doc/python3.11/html/library/csv.html").read_text())  # python3-doc
    body = " ".join("".join(page.body).split())
    assert "The so-called CSV (Comma Separated Values) format" in body
    for chrome in ("Previous topic", "Quick search", "This Page", "Navigation"):
        assert chrome not in body
    assert page.headings[:2] == ["csv — CSV File Reading and Writing", "Module Contents"]
    # a void element with such a role (it has no end) does not hide the rest of the page
    assert "".join(parse_page('<p>a <input role="search"> b</p>').body).split() == ["a", "b"]


# Ranking facts of issue 26 on a small index of real pages (the full measure: benchmarks/accuracy/docs_index.py)

PYTHON_DOCS = Path("/usr/share/doc/python3.11/html")  # python3-doc


@pytest.fixture(scope="module")
def mixed_docs(tmp_path_factory: pytest.TempPathFactory) -> Iterator[DocsIndex]:
    """Writer's guides (with "Deleting Tables or the Contents of a Table", keywords "table contents") and a few more
    LibreOffice and Python pages on the same topics, Sphinx's generated index pages among them (140 pages)."""
    pages = [TEXT / "swriter/guide"]
    pages += [TEXT / page for page in ("scalc/guide/csv_files.html", "shared/guide/csv_params.html")]
    pages += [TEXT / "shared/01/02100001.html"]  # List of Regular Expressions
    pages += [PYTHON_DOCS / page for page in ("library/csv.html", "library/urllib.request.html", "howto/urllib2.html")]
    pages += [PYTHON_DOCS / page for page in ("library/http.client.html", "library/re.html", "contents.html")]
    pages += [PYTHON_DOCS / f"genindex-{part}.html" for part in ("C", "U", "R", "all")]
    index = tmp_path_factory.mktemp("mixed") / "docs.sqlite"
    build_index(pages, index)
    opened = DocsIndex(index)
    yield opened
    opened.close()


def test_phrases_keep_the_stop_words_the_question_wrote(mixed_docs: DocsIndex) -> None:
    assert match_expression("insert a table of contents").endswith('"table of contents"')
    hits = mixed_docs.search("how do I insert a table of contents", 3)
    assert hits[0].title == "Creating a Table of Contents", [h.title for h in hits]


def test_generated_index_pages_stay_out_of_the_top_three(mixed_docs: DocsIndex) -> None:
    for query in ("urllib", "csv", "read a csv file", "http client", "regular expression"):
        top = [hit.path.name for hit in mixed_docs.search(query, 3)]
        assert not [name for name in top if name.startswith("genindex") or name == "contents.html"], (query, top)


def test_the_site_name_is_a_field_so_python_favours_the_python_docs(mixed_docs: DocsIndex) -> None:
    assert parse_page((PYTHON_DOCS / "library/csv.html").read_text()).title.endswith("Python 3.11.2 documentation")
    assert mixed_docs.search("regular expressions", 1)[0].title == "Using Regular Expressions in Text Searches"
    hit = mixed_docs.search("python regular expressions", 1)[0]
    assert hit.title == "re — Regular expression operations"  # the site's name is out of the title


def test_a_long_reference_page_named_by_its_title_ranks_first(mixed_docs: DocsIndex) -> None:
    # urllib.request's page is 52,000 characters of text, the HOWTO 21,000 (in the full index its rank went 3 -> 1)
    hits = mixed_docs.search("python open a URL and read the response", 3)
    assert hits[0].path == PYTHON_DOCS / "library/urllib.request.html", [h.title for h in hits]


def test_an_index_of_an_older_format_asks_for_a_rebuild(tmp_path: Path) -> None:
    import sqlite3

    old = tmp_path / "old.sqlite"
    with sqlite3.connect(old) as db:
        db.execute("CREATE TABLE meta (key TEXT PRIMARY KEY, value TEXT NOT NULL)")
        db.executemany("INSERT INTO meta VALUES (?, ?)", [("version", "1"), ("roots", "[]")])
    db.close()
    with pytest.raises(SearchUnavailableError, match=r"index format 1.*rebuild it with `symphony-mcp docs index"):
        DocsIndex(old)


def test_missing_or_foreign_index_says_how_to_build_one(tmp_path: Path) -> None:
    with pytest.raises(SearchUnavailableError, match=r"symphony-mcp docs index PATH"):
        DocsIndex(tmp_path / "none.sqlite")
    (tmp_path / "other.sqlite").write_text("not a database")
    with pytest.raises(SearchUnavailableError, match=r"not a docs index"):
        DocsIndex(tmp_path / "other.sqlite")
    with pytest.raises(InvalidInputError, match="does not exist"):
        build_index([tmp_path / "nowhere"], tmp_path / "x.sqlite")


def test_skips_oversized_unreadable_and_symlinked_out_pages(tmp_path: Path) -> None:
    root, outside = tmp_path / "root", tmp_path / "outside"
    root.mkdir(), outside.mkdir()
    (root / "good.html").write_text("<title>Good page</title><p>pelican</p>")
    (root / "big.html").write_text("<title>Big</title><p>" + "pelican " * 1000 + "</p>")
    (root / "gone.html").symlink_to(root / "missing.html")  # inside the root, but nothing to read
    (outside / "secret.html").write_text("<title>Secret</title><p>pelican</p>")
    (root / "leak.html").symlink_to(outside / "secret.html")
    report = build_index([root], tmp_path / "ix.sqlite", max_file_bytes=1000)
    assert report.pages == 1
    assert report.skipped == {"larger than the size bound": 1, "unreadable": 1, "symlink out of the roots": 1}
    index = DocsIndex(tmp_path / "ix.sqlite")
    assert [hit.title for hit in index.search("pelican", 10)] == ["Good page"]
    index.close()


def run_cli(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "symphony_mcp", "docs", *args],
        env=base_env(),
        capture_output=True,
        text=True,
        timeout=60,
    )


def test_cli_indexes_and_searches(tmp_path: Path) -> None:
    index = tmp_path / "calc.sqlite"
    built = run_cli("index", str(TEXT / "scalc/guide"), "--index", str(index))
    assert built.returncode == 0, built.stderr
    assert built.stdout.startswith("indexed ") and " pages in " in built.stdout and "skipped: none" in built.stdout
    found = run_cli("search", "how to freeze rows in Calc", "--limit", "2", "--index", str(index))
    assert found.returncode == 0, found.stderr
    lines = found.stdout.splitlines()
    assert lines[0] == "1. Freezing Rows or Columns as Headers"
    assert lines[1].strip() == str(TEXT / "scalc/guide/line_fix.html")
    assert "long rows or columns of data" in lines[2] and lines[3].startswith("2. ")
    missing = run_cli("search", "rows", "--index", str(tmp_path / "none.sqlite"))
    assert missing.returncode == 3 and "symphony-mcp docs index PATH" in missing.stderr


def test_a_killed_build_leaves_the_previous_index(tmp_path: Path) -> None:
    index = tmp_path / "docs.sqlite"
    assert run_cli("index", str(TEXT / "scalc/guide/line_fix.html"), "--index", str(index)).returncode == 0
    before = index.read_bytes()
    build = subprocess.Popen(
        [sys.executable, "-m", "symphony_mcp", "docs", "index", str(HELP), "--index", str(index)], env=base_env()
    )
    try:
        wait_for(lambda: any(path.name.endswith(".building") for path in tmp_path.iterdir()), timeout=30, interval=0.01)
        os.kill(build.pid, signal.SIGKILL)
    finally:
        build.wait(30)
    assert build.returncode == -signal.SIGKILL  # killed midway, not finished
    assert index.read_bytes() == before
    survivor = DocsIndex(index)
    assert [hit.title for hit in survivor.search("freeze rows", 5)] == ["Freezing Rows or Columns as Headers"]
    survivor.close()
    assert [path.name for path in tmp_path.iterdir() if path.name.endswith(".building")]  # the killed build's
    assert run_cli("index", str(TEXT / "scalc/guide/autofilter.html"), "--index", str(index)).returncode == 0
    assert sorted(path.name for path in tmp_path.iterdir()) == ["docs.sqlite"]  # the next build removed it


# The docs server: results pages and documents over real HTTP


@pytest.fixture(scope="module")
def server(docs: DocsIndex) -> Iterator[DocsServer]:
    running = DocsServer(docs)
    yield running
    running.close()


def raw_get(server: DocsServer, target: str) -> int:
    """GET `target` exactly as written (httpx would normalise ../ away before sending)."""
    connection = http.client.HTTPConnection(server.host, timeout=10)
    try:
        connection.request("GET", target)
        return connection.getresponse().status
    finally:
        connection.close()


def test_results_page_links_to_served_pages(server: DocsServer) -> None:
    page = httpx.get(server.results_url("how to freeze rows in Calc"), timeout=10)
    assert page.status_code == 200 and page.headers["content-type"].startswith("text/html")
    assert '<form action="/search"' in page.text and 'value="how to freeze rows in Calc"' in page.text
    links = re.findall(r'<a class="result-title" href="([^"]+)">([^<]+)</a>', page.text)
    assert (server.file_url(TEXT / "scalc/guide/line_fix.html"), "Freezing Rows or Columns as Headers") in links[:2]
    assert all(url.startswith(server.base_url + "/files/") for url, _ in links) and "file://" not in page.text
    assert "<b>" in page.text  # matched words in bold
    empty = httpx.get(server.results_url("zzqqxx"), timeout=10)
    assert empty.status_code == 200 and "No results for <b>zzqqxx</b>" in empty.text


def test_a_query_is_escaped_in_the_results_page(server: DocsServer) -> None:
    page = httpx.get(server.results_url('<script>alert(1)</script> "rows'), timeout=10)
    assert page.status_code == 200 and "<script>alert" not in page.text and "&lt;script&gt;" in page.text


def test_a_served_page_finds_its_stylesheet_through_its_base_href(server: DocsServer) -> None:
    url = server.file_url(TEXT / "scalc/guide/line_fix.html")
    page = httpx.get(url, timeout=10)
    assert page.status_code == 200 and "<title>Freezing Rows or Columns as Headers</title>" in page.text
    base = re.search(r'<base href="([^"]+)">', page.text)
    stylesheet = re.search(r'<link type="text/css" href="(default\.css)"', page.text)
    assert base and stylesheet
    css = httpx.get(urljoin(urljoin(url, base.group(1)), stylesheet.group(1)), timeout=10)
    assert css.status_code == 200 and css.headers["content-type"].startswith("text/css") and "{" in css.text
    icon = httpx.get(urljoin(urljoin(url, base.group(1)), "media/icon-themes/res/helpimg/note.svg"), timeout=10)
    assert icon.status_code == 200 and icon.headers["content-type"] == "image/svg+xml"
    assert url in [hit.url for hit in server.hits("freeze rows", 2)]


@pytest.mark.parametrize(
    "target",
    [
        "/files/etc/passwd",
        f"/files{HELP}/../../../../../etc/passwd",
        f"/files{HELP}/%2e%2e/%2e%2e/%2e%2e/%2e%2e/%2e%2e/etc/passwd",
        f"/files{HELP}/text/",  # no directory listings
        f"/files{HELP}/text",
        f"/files{HELP}/text/scalc/guide/line_fix.html%00",
        "/files/usr/share/libreoffice/help/../../../../etc/passwd",
        "/etc/passwd",
        "/files",
    ],
)
def test_nothing_outside_the_index_is_served(server: DocsServer, target: str) -> None:
    assert raw_get(server, target) == 404


def test_a_symlink_out_of_the_root_is_not_served(tmp_path: Path) -> None:
    root = tmp_path / "root"
    root.mkdir()
    (root / "page.html").write_text("<title>Page</title><p>heron</p>")
    (tmp_path / "secret.txt").write_text("secret")
    (root / "secret.txt").symlink_to(tmp_path / "secret.txt")
    (root / "inside.txt").write_text("inside")
    build_index([root], tmp_path / "ix.sqlite")
    index = DocsIndex(tmp_path / "ix.sqlite")
    running = DocsServer(index)
    try:
        assert httpx.get(running.file_url(root / "inside.txt"), timeout=10).text == "inside"
        assert httpx.get(running.file_url(root / "secret.txt"), timeout=10).status_code == 404
        assert httpx.get(running.file_url(tmp_path / "secret.txt"), timeout=10).status_code == 404
    finally:
        running.close()
        index.close()
