"""The server's side of the AT-SPI reader: one helper process under the system Python, spoken to over a pipe.

The helper (`atspi_helper.py`) is started on first use and again if it dies; a request that gets no answer in
time kills it (a hung application can block an AT-SPI call), so the next request starts a fresh one.
Calls block: run them off the event loop.
"""

from __future__ import annotations

import json
import logging
import os
import selectors
import subprocess
import threading
import time
from pathlib import Path
from typing import Any

from symphony_mcp.errors import SymphonyError

log = logging.getLogger(__name__)
SYSTEM_PYTHON = Path("/usr/bin/python3")
HELPER = Path(__file__).with_name("atspi_helper.py")
BINDINGS_FIX = "apt-get install -y python3-gi gir1.2-atspi-2.0 at-spi2-core dbus"
START_SECONDS = 10.0


class ElementsUnavailableError(SymphonyError, RuntimeError):
    """The accessibility tree cannot be read here; the message says why and how to fix it."""


class AtspiProcess:
    def __init__(self, python: Path = SYSTEM_PYTHON) -> None:
        self.python = python
        self._process: subprocess.Popen[bytes] | None = None
        self._lock = threading.Lock()

    def request(self, message: dict[str, Any], timeout: float) -> dict[str, Any]:
        """Send one request and return its answer; ElementsUnavailableError when the helper cannot answer."""
        with self._lock:
            process = self._running()
            assert process.stdin is not None
            try:
                process.stdin.write(json.dumps(message).encode() + b"\n")
                process.stdin.flush()
            except OSError as exc:
                self._stop()
                raise ElementsUnavailableError(f"the accessibility reader stopped ({exc}); try again") from exc
            answer = self._answer(process, timeout)
        if not answer.get("ok"):
            raise ElementsUnavailableError(f"the accessibility reader failed: {answer.get('error')}")
        return answer

    def start(self) -> None:
        """Start the helper now (it loads the bindings first): ElementsUnavailableError says what is missing."""
        with self._lock:
            self._running()

    def _running(self) -> subprocess.Popen[bytes]:
        if self._process is not None and self._process.poll() is None:
            return self._process
        if not self.python.exists():
            raise ElementsUnavailableError(
                f"the accessibility tree is read by {self.python} (Debian's Python, which has the AT-SPI "
                f"bindings), which is not installed: {BINDINGS_FIX}"
            )
        process = subprocess.Popen(
            [str(self.python), "-I", str(HELPER)],  # -I: the server's PYTHONPATH and venv stay out
            env={**os.environ},
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=subprocess.DEVNULL,
        )
        self._process = process
        ready = self._answer(process, START_SECONDS)
        if not ready.get("ok"):
            self._stop()
            raise ElementsUnavailableError(f"{ready.get('error')}: {BINDINGS_FIX}")
        return process

    def _answer(self, process: subprocess.Popen[bytes], timeout: float) -> dict[str, Any]:
        """The helper's next line, or an error after `timeout` seconds (the helper is then stopped)."""
        assert process.stdout is not None
        deadline = time.monotonic() + timeout
        with selectors.DefaultSelector() as selector:
            selector.register(process.stdout, selectors.EVENT_READ)
            while True:
                left = deadline - time.monotonic()
                if left <= 0 or not selector.select(left):
                    self._stop()
                    raise ElementsUnavailableError(
                        f"the accessibility reader gave no answer within {timeout:g} s (an application may be "
                        "hanging); it was restarted, try again"
                    )
                line = process.stdout.readline()
                if not line:
                    code = process.wait()
                    self._stop()
                    raise ElementsUnavailableError(
                        f"the accessibility reader exited (status {code}): the accessibility bus is probably not "
                        f"running on display {os.environ.get('DISPLAY') or '(none set)'}. A desktop session runs "
                        "it; the server's virtual display starts it (at-spi2-core and dbus must be installed)"
                    )
                try:
                    answer: dict[str, Any] = json.loads(line)
                except ValueError:
                    continue  # not a message (nothing else should write there, but a library might)
                return answer

    def _stop(self) -> None:
        process, self._process = self._process, None
        if process is not None and process.poll() is None:
            process.kill()
            process.wait()

    def close(self) -> None:
        with self._lock:
            self._stop()
