"""A stand-in for OSWorld's in-VM controller (`desktop_env/server/main.py`, port 5000): the routes its client
(`PythonController`, `SetupController`) and symphony-mcp's OSWorld backend use, done for real on this process's
X display (mss screenshots, real processes, real files, wmctrl), answering in upstream's shapes.

Upstream's faults are switchable (`Faults`), so a client is tested against what the real server does:
- `bash_script_500`: `/run_bash_script` runs the script, then answers 500 (upstream calls an undefined function
  after the run), so a client that retries runs the script again;
- `wedge_when_parallel`: a request that arrives while another is being answered wedges the server for good, as a
  few parallel requests wedged upstream's until it was restarted;
- `accessibility_500`: `/accessibility` answers 500 with the error, as upstream does when its walk fails (a VM
  whose accessibility bus is down);
- `accessibility_file`: `/accessibility` answers that file's text as the tree (a hostile or broken VM's XML);
- `screenshot_flood`: `/screenshot` answers a PNG header followed by bytes without end (a hostile VM);
- always: `/execute` answers 200 with the command's non-zero returncode when it failed, 500 when the program is
  missing; `/setup/activate_window` and `/setup/close_window` answer 200 whatever wmctrl did.
Written from the protocol as RESEARCH-NEXT §1 and §8 describe it; no upstream code.
"""

from __future__ import annotations

import io
import os
import shlex
import subprocess
import tempfile
import threading
import time
import uuid
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import mss
from PIL import Image
from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import JSONResponse, PlainTextResponse, Response, StreamingResponse
from starlette.routing import Route

from symphony_mcp.elements import osworld_tree
from symphony_mcp.elements.atspi_process import AtspiProcess

EXECUTE_SECONDS = 120
RUN_PYTHON_SECONDS = 30


@dataclass(frozen=True)
class Faults:
    bash_script_500: bool = False
    wedge_when_parallel: bool = False
    accessibility_500: bool = False
    accessibility_file: str | None = None
    screenshot_flood: bool = False


class _Gate:
    """Counts requests in flight; with the wedge fault, a second one at once wedges every request from then on."""

    def __init__(self, wedge: bool) -> None:
        self._wedge = wedge
        self._lock = threading.Lock()
        self._in_flight = 0
        self._wedged = threading.Event()
        self._never = threading.Event()

    def enter(self) -> None:
        with self._lock:
            self._in_flight += 1
            if self._wedge and self._in_flight > 1:
                self._wedged.set()
        if self._wedged.is_set():
            self._never.wait()

    def leave(self) -> None:
        with self._lock:
            self._in_flight -= 1


def _expand(arg: str) -> str:
    return os.path.expanduser(arg) if arg.startswith("~/") else arg


def _execute(body: dict[str, Any]) -> Response:
    command, shell = body.get("command", ""), bool(body.get("shell", False))
    if isinstance(command, str) and not shell:
        command = shlex.split(command)
    if isinstance(command, list):
        command = [_expand(str(arg)) for arg in command]
    try:
        done = subprocess.run(command, shell=shell, capture_output=True, text=True, timeout=EXECUTE_SECONDS)
    except Exception as exc:  # upstream: any failure to run is a 500 with the message
        return JSONResponse({"status": "error", "message": str(exc)}, status_code=500)
    return JSONResponse(
        {"status": "success", "output": done.stdout, "error": done.stderr, "returncode": done.returncode}
    )


def _flood() -> Iterator[bytes]:
    yield b"\x89PNG\r\n\x1a\n"
    chunk = bytes(1 << 20)
    while True:
        yield chunk


def _screenshot(faults: Faults) -> Response:
    if faults.screenshot_flood:
        return StreamingResponse(_flood(), media_type="image/png")
    with mss.mss() as grabber:
        shot = grabber.grab(grabber.monitors[1])
    image = Image.frombuffer("RGB", shot.size, shot.raw, "raw", "BGRX", 0, 1)
    buffer = io.BytesIO()
    image.save(buffer, "PNG", compress_level=1)
    return Response(buffer.getvalue(), media_type="image/png")


def _screen_size() -> Response:
    with mss.mss() as grabber:
        monitor = grabber.monitors[1]
    return JSONResponse({"width": monitor["width"], "height": monitor["height"]})


def _cursor_position() -> Response:
    from Xlib import display

    connection = display.Display()
    try:
        pointer = connection.screen().root.query_pointer()
        return JSONResponse([pointer.root_x, pointer.root_y])
    finally:
        connection.close()


