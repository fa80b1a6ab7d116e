"""The offline docs index: local HTML documentation in SQLite FTS5, ranked by bm25 over fields, titles first.

Ranking: bm25 over the short fields (title, then the authors' keywords and headings) plus bm25 over the body, each
normalised by its own length, so a long reference page whose title or headings name the topic still ranks.
Neighbouring query words also match as the phrase the query wrote, stop words included ("table of contents",
never "table contents"). A page's site name ("Python 3.11 documentation", a title suffix) is a field of its own,
so "python" in a question favours the Python docs. Pages more than half link text (generated indexes such as
Sphinx's genindex, tables of contents) are demoted.

`symphony-mcp docs index PATH...` builds it (html.parser from the stdlib: the full LibreOffice help, 2,561 pages,
takes a few seconds, so lxml would buy little for a new dependency); `engine = "local"` reads it through the docs
server. The index also records the roots it was built from and the stylesheets, scripts and pictures its pages
reference (LibreOffice help pages point above their root with `<base href="../../../../">`): the docs server
serves those and nothing else.
"""

from __future__ import annotations

import itertools
import json
import os
import re
import sqlite3
import threading
import time
from collections import Counter
from collections.abc import Iterable, Iterator, Sequence
from dataclasses import dataclass, field
from html.parser import HTMLParser
from pathlib import Path
from urllib.parse import unquote, urljoin, urlsplit

from symphony_mcp.errors import InvalidInputError
from symphony_mcp.search.types import SearchUnavailableError

SCHEMA_VERSION = "2"  # 2: site and link share fields, ranking by fields
PAGE_SUFFIXES = (".html", ".htm")
ASSET_SUFFIXES = frozenset(
    {".css", ".js", ".png", ".svg", ".gif", ".jpg", ".jpeg", ".webp", ".ico", ".woff", ".woff2", ".ttf"}
)
MAX_FILE_BYTES = 5_000_000  # a bigger page is skipped (real help pages are a few KB to a few hundred KB)
MAX_FILES = 100_000  # pages indexed at most in one build
MAX_BODY_CHARS = 200_000  # of one page's text kept in the index
MAX_QUERY_TERMS = 16
MAX_LIMIT = 100
SNIPPET_OPEN, SNIPPET_CLOSE = "\x02", "\x03"  # marks around matched words in `IndexHit.snippet`

_SKIPPED_TAGS = frozenset({"script", "style", "nav", "header", "footer", "aside", "noscript", "template", "svg"})
_INLINE_TAGS = frozenset(
    {"a", "span", "b", "i", "em", "strong", "code", "kbd", "samp", "var", "sub", "sup", "small", "abbr", "tt", "u"}
    | {"mark", "q", "cite", "font", "bdi", "bdo", "dfn", "s", "del", "ins", "time", "data"}
)
# Sphinx (the Python docs) marks its sidebars, search boxes and related-page bars with ARIA roles instead
_SKIPPED_ROLES = frozenset({"navigation", "banner", "contentinfo", "search", "complementary"})
_VOID_TAGS = frozenset({"area", "base", "br", "col", "embed", "hr", "img", "input", "link", "meta", "source", "wbr"})
_HEADINGS = frozenset({"h1", "h2", "h3", "h4", "h5", "h6"})
_SPACES = re.compile(r"\s+")
# "csv — CSV File Reading and Writing — Python 3.11.2 documentation": the last part names the site, not the page
_SITE_SUFFIX = re.compile(r"^(?P<page>.+?)\s+[—–|]\s+(?P<site>[^—–|]*\b(?:documentation|docs|help|manual)\s*)$", re.I)
_WORD = re.compile(r"\w+")
# Common English words that say nothing about the topic ("how to freeze rows in Calc" -> freeze rows calc)
_STOP_WORDS = frozenset(
    """a about an and are as at be by can do does for from how i in into is it me my of on or so that the their then
    there these this to use using want way what when where which who why will with you your""".split()  # noqa: SIM905
)


