"""Ground-truth screens for the OCR grounding benchmark: real text-rich screens and where phrases are on them.

`iter_screens(size)` starts its own Xvfb (never an existing display), shows one screen after another and
yields each as a `Screen`: the captured full-screen image and targets, phrases with every box (screen px)
where they are drawn (truth.py says how they are chosen). A screen stays on display until the next one is
requested, so `Screen.change()` can edit one line of it for the incremental-OCR measurement.

Screen families (what each source module shows):
- docs: Python documentation pages from Debian's python3-doc in kiosk Chromium, prose and code-heavy (web.py);
- zoom: documentation and form pages with Chromium's device scale factor at 0.8, 1.25 and 1.5 (web.py);
- web-forms: generated dialogs and forms with short button words, random 2-3 character labels on coloured and
  low-contrast backgrounds, punctuation-heavy settings and small print, in DejaVu, Liberation, Noto and URW fonts
  (forms.py);
- tk: a classic Tk order form; ttk: dialogs in three ttk themes; qt: dialogs in two Qt styles (windows.py);
- terminal: xterms showing source files and real `man` pages in three monospace fonts at 11-18 px (terminal.py);
- bands: task panels with header labels on coloured bands, all-caps button words and mixed letter-digit labels
  (bands.py), at zoom 1, 1.25 and 1.5;
- bitmap-terminal: xterms in X core bitmap fonts (xterm's default `fixed`, and xfonts-base sizes) showing shell
  sessions with mixed letter-digit names, man pages and files (terminal.py).

Every target belongs to the tuning set or to a held-out set by its screen (fixed here): HELD_OUT has at least
one screen of every family but tk, and all of Qt but one screen (a toolkit never looked at while tuning);
HELD_OUT_2, a second batch of the same kinds, was added after HELD_OUT's misses had been looked at once;
HELD_OUT_3 holds the screens of the bands and bitmap-terminal kinds kept out of sight while fixing them;
HELD_OUT_4, new seeds of those kinds and a few others, was written before the next round of fixes; HELD_OUT_5, a
fresh batch of every family but tk, before the round after that.

Each screen also has absent phrases (truth.choose_absent): near misses of its targets that it does not show, for
counting false positives (an exact match for a phrase that is not there).

CLI: python -m benchmarks.ocr_grounding.screens --out DIR --size 1920x1080 [--overlay] [--only NAME,...]
"""

from __future__ import annotations

import argparse
import contextlib
import json
import random
import sys
import time
from collections.abc import Callable, Collection, Generator, Iterator, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from PIL import Image, ImageDraw

from benchmarks.ocr_grounding.terminal import terminals
from benchmarks.ocr_grounding.truth import (
    Inker,
    Source,
    Target,
    choose_absent,
    choose_targets,
    phrase_table,
    rect,
    rect_list,
    targets_on,
)
from benchmarks.ocr_grounding.web import web_pages
from benchmarks.ocr_grounding.windows import park_pointer, qt_dialogs, tk_form, ttk_dialogs
from symphony_mcp.config import DisplaySettings
from symphony_mcp.desktop.capture import ScreenCapturer
from symphony_mcp.desktop.virtual_display import display_for
from symphony_mcp.imaging.geometry import Rect

SOURCES: tuple[Callable[[str, int, int], Iterator[tuple[str, Source]]], ...] = (
    web_pages,
    tk_form,
    ttk_dialogs,
    qt_dialogs,
    terminals,
)
FAMILIES = (  # screen name prefix -> family
    ("docs-", "docs"),
    ("zoom", "zoom"),
    ("forms-", "web-forms"),
    ("bands-", "bands"),
    ("tk-", "tk"),
    ("ttk-", "ttk"),
    ("qt-", "qt"),
    ("xterm", "terminal"),
    ("man-", "terminal"),
    ("term-", "terminal"),
    ("bitmap-", "bitmap-terminal"),
)
HELD_OUT = frozenset(
    {"docs-subprocess", "zoom150-json", "forms-2", "ttk-alt", "qt-fusion", "qt-windows", "man-bash-tar"}
)
# Added after the held-out screens' misses had been looked at once; not looked at before the final run.
HELD_OUT_2 = frozenset(
    {"docs-functools", "zoom90-itertools", "zoom110-forms-5", "ttk-classic", "qt-fusion-serif", "man-find-cp"}
)
# The kinds OCR missed on strangers' screens (issue 26 item 3): generators and seeds written and committed before
# any fix for them, and never looked at (images, misses or per-screen figures) while tuning.
HELD_OUT_3 = frozenset({"bands-4", "bands-5", "bands-z150-3", "bitmap-7x14-10x20"})
# Session 10 (issue 26 item 3 again): new seeds of the same kinds, written and committed before any fix of that
# round and never looked at while tuning: task panels with coloured bands, all-caps buttons and letter-digit
# labels (one at zoom 1.25), a form, a docs page, and xterms in bitmap fonts not used before (fixed next to 7x13,
# 6x10 next to 8x16).
HELD_OUT_4 = frozenset(
    {"bands-6", "bands-7", "bands-z125-8", "forms-7", "docs-datetime", "bitmap-fixed-7x13", "bitmap-6x10-8x16"}
)
# Session 11 (issue 26 item 3, fixes at 1080p): a fresh batch of every family but tk (its form has no variants),
# written and committed before any fix of that round and never looked at while fixing: task panels (zoom 1 and
# 1.5), forms (zoom 1 and 1.25), two docs pages (zoom 1 and 1.1), the ttk alt theme and Qt's Windows style with
# other fonts and labels, man pages in TrueType monospace fonts, and xterms in bitmap fonts not used before
# (6x12, 9x15bold) next to xterm's default `fixed` with a new session.
HELD_OUT_5 = frozenset(
    {
        "bands-9",
        "bands-z150-10",
        "forms-9",
        "zoom125-forms-10",
        "docs-logging",
        "zoom110-csv",
        "ttk-alt-5",
        "qt-windows-3",
        "man-sed-chmod",
        "bitmap-6x12-9x15bold",
        "bitmap-fixed-8x13",
    }
)