def _run_python(body: dict[str, Any]) -> Response:
    script = Path(tempfile.gettempdir()) / f"python_exec_{uuid.uuid4().hex}.py"
    script.write_text(body.get("code", ""), encoding="utf-8")
    try:
        done = subprocess.run(
            ["/usr/bin/python3", str(script)], capture_output=True, text=True, timeout=RUN_PYTHON_SECONDS
        )
    except subprocess.TimeoutExpired:
        return JSONResponse({"status": "error", "output": "", "error": "TimeoutExpired"}, status_code=500)
    finally:
        script.unlink(missing_ok=True)
    return JSONResponse(
        {
            "status": "success" if done.returncode == 0 else "error",
            "message": done.stdout + done.stderr,
            "need_more": False,
            "output": done.stdout,
            "error": done.stderr,
            "return_code": done.returncode,
        }
    )


def _run_bash_script(body: dict[str, Any], faults: Faults) -> Response:
    script = body.get("script", "")
    if not script.startswith("#!"):
        script = "#!/bin/bash\n" + script
    path = Path(tempfile.gettempdir()) / f"bash_exec_{uuid.uuid4().hex}.sh"
    path.write_text(script, encoding="utf-8")
    try:
        done = subprocess.run(
            ["/bin/bash", str(path)],
            stdout=subprocess.PIPE,
            stderr=subprocess.STDOUT,
            text=True,
            timeout=float(body.get("timeout") or 100),
            cwd=body.get("working_dir") or None,
        )
    except subprocess.TimeoutExpired:
        return JSONResponse({"status": "error", "output": "", "error": "timeout", "returncode": -1}, status_code=500)
    finally:
        path.unlink(missing_ok=True)
    if faults.bash_script_500:
        return JSONResponse({"status": "error", "message": "name '_append_event' is not defined"}, status_code=500)
    status = "success" if done.returncode == 0 else "error"
    return JSONResponse({"status": status, "output": done.stdout, "error": "", "returncode": done.returncode})


def _wmctrl_lines() -> list[str]:
    return subprocess.run(["wmctrl", "-lx"], capture_output=True, text=True, timeout=10).stdout.splitlines()


def _window_action(body: dict[str, Any], flag: str) -> Response:
    options = "-" + ("x" if body.get("by_class") else "") + ("F" if body.get("strict") else "") + flag
    subprocess.run(["wmctrl", options, body.get("window_name", "")], capture_output=True, timeout=10)
    return PlainTextResponse("Window activated successfully" if flag == "a" else "Window closed successfully")


def _open_file(body: dict[str, Any]) -> Response:
    path = Path(os.path.expandvars(os.path.expanduser(body.get("path", ""))))
    if not path.exists():
        return JSONResponse({"status": "error", "message": f"File not found: {path}"}, status_code=404)
    subprocess.Popen(
        ["xdg-open", str(path)], start_new_session=True, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL
    )
    name = body.get("window_name") or path.name
    deadline = time.monotonic() + float(body.get("timeout_seconds") or 1800)
    while time.monotonic() < deadline:
        for line in _wmctrl_lines():
            if name in line:
                subprocess.run(["wmctrl", "-i", "-a", line.split()[0]], capture_output=True, timeout=10)
                return PlainTextResponse(f"File opened and window activated successfully: {path}")
        time.sleep(0.5)
    return JSONResponse({"status": "error", "message": f"no window for {name}"}, status_code=500)


def _list_directory(path: Path) -> dict[str, Any]:
    if path.is_dir():
        return {
            "type": "directory",
            "name": path.name,
            "children": [_list_directory(child) for child in sorted(path.iterdir())],
        }
    return {"type": "file", "name": path.name}


def _window_size(app_class: str) -> Response:
    for line in subprocess.run(["wmctrl", "-lGx"], capture_output=True, text=True, timeout=10).stdout.splitlines():
        fields = line.split(None, 7)
        if len(fields) >= 7 and app_class.lower() in fields[6].lower():
            return JSONResponse({"width": int(fields[4]), "height": int(fields[5])})
    return JSONResponse({"error": "window not found"}, status_code=404)