@dataclass(frozen=True)
class IndexReport:
    """What one build did: pages indexed, files skipped (by reason), its time."""

    index: Path
    roots: list[Path]
    pages: int
    skipped: dict[str, int]
    seconds: float
    truncated: bool  # MAX_FILES pages were reached and the rest left out


@dataclass(frozen=True)
class IndexHit:
    title: str
    path: Path
    snippet: str  # matched words between SNIPPET_OPEN and SNIPPET_CLOSE
    score: float  # bm25: lower is better


@dataclass
class _Page:
    title: str = ""
    first_h1: str = ""
    keywords: list[str] = field(default_factory=list)
    headings: list[str] = field(default_factory=list)
    body: list[str] = field(default_factory=list)
    base: str | None = None
    link_chars: int = 0  # of the body's text, inside links
    references: list[str] = field(default_factory=list)  # stylesheets, scripts, pictures (as written)


class _PageParser(HTMLParser):
    """Title, keywords, headings and visible body text of one page; navigation chrome and scripts are left out."""

    def __init__(self) -> None:
        super().__init__(convert_charrefs=True)
        self.page = _Page()
        self._skip: tuple[str, int] | None = None  # inside script/style/nav/...: its tag and nesting depth
        self._in_title = False
        self._heading: list[str] | None = None
        self._heading_tag = ""
        self._links = 0  # depth of <a> elements the text is inside

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        attributes = {name: value or "" for name, value in attrs}
        if tag == "base" and self.page.base is None:
            self.page.base = attributes.get("href")
        elif tag == "meta" and "keywords" in (attributes.get("itemprop"), attributes.get("name")):
            if attributes.get("content"):
                self.page.keywords.append(attributes["content"])
        elif tag == "link" and attributes.get("href"):
            self.page.references.append(attributes["href"])
        elif tag in ("script", "img") and attributes.get("src"):
            self.page.references.append(attributes["src"])
        if self._skip is not None:
            if tag == self._skip[0]:
                self._skip = (tag, self._skip[1] + 1)
        elif tag in _SKIPPED_TAGS or (attributes.get("role") in _SKIPPED_ROLES and tag not in _VOID_TAGS):
            self._skip = (tag, 1)
        elif tag == "title":
            self._in_title = True
        elif tag in _HEADINGS:
            self._heading, self._heading_tag = [], tag
        elif tag == "a":
            self._links += 1
        if tag not in _INLINE_TAGS:
            self.page.body.append("\n")

    def handle_endtag(self, tag: str) -> None:
        if self._skip is not None:
            if tag == self._skip[0]:
                depth = self._skip[1] - 1
                self._skip = (tag, depth) if depth else None
        elif tag == "title":
            self._in_title = False
        elif tag == "a":
            self._links = max(0, self._links - 1)
        elif tag == self._heading_tag and self._heading is not None:
            text = _squash("".join(self._heading)).rstrip("¶")  # Sphinx's anchor sign
            if text:
                self.page.headings.append(text)
                if tag == "h1" and not self.page.first_h1:
                    self.page.first_h1 = text
            self._heading, self._heading_tag = None, ""
        if tag not in _INLINE_TAGS:
            self.page.body.append("\n")

    def handle_data(self, data: str) -> None:
        if self._in_title:
            self.page.title += data
        elif self._skip is None:
            self.page.body.append(data)
            if self._links:
                self.page.link_chars += len(data.strip())
            if self._heading is not None:
                self._heading.append(data)


def _squash(text: str) -> str:
    return _SPACES.sub(" ", text).strip()


def split_title(title: str) -> tuple[str, str]:
    """The page's own title and its site's name ("" when the title names no site)."""
    title = _squash(title)
    match = _SITE_SUFFIX.match(title)
    return (match["page"], match["site"].strip()) if match else (title, "")


