"""An xterm on the test display whose shell reads one line and writes it to a file: what typed text became, as a
terminal received it."""

from __future__ import annotations

import contextlib
import os
import shutil
import subprocess
from collections.abc import Iterator
from pathlib import Path


@contextlib.contextmanager
def line_reader(out: Path) -> Iterator[Path]:
    """The xterm ('Symphony Term', bottom right), until the context ends; yields `out`, where the line goes."""
    if shutil.which("xterm") is None:
        raise RuntimeError("xterm is not installed (apt-get install xterm)")
    script = f'read -r line; printf "%s" "$line" > {out}'
    process = subprocess.Popen(
        ["xterm", "-T", "Symphony Term", "-geometry", "80x12+1100+600", "-e", "bash", "-c", script],
        env={**os.environ, "LANG": "C.UTF-8", "LC_ALL": "C.UTF-8"},
    )
    try:
        yield out
    finally:
        process.terminate()
        process.wait(timeout=5)
