"""A stand-in for OSWorld's in-VM server (`desktop_env/server/main.py`), answering from an environment's sandbox.

OSWorld's getters reach the VM over HTTP: some post to `http://{env.vm_ip}:{env.server_port}/execute` themselves,
the rest through OSWorld's own `PythonController`, which posts to the same server. So that both run unchanged,
this serves the routes they use, with the server's request and answer shapes, on a free local port, and does
the work inside the environment's sandbox as the task user (commands.py: `/execute`'s semantics, `/setup/launch`):

  POST /execute, /setup/execute   {"command", "shell"} -> {"status", "output", "error", "returncode"}; 500 when
                                  the command cannot run or times out
  POST /setup/launch              {"command", "shell"} -> text; started in the background
  POST /file                      form file_path (`~` and $VARS expanded) -> the bytes; 404 when unreadable
  POST /list_directory            {"path"} -> {"directory_tree": {type, name, children}}; 400 when not a folder
  POST /screen_size               -> {"width", "height"}
  POST /window_size               form app_class_name -> {"width", "height"} of the first window of that WM_CLASS
  POST /desktop_path              -> {"desktop_path"}
  GET  /platform                  -> "Linux"
  GET  /accessibility             -> {"AT": the desktop's AT-SPI tree in OSWorld's XML (elements/osworld_tree.py)},
                                  walked inside as the task user, whole as OSWorld's (WALK_SECONDS only bounds a hung
                                  walk); 500 with the error when the walk fails
  GET  /terminal                  -> {"output": the text of the active GNOME Terminal window's terminal, right-
                                  stripped} from the same tree, as OSWorld's server reads it; 404 without one

The browser's application node is named as the image's browser (image.PRESENTED_APPLICATIONS: Chromium presents
Google Chrome, whose name OSWorld's getters select). GNOME's wallpaper (`/wallpaper`) is not served (404): the
tasks whose getters need it are listed as skipped (tasks.GETTER_NEEDS).
"""

from __future__ import annotations

import json
import logging
import subprocess
import sys
import threading
import urllib.parse
import xml.etree.ElementTree as ET
from collections.abc import Callable
from http import HTTPStatus
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from types import TracebackType
from typing import Any

from symphony_mcp.bench.osworld.commands import execute, launch
from symphony_mcp.bench.osworld.image import PRESENTED_APPLICATIONS
from symphony_mcp.bench.osworld.sandbox import Sandbox
from symphony_mcp.desktop.x11_windows import X11WindowManager
from symphony_mcp.elements import osworld_tree
from symphony_mcp.elements.atspi_process import HELPER, SYSTEM_PYTHON
from symphony_mcp.errors import SymphonyError

log = logging.getLogger(__name__)
# OSWorld's /list_directory tree, built inside the environment as its server builds it (listing order, a
# folder that cannot be read as {'error': ...}); printed as JSON, null for a path that is not a folder.
TREE_SCRIPT = """
import json, os, sys
def tree(directory):
    node = {"type": "directory", "name": os.path.basename(directory), "children": []}
    try:
        for entry in os.listdir(directory):
            full = os.path.join(directory, entry)
            node["children"].append(tree(full) if os.path.isdir(full) else {"type": "file", "name": entry})
    except OSError as exc:
        return {"error": str(exc)}
    return node
print(json.dumps(tree(sys.argv[1])) if os.path.isdir(sys.argv[1]) else "null")
"""
Answer = tuple[int, bytes, str]  # status, body, content type
# OSWorld's server walks the tree with no time bound (only its depth and width limits); a walk cut early gives a verdict
# on a tree missing nodes (measured on a loaded 2-core machine: LibreOffice Impress's tree, 1766 nodes, cut at 10 s,
# the bound of elements' observation, after 1313 nodes, before its Slides View; walked whole in 7.4 s, then 2.5 s).
WALK_SECONDS = 120.0
# The terminal OSWorld's /terminal reads: the one in GNOME Terminal's active window.
TERMINAL_PATH = ".//application[@name='gnome-terminal-server']/frame[@st:active='true']//terminal"


