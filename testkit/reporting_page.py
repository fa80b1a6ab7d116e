"""A web page that reports itself: served over real HTTP on 127.0.0.1, it POSTs its state (each marked element's
box as the DOM lays it out, in CSS pixels of the viewport, the clicks each button got, the field's value) to the
same server whenever something changes, so a test can compare what a tool saw with the DOM's own geometry."""

from __future__ import annotations

import contextlib
import json
import threading
import time
from collections.abc import Callable, Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

PAGE = """<!doctype html>
<html><head><meta charset="utf-8"><title>Reporting page</title>
<style>
  body { margin: 0; font: 16px DejaVu Sans, sans-serif; }
  .band { background: #2a6; color: #fff; padding: 10px 24px; }
  main { padding: 16px 24px; }
  button, input { margin: 6px 0; font: inherit; }
</style></head>
<body>
  <h1 class="band" data-report="Section #1">Section #1</h1>
  <main>
    <button data-report="Save file">Save file</button>
    <button data-report="ONE">ONE</button>
    <button data-report="0l1I">0l1I</button>
    <p><input data-report="Search box" aria-label="Search box"></p>
    <a href="#top" data-report="Docs link">Docs link</a>
  </main>
<script>
  const clicks = {};
  function report() {
    const boxes = {};
    for (const el of document.querySelectorAll("[data-report]")) {
      const r = el.getBoundingClientRect();
      boxes[el.dataset.report] = {left: r.left, top: r.top, width: r.width, height: r.height};
    }
    const field = document.querySelector("input").value;
    const sent = performance.timeOrigin + performance.now();  // posts may arrive out of order: the last sent wins
    fetch("/report", {method: "POST", body: JSON.stringify({boxes, clicks, field, ready: true, sent})});
  }
  for (const b of document.querySelectorAll("button")) {
    clicks[b.dataset.report] = 0;
    b.addEventListener("click", () => { clicks[b.dataset.report] += 1; report(); });
  }
  document.querySelector("input").addEventListener("input", report);
  window.addEventListener("load", report);
  window.addEventListener("resize", report);
</script></body></html>
"""


class ReportingPage:
    def __init__(self, server: ThreadingHTTPServer) -> None:
        self.server = server
        self.state: dict[str, Any] = {}
        self.lock = threading.Lock()

    @property
    def url(self) -> str:
        host, port = self.server.server_address[:2]
        return f"http://{host!s}:{port}/"

    def wait(self, predicate: Callable[[dict[str, Any]], Any], timeout: float = 30.0) -> dict[str, Any]:
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            state = dict(self.state)
            if state and predicate(state):
                return state
            time.sleep(0.05)
        raise AssertionError(f"condition not met within {timeout} s; page state: {self.state}")


@contextlib.contextmanager
def reporting_page(html: str = PAGE) -> Iterator[ReportingPage]:
    """Serve `html` (by default the page above; another page reports the same way through its own script)."""
    page: ReportingPage

    class Handler(BaseHTTPRequestHandler):
        def do_GET(self) -> None:
            body = html.encode()
            self.send_response(200)
            self.send_header("Content-Type", "text/html; charset=utf-8")
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)

        def do_POST(self) -> None:
            length = int(self.headers.get("Content-Length", "0"))
            report = json.loads(self.rfile.read(length))
            with page.lock:  # posted concurrently (a smooth scroll posts each frame): the last sent wins
                if report.get("sent", 0) >= page.state.get("sent", 0):
                    page.state = report
            self.send_response(204)
            self.end_headers()

        def log_message(self, format: str, *args: object) -> None:
            pass

    server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    page = ReportingPage(server)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield page
    finally:
        server.shutdown()
        server.server_close()