def family_of(name: str) -> str:
    return next(family for prefix, family in FAMILIES if name.startswith(prefix))


def split_of(name: str) -> str:
    held_out = {
        "held-out": HELD_OUT,
        "held-out-2": HELD_OUT_2,
        "held-out-3": HELD_OUT_3,
        "held-out-4": HELD_OUT_4,
        "held-out-5": HELD_OUT_5,
    }
    for split, names in held_out.items():
        if name in names:
            return split
    return "tuning"


# --- screens as the harness sees them --------------------------------------------------------------------
@dataclass(frozen=True)
class Change:
    """The screen after one line was edited: its image, the line's box, and the targets now valid."""

    image: Image.Image
    line: Rect
    line_targets: tuple[Target, ...]  # every target with a box on the edited line
    targets: tuple[Target, ...]  # the screen's targets re-checked on the new screen, plus line_targets


@dataclass(frozen=True)
class Screen:
    """One ground-truth screen: its full-screen image and targets.

    `change()` edits one line, differently on each call, while the screen is live (before the next screen
    is requested); a screen loaded from disk returns its recorded change.
    """

    name: str
    image: Image.Image
    targets: tuple[Target, ...]
    changer: Callable[[], Change] = field(repr=False, compare=False)
    absent: tuple[str, ...] = ()  # phrases the screen does not show (near misses of its targets)

    def change(self) -> Change:
        return self.changer()

    @property
    def family(self) -> str:
        return family_of(self.name)

    @property
    def split(self) -> str:
        return split_of(self.name)


class Camera:
    """Full-screen grabs of our display, waiting for the screen to finish drawing."""

    def __init__(self) -> None:
        self.capturer = ScreenCapturer()
        self.area = self.capturer.monitor_rect(1)

    def settle(self, previous: Image.Image | None, timeout: float = 20.0) -> Image.Image:
        """The first frame that differs from `previous` and stays the same for 0.2 s."""
        old = previous.tobytes() if previous is not None else None
        last: bytes | None = None
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            image = self.capturer.grab(self.area).copy()
            data = image.tobytes()
            if data == last and data != old:
                return image
            last = data
            time.sleep(0.2)
        raise RuntimeError(f"the screen did not settle within {timeout:g} s")

    def close(self) -> None:
        self.capturer.close()


class _Editor:
    """The live `Screen.change`: edits the source's line, then re-grounds the new screen."""

    def __init__(
        self, name: str, source: Source, camera: Camera, image: Image.Image, targets: tuple[Target, ...]
    ) -> None:
        self.name, self.source, self.camera = name, source, camera
        self.image, self.targets, self.step = image, targets, 0
        self.live = True

    def __call__(self) -> Change:
        if not self.live:
            raise RuntimeError(f"screen {self.name!r} is no longer on display; call change() before the next screen")
        self.step += 1
        line = self.source.edit(self.step)
        image = self.camera.settle(self.image)
        reading = self.source.read()
        table, inker = phrase_table(reading), Inker(image)
        line_targets = targets_on(reading, image, line)
        kept = (inker.target(table[key]) for t in self.targets if (key := t.phrase.lower()) in table)
        targets = {t.phrase.lower(): t for t in kept if t is not None}
        for target in line_targets:
            targets.setdefault(target.phrase.lower(), target)
        self.image, self.targets = image, tuple(targets.values())
        return Change(image, line, line_targets, self.targets)


