"""A file host over real HTTP on 127.0.0.1, standing in for OSWorld's (Google Drive, Hugging Face): it serves
given bytes at given paths (query included), answers Range requests with 206 as those hosts do, and can cut a
file's first response short once (the connection closes mid-body), so a download must resume. Every request
is recorded with its Range header."""

from __future__ import annotations

import threading
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer


@dataclass
class FileHost:
    files: dict[str, bytes]  # path with query ("/uc?id=1") -> content
    cut_once: dict[str, int] = field(default_factory=dict)  # path -> bytes sent before the first response breaks
    requests: list[tuple[str, str | None]] = field(default_factory=list)  # (path, Range header)
    base: str = ""


@contextmanager
def file_host(files: dict[str, bytes], cut_once: dict[str, int] | None = None) -> Iterator[FileHost]:
    host = FileHost(dict(files), dict(cut_once or {}))
    lock = threading.Lock()

    class Handler(BaseHTTPRequestHandler):
        protocol_version = "HTTP/1.1"

        def do_GET(self) -> None:
            wanted = self.headers.get("Range")
            with lock:
                host.requests.append((self.path, wanted))
                cut = host.cut_once.pop(self.path, None)
            body = host.files.get(self.path)
            if body is None:
                self.send_error(404, "no such file")
                return
            start = int(wanted.removeprefix("bytes=").split("-")[0]) if wanted else 0
            if start >= len(body) and wanted:
                self.send_response(416)
                self.send_header("Content-Range", f"bytes */{len(body)}")
                self.send_header("Content-Length", "0")
                self.end_headers()
                return
            part = body[start:]
            self.send_response(206 if wanted else 200)
            if wanted:
                self.send_header("Content-Range", f"bytes {start}-{len(body) - 1}/{len(body)}")
            self.send_header("Content-Type", "application/octet-stream")
            self.send_header("Content-Length", str(len(part)))
            self.end_headers()
            self.wfile.write(part if cut is None else part[:cut])
            if cut is not None:
                self.wfile.flush()
                self.close_connection = True

        def log_message(self, format: str, *args: object) -> None:
            return

    server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    host.base = f"http://127.0.0.1:{server.server_address[1]}"
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield host
    finally:
        server.shutdown()
        server.server_close()
        thread.join()