def link_share(page: _Page) -> float:
    """The share of the page's text that is link text: near 1 for a generated index, low for prose."""
    characters = sum(len(piece.strip()) for piece in page.body)
    return min(1.0, page.link_chars / characters) if characters else 0.0


def parse_page(html: str) -> _Page:
    parser = _PageParser()
    parser.feed(html)
    parser.close()
    return parser.page


def _is_within(path: Path, root: Path) -> bool:
    return path == root or path.is_relative_to(root)


def _page_files(roots: Sequence[Path], skipped: Counter[str]) -> Iterator[Path]:
    """Every page under the roots (real paths), symlinks out of the roots skipped, each file once."""
    seen: set[Path] = set()
    for root in roots:
        candidates: Iterable[Path]
        if root.is_file():
            candidates = [root]
        else:
            candidates = (
                Path(directory) / name
                for directory, _, names in os.walk(root)
                for name in sorted(names)
                if name.lower().endswith(PAGE_SUFFIXES)
            )
        for candidate in candidates:
            real = Path(os.path.realpath(candidate))
            if not any(_is_within(real, r) for r in roots):
                skipped["symlink out of the roots"] += 1
            elif real not in seen:
                seen.add(real)
                yield real


def _asset_paths(page_path: Path, page: _Page) -> Iterator[Path]:
    """The local files a page's stylesheets, scripts and pictures resolve to (through its base href)."""
    base = urljoin(page_path.as_uri(), page.base or "")
    for reference in page.references:
        target = urlsplit(urljoin(base, reference))
        if target.scheme == "file" and Path(target.path).suffix.lower() in ASSET_SUFFIXES:
            yield Path(unquote(target.path))


def _resolve_roots(paths: Sequence[Path]) -> list[Path]:
    if not paths:
        raise InvalidInputError("give at least one file or directory of HTML documentation to index")
    roots: list[Path] = []
    for path in paths:
        real = Path(os.path.realpath(path))
        if not real.exists():
            raise InvalidInputError(f"{str(path)!r} does not exist; give HTML files or directories holding them")
        if real not in roots:
            roots.append(real)
    return roots


