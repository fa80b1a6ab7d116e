"""Terminal screens: xterms that show files and real `man` pages, with ground truth from the character grid.

Each xterm cats a FIFO we write to, so we know every character it shows and can rewrite rows. Lines longer
than the terminal are cut (like `less -S`); words the cut goes through are not clear. Man pages are rendered
by man-db and groff for the terminal's width and shown the way `less` shows them: groff's overstrikes
become bold and underline.
"""

from __future__ import annotations

import contextlib
import os
import random
import re
import shlex
import subprocess
import tempfile
import textwrap
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path

from benchmarks.ocr_grounding.bands import mixed_label
from benchmarks.ocr_grounding.truth import Reading, Segment, Source, rotate_words, segment_from_line
from benchmarks.ocr_grounding.web import DOCS
from benchmarks.ocr_grounding.windows import client_window, stop
from symphony_mcp.imaging.geometry import Rect

BORDER = 4
FRAME = (2, 25)  # openbox decorations: width and height added to a client window
OVERSTRIKE = re.compile(r"(.)\x08(.)")


@dataclass(frozen=True)
class Content:
    """What one xterm shows: a title, colours, a font, and its lines for a terminal `columns` wide.

    `lines` returns (plain text, text as written with escape sequences) per row.
    """

    title: str
    background: str
    foreground: str
    font: str  # fontconfig pattern, e.g. "DejaVu Sans Mono:pixelsize=15", or an X core font name when bitmap
    lines: Callable[[int, int], list[tuple[str, str]]]  # (columns, rows) -> rows
    bitmap: bool = False  # an X core (bitmap) font such as xterm's default "fixed", from xfonts-base

    @property
    def font_args(self) -> list[str]:
        return ["-fn", self.font] if self.bitmap else ["-fa", self.font]


@dataclass
class Xterm:
    title: str
    process: subprocess.Popen[bytes]
    fifo: int
    origin: tuple[int, int] = (0, 0)
    cell: tuple[int, int] = (0, 0)
    columns: int = 0
    lines: list[str] = field(default_factory=list)

    def show(self, rows: list[tuple[str, str]]) -> None:
        self.lines = [plain[: self.columns] for plain, _ in rows]
        shown = [styled if len(plain) <= self.columns else plain[: self.columns] for plain, styled in rows]
        self.write("\x1b[?25l\x1b[H\x1b[2J" + "\r\n".join(shown))

    def rewrite(self, row: int, text: str) -> Rect:
        old = self.lines[row]
        self.lines[row] = text[: self.columns]
        self.write(f"\x1b[{row + 1};1H\x1b[2K{text[: self.columns]}")
        (x0, y0), (width, height) = self.origin, self.cell
        chars = min(max(len(old), len(text)), self.columns)
        return Rect(left=x0, top=y0 + row * height, width=chars * width, height=height)

    def write(self, text: str) -> None:
        os.write(self.fifo, text.encode("ascii"))

    def segments(self) -> list[Segment]:
        (x0, y0), (width, height) = self.origin, self.cell
        return [
            segment_from_line(
                {
                    "kind": "terminal",
                    "text": text,
                    "edges": [x0 + i * width for i in range(len(text) + 1)],
                    "top": y0 + row * height,
                    "bottom": y0 + (row + 1) * height,
                    "clear": True,
                    "right": x0 + self.columns * width,
                }
            )
            for row, text in enumerate(self.lines)
        ]

    def close(self) -> None:
        os.close(self.fifo)
        stop(self.process)


class Terminals:
    """Xterms side by side, each filling its share of the screen's width; the first one's row gets edited."""

    def __init__(self, display: str, width: int, height: int, workdir: Path, contents: tuple[Content, ...]) -> None:
        self.terms: list[Xterm] = []
        share = width // len(contents)
        try:
            for i, content in enumerate(contents):
                term = _launch(display, content, workdir / f"xterm{i}", i * share, share, height)
                self.terms.append(term)
                term.show(content.lines(term.columns, len(term.lines)))
        except BaseException:
            self.close()
            raise
        self.row = _editable_row(self.terms[0])
        self.original = self.terms[0].lines[self.row]

    def read(self) -> Reading:
        return Reading(tuple(s for term in self.terms for s in term.segments()), tuple(t.title for t in self.terms))

    def edit(self, step: int) -> Rect:
        return self.terms[0].rewrite(self.row, rotate_words(self.original, step))

    def close(self) -> None:
        for term in self.terms:
            term.close()