class VmServer:
    """OSWorld's in-VM server for one sandbox, on `address`:<a free port> while the `with` block runs."""

    def __init__(self, sandbox: Sandbox, screen_size: tuple[int, int], address: str) -> None:
        self.sandbox = sandbox
        self.screen_size = screen_size
        self._http = ThreadingHTTPServer((address, 0), _handler(self))
        self._http.daemon_threads = True
        self.port = int(self._http.server_address[1])
        self._thread = threading.Thread(target=self._http.serve_forever, name="osworld-vm-server", daemon=True)
        self.routes: dict[tuple[str, str], Callable[[bytes, str], Answer]] = {
            ("POST", "/execute"): self._execute,
            ("POST", "/setup/execute"): self._execute,
            ("POST", "/setup/launch"): self._launch,
            ("POST", "/file"): self._file,
            ("POST", "/list_directory"): self._list_directory,
            ("POST", "/screen_size"): self._screen_size,
            ("POST", "/window_size"): self._window_size,
            ("POST", "/desktop_path"): self._desktop_path,
            ("GET", "/platform"): lambda body, kind: (HTTPStatus.OK, b"Linux", "text/plain"),
            ("GET", "/accessibility"): self._accessibility,
            ("GET", "/terminal"): self._terminal,
        }

    def __enter__(self) -> VmServer:
        self._thread.start()
        return self

    def __exit__(
        self, kind: type[BaseException] | None, error: BaseException | None, trace: TracebackType | None
    ) -> None:
        self._http.shutdown()
        self._http.server_close()
        self._thread.join()

    def _execute(self, body: bytes, kind: str) -> Answer:
        request = json.loads(body or b"{}")
        result = execute(self.sandbox, request.get("command", ""), bool(request.get("shell", False)))
        if not result.ok:
            return _json(HTTPStatus.INTERNAL_SERVER_ERROR, {"status": "error", "message": result.error})
        answer = {"status": "success", "output": result.output, "error": result.error, "returncode": result.returncode}
        return _json(HTTPStatus.OK, answer)

    def _launch(self, body: bytes, kind: str) -> Answer:
        request = json.loads(body or b"{}")
        command = request.get("command", "")
        if launch(self.sandbox, command, bool(request.get("shell", False))) is None:
            return HTTPStatus.INTERNAL_SERVER_ERROR, f"Failed to launch {command}".encode(), "text/plain"
        return HTTPStatus.OK, f"{command} launched successfully".encode(), "text/plain"

    def _file(self, body: bytes, kind: str) -> Answer:
        path = _form(body).get("file_path", "")
        data = self.sandbox.read_file(self._expanded(path)) if path else None
        if data is None:
            return _json(HTTPStatus.NOT_FOUND, {"error": "File not found"})
        return HTTPStatus.OK, data, "application/octet-stream"

    def _list_directory(self, body: bytes, kind: str) -> Answer:
        path = self._expanded(json.loads(body or b"{}").get("path", ""))
        result = execute(self.sandbox, [sys.executable, "-c", TREE_SCRIPT, path])
        tree = json.loads(result.output) if result.ok and result.returncode == 0 else None
        if tree is None:
            return _json(HTTPStatus.BAD_REQUEST, {"error": f"{path} is not a directory"})
        return _json(HTTPStatus.OK, {"directory_tree": tree})

    def _screen_size(self, body: bytes, kind: str) -> Answer:
        width, height = self.screen_size
        return _json(HTTPStatus.OK, {"width": width, "height": height})

    def _window_size(self, body: bytes, kind: str) -> Answer:
        name = _form(body).get("app_class_name", "").lower()
        manager = X11WindowManager(self.sandbox.display)
        try:
            windows = manager.list_windows()
        except SymphonyError as exc:
            return _json(HTTPStatus.INTERNAL_SERVER_ERROR, {"error": str(exc)})
        finally:
            manager.close()
        for window in windows:
            if window.app.lower() == name and window.rect is not None:
                return _json(HTTPStatus.OK, {"width": window.rect.width, "height": window.rect.height})
        return _json(HTTPStatus.NOT_FOUND, {"error": f"no window of class {name}"})

    def _accessibility(self, body: bytes, kind: str) -> Answer:
        tree = self._tree()
        return _json(HTTPStatus.OK, {"AT": tree}) if isinstance(tree, str) else tree

    def _terminal(self, body: bytes, kind: str) -> Answer:
        tree = self._tree()
        if not isinstance(tree, str):
            return tree
        namespaces = {"st": osworld_tree.NAMESPACES["st"]}
        found = ET.fromstring(tree).findall(TERMINAL_PATH, namespaces)
        if len(found) != 1:
            return _json(HTTPStatus.NOT_FOUND, {"error": f"{len(found)} active GNOME Terminal windows, not one"})
        return _json(HTTPStatus.OK, {"output": (found[0].text or "").rstrip()})

    def _tree(self) -> str | Answer:
        """The desktop's tree in OSWorld's XML (or the error answer): one walk by symphony-mcp's AT-SPI helper, run
        inside the environment as the task user on its display."""
        walk = {
            "op": "tree",
            "max_depth": osworld_tree.MAX_DEPTH,
            "max_width": osworld_tree.MAX_WIDTH,
            "max_nodes": osworld_tree.MAX_NODES,
            "seconds": WALK_SECONDS,
        }
        try:
            done = subprocess.run(
                self.sandbox.command([str(SYSTEM_PYTHON), "-I", str(HELPER)]), env=self.sandbox.env(),
                input=json.dumps(walk).encode() + b"\n", capture_output=True, timeout=WALK_SECONDS + 20,
            )  # fmt: skip
        except subprocess.TimeoutExpired:
            return _json(HTTPStatus.INTERNAL_SERVER_ERROR, {"error": "the accessibility tree walk did not finish"})
        answers = [json.loads(line) for line in done.stdout.splitlines() if line.startswith(b"{")]
        answer = next((a for a in answers if "ready" not in a), None)
        if answer is None or not answer.get("ok"):
            error = answer.get("error") if answer else done.stderr.decode(errors="replace").strip()[-300:]
            return _json(HTTPStatus.INTERNAL_SERVER_ERROR, {"error": f"the accessibility tree walk failed: {error}"})
        for application in answer["applications"]:
            application["name"] = PRESENTED_APPLICATIONS.get(application["name"], application["name"])
        return osworld_tree.tree_xml(answer)

    def _desktop_path(self, body: bytes, kind: str) -> Answer:
        return _json(HTTPStatus.OK, {"desktop_path": str(self.sandbox.user.home / "Desktop")})

    def _expanded(self, path: str) -> str:
        """`~` and $HOME as the task user's (the server expands them in the VM, as `user`)."""
        expanded = self.sandbox.user.expand(path)
        return expanded.replace("$HOME", str(self.sandbox.user.home)).replace("${HOME}", str(self.sandbox.user.home))


