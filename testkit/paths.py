"""Where the repository keeps what tests and benchmarks start or read: the stand-in apps, the fonts, the test data."""

from __future__ import annotations

from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
APPS = ROOT / "tests" / "apps"  # small real programs (the Tk probe and editor) the tests drive on a display
FONTS_CONF = ROOT / "tests" / "fonts" / "fonts.conf"
TEST_DATA = ROOT / "tests" / "data"