def _accessibility(reader: AtspiProcess, faults: Faults) -> Response:
    """The tree in OSWorld's XML, walked by symphony-mcp's own AT-SPI reader (elements/osworld_tree.py says how it
    matches upstream's `_create_atspi_node`)."""
    if faults.accessibility_500:
        return JSONResponse({"error": "Failed to connect to the accessibility bus"}, status_code=500)
    if faults.accessibility_file:
        return JSONResponse({"AT": Path(faults.accessibility_file).read_text()})
    walk = {
        "op": "tree",
        "max_depth": osworld_tree.MAX_DEPTH,
        "max_width": osworld_tree.MAX_WIDTH,
        "max_nodes": osworld_tree.MAX_NODES,
        "seconds": osworld_tree.WALK_SECONDS,
    }
    try:
        answer = reader.request(walk, timeout=osworld_tree.WALK_SECONDS + 10)
    except Exception as exc:  # upstream: 500 with the error
        return JSONResponse({"error": str(exc)}, status_code=500)
    return JSONResponse({"AT": osworld_tree.tree_xml(answer)})


def build_app(faults: Faults) -> Starlette:
    """The controller's routes; each handler is synchronous (Starlette runs it on a worker thread, as Flask's
    threaded server does), all behind the gate that can wedge."""
    gate = _Gate(faults.wedge_when_parallel)
    reader = AtspiProcess()

    async def json_body(request: Request) -> dict[str, Any]:
        try:
            body = await request.json()
        except ValueError:
            return {}
        return body if isinstance(body, dict) else {}

    def gated(handler: Any) -> Any:
        async def endpoint(request: Request) -> Response:
            import anyio

            body: Any = None
            if request.headers.get("content-type", "").startswith("application/json"):
                body = await json_body(request)
            elif request.method == "POST":
                form = await request.form()
                body = {key: (await value.read() if hasattr(value, "read") else value) for key, value in form.items()}

            def run() -> Response:
                gate.enter()
                try:
                    return handler(body or {})  # type: ignore[no-any-return]
                finally:
                    gate.leave()

            return await anyio.to_thread.run_sync(run)

        return endpoint

    def upload(body: dict[str, Any]) -> Response:
        path = Path(os.path.expandvars(os.path.expanduser(str(body.get("file_path", "")))))
        path.parent.mkdir(parents=True, exist_ok=True)
        data = body.get("file_data", b"")
        path.write_bytes(data)
        return PlainTextResponse(f"File Uploaded: {len(data)} bytes")

    def get_file(body: dict[str, Any]) -> Response:
        path = Path(os.path.expandvars(os.path.expanduser(str(body.get("file_path", "")))))
        if not path.is_file():
            return JSONResponse({"error": "File not found"}, status_code=404)
        return Response(path.read_bytes(), media_type="application/octet-stream")

    def launch(body: dict[str, Any]) -> Response:
        command, shell = body.get("command", ""), bool(body.get("shell", False))
        if isinstance(command, str) and not shell:
            command = shlex.split(command)
        subprocess.Popen(
            command, shell=shell, start_new_session=True, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL
        )
        return PlainTextResponse(f"{command} launched successfully")

    routes = {
        ("GET", "/screenshot"): lambda _: _screenshot(faults),
        ("POST", "/execute"): _execute,
        ("POST", "/setup/execute"): _execute,
        ("POST", "/run_python"): _run_python,
        ("POST", "/run_bash_script"): lambda body: _run_bash_script(body, faults),
        ("POST", "/setup/launch"): launch,
        ("POST", "/setup/open_file"): _open_file,
        ("POST", "/setup/activate_window"): lambda body: _window_action(body, "a"),
        ("POST", "/setup/close_window"): lambda body: _window_action(body, "c"),
        ("POST", "/setup/upload"): upload,
        ("POST", "/file"): get_file,
        ("GET", "/accessibility"): lambda _: _accessibility(reader, faults),
        ("GET", "/cursor_position"): lambda _: _cursor_position(),
        ("POST", "/screen_size"): lambda _: _screen_size(),
        ("GET", "/platform"): lambda _: PlainTextResponse("Linux"),
        ("POST", "/desktop_path"): lambda _: JSONResponse({"desktop_path": os.path.expanduser("~/Desktop")}),
        ("POST", "/list_directory"): lambda body: JSONResponse(
            {"directory_tree": _list_directory(Path(os.path.expanduser(body.get("path", "~"))))}
        ),
        ("POST", "/window_size"): lambda body: _window_size(str(body.get("app_class_name", ""))),
    }
    return Starlette(
        routes=[Route(path, gated(handler), methods=[method]) for (method, path), handler in routes.items()]
    )