def build_index(
    paths: Sequence[Path], index: Path, *, max_files: int = MAX_FILES, max_file_bytes: int = MAX_FILE_BYTES
) -> IndexReport:
    """Index the HTML pages under `paths` into `index`, replacing it only once the new one is complete.

    The build writes a temporary file beside `index` and renames it over the old one at the end, so a build
    that fails or is killed midway leaves the previous index as it was.
    """
    started = time.monotonic()
    roots = _resolve_roots(paths)
    index = Path(os.path.abspath(index))
    index.parent.mkdir(parents=True, exist_ok=True)
    _remove_abandoned_builds(index)
    temporary = index.with_name(f".{index.name}.{os.getpid()}.building")
    temporary.unlink(missing_ok=True)
    skipped: Counter[str] = Counter()
    pages = 0
    truncated = False
    try:
        db = sqlite3.connect(temporary)
        try:
            db.executescript(
                """
                PRAGMA journal_mode = OFF;
                PRAGMA synchronous = OFF;
                CREATE TABLE meta (key TEXT PRIMARY KEY, value TEXT NOT NULL);
                CREATE TABLE assets (path TEXT PRIMARY KEY);
                -- not in an FTS table: an unindexed FTS5 column is read from the row's stored text, which made
                -- ranking every match 3-10 times slower
                CREATE TABLE pages (
                    id INTEGER PRIMARY KEY, title TEXT NOT NULL, path TEXT NOT NULL, link_share REAL NOT NULL
                );
                -- the short fields and the body apart: FTS5's bm25 normalises by a row's whole length, so in one
                -- table a long body drowned the title's words
                CREATE VIRTUAL TABLE fields USING fts5(
                    title, site, keywords, headings, tokenize = 'porter unicode61 remove_diacritics 2'
                );
                CREATE VIRTUAL TABLE bodies USING fts5(body, tokenize = 'porter unicode61 remove_diacritics 2');
                """
            )
            assets: set[Path] = set()
            for path in _page_files(roots, skipped):
                if pages >= max_files:
                    truncated = True
                    break
                try:
                    if path.stat().st_size > max_file_bytes:
                        skipped["larger than the size bound"] += 1
                        continue
                    html = path.read_bytes().decode("utf-8", errors="replace")
                except OSError:
                    skipped["unreadable"] += 1
                    continue
                page = parse_page(html)
                title, site = split_title(page.title)
                title = title or page.first_h1 or path.stem
                pages += 1
                db.execute(
                    "INSERT INTO pages (id, title, path, link_share) VALUES (?, ?, ?, ?)",
                    (pages, title, str(path), link_share(page)),
                )
                db.execute(
                    "INSERT INTO fields (rowid, title, site, keywords, headings) VALUES (?, ?, ?, ?, ?)",
                    (pages, title, site, "\n".join(page.keywords), "\n".join(page.headings)),
                )
                db.execute(
                    "INSERT INTO bodies (rowid, body) VALUES (?, ?)",
                    (pages, _squash("".join(page.body))[:MAX_BODY_CHARS]),
                )
                assets.update(_asset_paths(path, page))
            db.executemany("INSERT INTO assets (path) VALUES (?)", ((str(a),) for a in sorted(assets) if a.is_file()))
            db.executemany(
                "INSERT INTO meta (key, value) VALUES (?, ?)",
                [
                    ("version", SCHEMA_VERSION),
                    ("roots", json.dumps([str(r) for r in roots])),
                    ("built", str(time.time())),
                ],
            )
            db.execute("INSERT INTO fields (fields) VALUES ('optimize')")
            db.execute("INSERT INTO bodies (bodies) VALUES ('optimize')")
            db.commit()
        finally:
            db.close()
        os.replace(temporary, index)
    finally:
        temporary.unlink(missing_ok=True)
    return IndexReport(index, roots, pages, dict(skipped), time.monotonic() - started, truncated)


def _remove_abandoned_builds(index: Path) -> None:
    """Delete the temporary files of builds whose process is gone (killed midway); a running build's stays."""
    for stale in index.parent.glob(f".{index.name}.*.building"):
        pid = stale.name.removeprefix(f".{index.name}.").removesuffix(".building")
        if pid.isdigit() and not Path(f"/proc/{pid}").exists():
            stale.unlink(missing_ok=True)


def match_expression(query: str) -> str | None:
    """A safe FTS5 expression for free text: every word quoted (never parsed as FTS5 syntax), stop words dropped,
    the rest OR-ed so a page matching some of them still ranks (bm25 puts pages matching more of them first).

    Each pair of neighbouring words is also a phrase, written as the query wrote it, stop words between them
    included: "conditional formatting" outranks a page with many of "conditions" and "Calc" but never the two
    together, and "table of contents" matches that text, not a page saying "table contents".
    """
    words = [word.lower() for word in _WORD.findall(query)][: MAX_QUERY_TERMS * 4]
    content = [n for n, word in enumerate(words) if word not in _STOP_WORDS] or list(range(len(words)))
    if not content:
        return None
    content = content[:MAX_QUERY_TERMS]
    terms = list(dict.fromkeys(words[n] for n in content))
    phrases = list(dict.fromkeys(" ".join(words[first : second + 1]) for first, second in itertools.pairwise(content)))
    return " OR ".join('"' + term.replace('"', '""') + '"' for term in terms + phrases)