def iter_screens(
    size: str = "1920x1080", *, seed: int = 0, targets_per_screen: int = 40, only: Collection[str] = ()
) -> Generator[Screen, None, None]:
    """Show each screen on a fresh Xvfb of `size` (WIDTHxHEIGHT) and yield it while it is on display.

    Runs everything in the calling thread (mss and Playwright's sync API both need that); close the
    generator (or exhaust it) to stop the apps and the display. `only` names the screens to show (all if empty).
    """
    # Always our own Xvfb + openbox (never the caller's display); DISPLAY points at it while open.
    settings = DisplaySettings(resolution=size, virtual="always")
    width, height = settings.size
    with display_for(settings) as display, contextlib.closing(Camera()) as camera:
        assert display is not None
        park_pointer(display, width - 1, height // 2)
        previous = camera.settle(None)
        for sources in SOURCES:
            for name, source in sources(display, width, height):
                if only and name not in only:
                    continue
                image = camera.settle(previous)
                rng = random.Random(f"{seed}:{name}")
                reading = source.read()
                targets = choose_targets(reading, image, targets_per_screen, rng)
                absent = choose_absent(reading, targets, rng)
                editor = _Editor(name, source, camera, image, targets)
                yield Screen(name, image, targets, editor, absent)
                editor.live = False
                previous = editor.image


# --- files: write the screen set, load it back --------------------------------------------------------------------
def write_screen_set(
    out: Path,
    size: str = "1920x1080",
    *,
    seed: int = 0,
    targets_per_screen: int = 40,
    overlay: bool = False,
    only: Collection[str] = (),
) -> dict[str, Any]:
    """NAME.png, NAME.changed.png and NAME.json per screen, and screens.json (the index); returns the index."""
    out.mkdir(parents=True, exist_ok=True)
    index: dict[str, Any] = {"size": size, "seed": seed, "screens": []}
    started = time.monotonic()
    screens = iter_screens(size, seed=seed, targets_per_screen=targets_per_screen, only=only)
    with contextlib.closing(screens):
        for screen in screens:
            change = screen.change()
            screen.image.save(out / f"{screen.name}.png")
            change.image.save(out / f"{screen.name}.changed.png")
            record = {
                "name": screen.name,
                "targets": [t.to_json() for t in screen.targets],
                "absent": list(screen.absent),
                "change": {
                    "line": rect_list(change.line),
                    "line_targets": [t.to_json() for t in change.line_targets],
                    "targets": [t.to_json() for t in change.targets],
                },
            }
            (out / f"{screen.name}.json").write_text(json.dumps(record, indent=1), encoding="utf-8")
            if overlay:
                draw_boxes(screen.image, screen.targets).save(out / f"{screen.name}.boxes.png")
                draw_boxes(change.image, change.line_targets, change.line).save(
                    out / f"{screen.name}.changed.boxes.png"
                )
            entry = {"name": screen.name, "family": screen.family, "split": screen.split}
            index["screens"].append({**entry, "targets": len(screen.targets)})
            print(
                f"{screen.name}: {len(screen.targets)} targets, {len(change.line_targets)} on the edited line",
                file=sys.stderr,
            )
    index["seconds"] = round(time.monotonic() - started, 1)
    (out / "screens.json").write_text(json.dumps(index, indent=1), encoding="utf-8")
    return index


def load_screen_set(directory: Path) -> list[Screen]:
    """Screens written by `write_screen_set`; their `change()` returns the recorded change."""
    index = json.loads((directory / "screens.json").read_text(encoding="utf-8"))
    screens = []
    for entry in index["screens"]:
        name = entry["name"]
        record = json.loads((directory / f"{name}.json").read_text(encoding="utf-8"))
        stored = record["change"]
        change = Change(
            image=Image.open(directory / f"{name}.changed.png").convert("RGB"),
            line=rect(stored["line"]),
            line_targets=tuple(Target.from_json(t) for t in stored["line_targets"]),
            targets=tuple(Target.from_json(t) for t in stored["targets"]),
        )
        image = Image.open(directory / f"{name}.png").convert("RGB")
        targets = tuple(Target.from_json(t) for t in record["targets"])
        screens.append(Screen(name, image, targets, _recorded(change), tuple(record.get("absent", ()))))
    return screens


def _recorded(change: Change) -> Callable[[], Change]:
    return lambda: change


def draw_boxes(image: Image.Image, targets: Sequence[Target], line: Rect | None = None) -> Image.Image:
    """A copy with every target box in red (and the edited line in blue), to check the ground truth by eye."""
    copy = image.copy()
    draw = ImageDraw.Draw(copy)
    if line is not None:
        draw.rectangle(_corners(line), outline=(0, 90, 255))
    for target in targets:
        for box in target.boxes:
            draw.rectangle(_corners(box), outline=(255, 0, 0))
    return copy


def _corners(rect: Rect) -> tuple[int, int, int, int]:
    return rect.left - 1, rect.top - 1, rect.left + rect.width, rect.top + rect.height


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--out", type=Path, required=True, help="directory for the PNGs and JSON")
    parser.add_argument("--size", default="1920x1080", help="display size WIDTHxHEIGHT")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--targets", type=int, default=40, help="targets per screen")
    parser.add_argument("--overlay", action="store_true", help="also write NAME.boxes.png with the boxes drawn")
    parser.add_argument("--only", default="", help="comma-separated screen names (default: all)")
    args = parser.parse_args(argv)
    only = [name for name in args.only.split(",") if name]
    index = write_screen_set(
        args.out, args.size, seed=args.seed, targets_per_screen=args.targets, overlay=args.overlay, only=only
    )
    total = sum(s["targets"] for s in index["screens"])
    print(f"{len(index['screens'])} screens, {total} targets at {args.size} in {index['seconds']} s -> {args.out}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