def _handler(server: VmServer) -> type[BaseHTTPRequestHandler]:
    class Handler(BaseHTTPRequestHandler):
        def do_GET(self) -> None:
            self._answer("GET")

        def do_POST(self) -> None:
            self._answer("POST")

        def _answer(self, method: str) -> None:
            length = int(self.headers.get("Content-Length") or 0)
            body = self.rfile.read(length) if length else b""
            route = server.routes.get((method, urllib.parse.urlsplit(self.path).path))
            if route is None:
                status, data, kind = _json(HTTPStatus.NOT_FOUND, {"error": f"{self.path} is not served here"})
            else:
                try:
                    status, data, kind = route(body, self.headers.get("Content-Type", ""))
                except (ValueError, KeyError, TypeError, OSError) as exc:  # a malformed request: answered with 500
                    log.warning("OSWorld server stand-in: %s %s failed: %s", method, self.path, exc)
                    status, data, kind = _json(
                        HTTPStatus.INTERNAL_SERVER_ERROR, {"status": "error", "message": str(exc)}
                    )
            self.send_response(status)
            self.send_header("Content-Type", kind)
            self.send_header("Content-Length", str(len(data)))
            self.end_headers()
            self.wfile.write(data)

        def log_message(self, format: str, *args: Any) -> None:
            log.debug("OSWorld server stand-in: " + format, *args)

    return Handler


def _json(status: int, value: Any) -> Answer:
    return status, json.dumps(value).encode(), "application/json"


def _form(body: bytes) -> dict[str, str]:
    """A urlencoded form's fields (requests' `data={...}`)."""
    return {key: values[0] for key, values in urllib.parse.parse_qs(body.decode(errors="replace")).items()}