# The best pages for a match expression (named :match): bm25 over the short fields (weights of title, site,
# keywords, headings) plus bm25 over the body, each normalised by its own length, so a long reference page whose
# title or headings name the topic still ranks (weights tuned on the "tune" half of
# benchmarks/data/docs_questions.json). bm25 is negative, better lower. A page more than half links (a generated
# index, a table of contents) keeps as little as a fifth of its score; prose with a few links loses nothing.
_BEST_PAGES = """
    SELECT id, sum(score) * (1.0 - 0.8 * max(0.0, link_share - 0.5) / 0.5) AS score
    FROM (
        SELECT rowid AS id, bm25(fields, 10.0, 10.0, 3.0, 1.0) AS score FROM fields WHERE fields MATCH :match
        UNION ALL
        SELECT rowid, 0.5 * bm25(bodies) FROM bodies WHERE bodies MATCH :match
    ) JOIN pages USING (id)
    GROUP BY id ORDER BY score LIMIT :limit
"""


class DocsIndex:
    """A built index, opened read-only; safe to share between threads (the docs server's and the caller's)."""

    def __init__(self, path: Path) -> None:
        self.path = Path(path)
        if not self.path.is_file():
            raise SearchUnavailableError(
                f"no docs index at {self.path}: build one with `symphony-mcp docs index PATH...` "
                "(e.g. /usr/share/libreoffice/help/en-US), or set search.docs_index to an existing one"
            )
        try:
            self._db = sqlite3.connect(f"{self.path.as_uri()}?mode=ro", uri=True, check_same_thread=False)
            meta = dict(self._db.execute("SELECT key, value FROM meta").fetchall())
            if meta["version"] != SCHEMA_VERSION:
                raise ValueError(f"built by another version of symphony-mcp (index format {meta['version']})")
            self.roots = [Path(p) for p in json.loads(meta["roots"])]
            self.assets = frozenset(Path(row[0]) for row in self._db.execute("SELECT path FROM assets"))
        except (sqlite3.Error, KeyError, ValueError) as exc:
            raise SearchUnavailableError(
                f"{self.path} is not a docs index ({exc}); rebuild it with `symphony-mcp docs index PATH...`"
            ) from exc
        self._lock = threading.Lock()

    def search(self, query: str, limit: int = 10) -> list[IndexHit]:
        expression = match_expression(query)
        if expression is None:
            return []
        limit = max(1, min(limit, MAX_LIMIT))
        with self._lock:
            best = self._db.execute(
                f"SELECT id, title, path, score FROM ({_BEST_PAGES}) JOIN pages USING (id) ORDER BY score",
                {"match": expression, "limit": limit},
            ).fetchall()
            # Snippets only for the best pages: over every match they made a query over the Python docs' long
            # pages 15-25 ms instead of 1. A page matched by its title alone gets its body's first words.
            ids = ",".join(str(row[0]) for row in best)
            snippets = dict(
                self._db.execute(
                    f"""SELECT rowid, snippet(bodies, 0, ?, ?, '…', 24) FROM bodies
                        WHERE bodies MATCH ? AND rowid IN ({ids})""",
                    (SNIPPET_OPEN, SNIPPET_CLOSE, expression),
                ).fetchall()
            )
            for id_, *_ in best:
                if id_ not in snippets:
                    (body,) = self._db.execute("SELECT body FROM bodies WHERE rowid = ?", (id_,)).fetchone()
                    snippets[id_] = " ".join(body.split(" ", 24)[:24]) + "…"
        return [IndexHit(title, Path(path), snippets[id_], score) for id_, title, path, score in best]

    def servable(self, path: Path) -> Path | None:
        """The file the docs server may send for the absolute, normalised `path`, or None.

        A page's own stylesheets, scripts and pictures as it references them (LibreOffice links shared ones that are
        symlinks into /usr/share/nodejs); anything else only if its real path, symlinks followed, is under a root.
        """
        if path in self.assets:
            return path
        real = Path(os.path.realpath(path))
        return real if any(_is_within(real, root) for root in self.roots) and real.is_file() else None

    def close(self) -> None:
        with self._lock:
            self._db.close()


def plain_snippet(snippet: str) -> str:
    return snippet.replace(SNIPPET_OPEN, "").replace(SNIPPET_CLOSE, "")