def _launch(display: str, content: Content, fifo: Path, left: int, width: int, height: int) -> Xterm:
    """An xterm as large as fits in the given screen column; its cell size is measured from its window."""
    os.mkfifo(fifo)
    colours = ("-bg", content.background, "-fg", content.foreground)
    command = ["xterm", "-T", content.title, *content.font_args, "-b", str(BORDER), *colours]
    command += ["-xrm", "*allowWindowOps: true"]  # lets the resize request below through
    # Start at a size that surely fits, measure the cell, then resize to fill the column.
    command += ["-geometry", f"40x10+{left}+0", "-e", "sh", "-c", 'exec cat "$0"', str(fifo)]
    process = subprocess.Popen(command, env={**os.environ, "DISPLAY": display}, stdin=subprocess.DEVNULL)
    try:
        term = Xterm(content.title, process, _open_fifo(fifo, process))
        _, _, w, h = client_window(display, content.title)
        cell = ((w - 2 * BORDER) // 40, (h - 2 * BORDER) // 10)
        cols = (width - FRAME[0] - 2 * BORDER) // cell[0]
        rows = (height - FRAME[1] - 2 * BORDER) // cell[1]
        term.write(f"\x1b[8;{rows};{cols}t")  # xterm's window-size request
        x, y = _resized(display, content.title, (cols * cell[0] + 2 * BORDER, rows * cell[1] + 2 * BORDER))
        term.origin, term.cell, term.columns = (x + BORDER, y + BORDER), cell, cols - 1
        term.lines = [""] * rows
        return term
    except BaseException:
        stop(process)
        raise


def _resized(display: str, title: str, size: tuple[int, int], timeout: float = 10.0) -> tuple[int, int]:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        x, y, w, h = client_window(display, title)
        if (w, h) == size:
            return x, y
        time.sleep(0.05)
    raise RuntimeError(f"xterm {title!r} is {w}x{h} px, not {size[0]}x{size[1]}")


def _open_fifo(path: Path, process: subprocess.Popen[bytes], timeout: float = 10.0) -> int:
    """Open for writing once xterm's cat has opened it for reading (non-blocking, so a dead xterm fails)."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline and process.poll() is None:
        try:
            fd = os.open(path, os.O_WRONLY | os.O_NONBLOCK)
        except OSError:  # ENXIO: no reader yet
            time.sleep(0.05)
            continue
        os.set_blocking(fd, True)
        return fd
    raise RuntimeError(f"xterm did not start reading {path} (exit status {process.poll()})")


def _editable_row(term: Xterm) -> int:
    """The row nearest the middle that fits and has at least five words: rotating them changes it clearly."""
    rows = [i for i, line in enumerate(term.lines) if len(line.split()) >= 5 and len(line) < term.columns]
    return min(rows, key=lambda i: abs(i - len(term.lines) // 2))


# --- what the terminals show ---------------------------------------------------------------------------------
def file_lines(path: Path) -> Callable[[int, int], list[tuple[str, str]]]:
    """The file's first rows as a terminal shows them: tabs expanded, ASCII only."""

    def lines(columns: int, rows: int) -> list[tuple[str, str]]:
        text = path.read_text(encoding="utf-8").encode("ascii", "replace").decode("ascii")
        return [(line, line) for line in (raw.expandtabs().rstrip() for raw in text.splitlines()[:rows])]

    return lines


def man_lines(page: str) -> Callable[[int, int], list[tuple[str, str]]]:
    """The first screen of `man PAGE` formatted for the terminal's width, bold and underline as less shows them."""

    def lines(columns: int, rows: int) -> list[tuple[str, str]]:
        env = {**os.environ, "LC_ALL": "C", "MANWIDTH": str(columns), "MAN_KEEP_FORMATTING": "1", "MANPAGER": "cat"}
        out = subprocess.run(["man", page], env=env, capture_output=True, text=True, check=True).stdout
        return [(OVERSTRIKE.sub(r"\2", line), _styled(line)) for line in out.splitlines()[:rows]]

    return lines


def session_lines(seed: str, greeting: str) -> Callable[[int, int], list[tuple[str, str]]]:
    """A made-up shell session: a prompt echoing `greeting`, listings of files and commits whose names mix letters
    and digits (rich in O/0, I/l/1), and a process table; the same seed always gives the same session."""

    def lines(columns: int, rows: int) -> list[tuple[str, str]]:
        rng = random.Random(f"session:{seed}")
        prompt = f"{rng.choice(('dev', 'ops', 'alice', 'root'))}@{mixed_label(rng).lower()}:~/{mixed_label(rng)}$"
        out = [f"{prompt} echo {greeting}", greeting, f"{prompt} ls -l"]
        for _ in range(rows // 3):
            size, day = rng.randint(10, 99999), rng.randint(1, 28)
            name = f"{mixed_label(rng)}{rng.choice(('.txt', '.log', '.py', '', '.cfg'))}"
            out.append(f"-rw-r--r-- 1 dev dev {size:>6} Nov {day:>2} 1{rng.randint(0, 9)}:{rng.randint(10, 59)} {name}")
        out.append(f"{prompt} git log --oneline -5")
        for _ in range(5):
            commit = "".join(rng.choice("0123456789abcdef") for _ in range(7))
            verb = rng.choice(("Fix", "Add", "Drop", "Move"))
            out.append(f"{commit} {verb} {mixed_label(rng)} in {mixed_label(rng)}")
        out.append(f"{prompt} ps -o pid,stat,cmd")
        while len(out) < rows - 1:
            state = rng.choice(("S", "R", "Ss", "Sl"))
            out.append(f"{rng.randint(100, 99999):>6} {state}  ./{mixed_label(rng)} --id {mixed_label(rng)}")
        out.append(prompt)
        return [(line, line) for line in out[:rows]]

    return lines


def _styled(line: str) -> str:
    """groff's overstrikes (c BS c bold, _ BS c underline) as SGR sequences."""

    def style(match: re.Match[str]) -> str:
        first, char = match.groups()
        if first == "_" and char != "_":
            return f"\x1b[4m{char}\x1b[24m"
        return f"\x1b[1m{char}\x1b[22m"

    return OVERSTRIKE.sub(style, line)


def terminal_screens(contents: tuple[Content, ...]) -> Callable[[str, int, int], Iterator[Terminals]]:
    def screens(display: str, width: int, height: int) -> Iterator[Terminals]:
        with (
            tempfile.TemporaryDirectory() as workdir,
            contextlib.closing(Terminals(display, width, height, Path(workdir), contents)) as terms,
        ):
            yield terms

    return screens


DEJAVU_15 = "DejaVu Sans Mono:pixelsize=15"
SCREENS: tuple[tuple[str, tuple[Content, ...]], ...] = (
    (
        "xterm",
        (
            Content("textwrap.py", "#1e1e1e", "#dcdcdc", DEJAVU_15, file_lines(Path(textwrap.__file__))),
            Content(
                "datastructures.rst.txt",
                "white",
                "black",
                DEJAVU_15,
                file_lines(DOCS / "_sources/tutorial/datastructures.rst.txt"),
            ),
        ),
    ),
    (
        "man-ls-grep",
        (
            Content("man ls", "white", "black", DEJAVU_15, man_lines("ls")),
            Content("man grep", "#2d2d2d", "#e0e0e0", "Liberation Mono:pixelsize=13", man_lines("grep")),
        ),
    ),
    (
        "man-bash-tar",
        (
            Content("man bash", "#fdf6e3", "#586e75", "Nimbus Mono PS:pixelsize=16", man_lines("bash")),
            Content("man tar", "#002b36", "#93a1a1", "DejaVu Sans Mono:pixelsize=12", man_lines("tar")),
        ),
    ),
    (
        "man-find-cp",
        (
            Content("man find", "white", "#202020", "Liberation Mono:pixelsize=14", man_lines("find")),
            Content("man cp", "#300a24", "#f2f2f2", "DejaVu Sans Mono:pixelsize=13", man_lines("cp")),
        ),
    ),
    (
        "term-rst",
        (
            Content(
                "cmdline.rst.txt",
                "black",
                "#b0b0b0",
                "Liberation Mono:pixelsize=11",
                file_lines(DOCS / "_sources/using/cmdline.rst.txt"),
            ),
            Content(
                "configparser.rst.txt",
                "#ffffe0",
                "#303030",
                "DejaVu Sans Mono:pixelsize=18",
                file_lines(DOCS / "_sources/library/configparser.rst.txt"),
            ),
        ),
    ),
    (
        "man-sed-chmod",
        (
            Content("man sed", "#f5f5f5", "#2a2a2a", "Liberation Mono:pixelsize=15", man_lines("sed")),
            Content("man chmod", "#1b2b34", "#d8dee9", "Nimbus Mono PS:pixelsize=14", man_lines("chmod")),
        ),
    ),
)


# X core bitmap fonts: xterm's default "fixed" (6x13 semicondensed, built into Xvfb too) and xfonts-base sizes.
BITMAP_SCREENS: tuple[tuple[str, tuple[Content, ...]], ...] = (
    (
        "bitmap-fixed-9x15",
        (
            Content("bash", "white", "black", "fixed", session_lines("0", "hello from the newcomer terminal"), True),
            Content("man ls", "black", "#d0d0d0", "9x15", man_lines("ls"), True),
        ),
    ),
    (
        "bitmap-6x13-8x13",
        (
            Content("bash", "#1c1c1c", "#e8e8e8", "6x13", session_lines("1", "goodbye from the old server"), True),
            Content("textwrap.py", "#fffff0", "#202020", "8x13", file_lines(Path(textwrap.__file__)), True),
        ),
    ),
    (
        "bitmap-7x14-10x20",
        (
            Content("bash", "white", "#101010", "7x14", session_lines("2", "welcome back to the build host"), True),
            Content("man tar", "#102030", "#c8d8e8", "10x20", man_lines("tar"), True),
        ),
    ),
    (
        "bitmap-fixed-7x13",
        (
            Content("bash", "#f4f4f4", "#000000", "fixed", session_lines("3", "fetching the nightly logs now"), True),
            Content("man cp", "#000000", "#e0e0e0", "7x13", man_lines("cp"), True),
        ),
    ),
    (
        "bitmap-6x10-8x16",
        (
            Content("bash", "#202428", "#d8dee9", "6x10", session_lines("4", "all checks passed on the runner"), True),
            Content("shlex.py", "white", "#1a1a1a", "8x16", file_lines(Path(shlex.__file__)), True),
        ),
    ),
    (
        "bitmap-6x12-9x15bold",
        (
            Content(
                "bash", "#0c0c0c", "#cccccc", "6x12", session_lines("5", "the backup finished at noon today"), True
            ),
            Content("man date", "#fdfdf5", "#1e1e1e", "9x15bold", man_lines("date"), True),
        ),
    ),
    (
        "bitmap-fixed-8x13",
        (
            Content("bash", "white", "black", "fixed", session_lines("6", "deploying build seven to staging"), True),
            Content("man ps", "#1d2a1d", "#c0e0c0", "8x13", man_lines("ps"), True),
        ),
    ),
)


def terminals(display: str, width: int, height: int) -> Iterator[tuple[str, Source]]:
    for name, contents in (*SCREENS, *BITMAP_SCREENS):
        for terms in terminal_screens(contents)(display, width, height):
            yield name, terms
