"""A stand-in for WindowsAgentArena's in-VM server (`vm/setup/server/main.py`, port 5000) on this process's X display:
the routes of WAA's contract that can run on Linux, done for real (mss screenshots, pyautogui in this process, real
processes and files, wmctrl), answering in upstream's shapes, with upstream's quirks:
- `/cursor_position` always answers 500 (upstream returns a bare tuple, which Flask rejects);
- `/execute_windows` runs the code in this process with `computer` and `human` in its globals and answers only
  success, or 500 with the exception (also when what the code printed holds "error");
- `/setup/launch` runs its command through a shell whatever `shell` says (upstream a194956), so a list loses its
  arguments to the shell;
- checks answer "no" as HTTP 400 (`/file_exists`, `/folder_exists`, `/setup/create_folder` on failure, ...);
- `/setup/upload` does not make the file's folder (upstream's `file.save`), `/revert_to_snapshot` answers 501;
- `/setup/clear_task_files` empties the Downloads folder (~/Downloads here, C:\\Users\\Docker\\Downloads upstream);
  `/setup/close_all` closes every window but PowerShell's (wmctrl here, pygetwindow upstream).
Windows-only routes (UIA checks, `/obs_winagent`, `/update_computer`, the File Explorer and Clock checks) answer 500
saying so: what a client gets from them is untested here. Written from the route list of RESEARCH-NEXT §2.1 and
§8 and WAA's public server; no upstream code.
"""

from __future__ import annotations

import contextlib
import io
import os
import shutil
import subprocess
import time
from pathlib import Path
from typing import Any

import httpx
from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import JSONResponse, PlainTextResponse, Response
from starlette.routing import Route

from symphony_mcp.elements.atspi_process import AtspiProcess

# The routes WAA's server shares with OSWorld's, as the OSWorld stand-in does them (its module keeps their names).
from testkit.osworld_controller.app import Faults
from testkit.osworld_controller.app import _accessibility as accessibility
from testkit.osworld_controller.app import _execute as execute
from testkit.osworld_controller.app import _list_directory as list_directory
from testkit.osworld_controller.app import _screen_size as screen_size
from testkit.osworld_controller.app import _screenshot as screenshot

WINDOWS_ONLY = (
    "/obs_winagent",
    "/update_computer",
    "/is_details_view",
    "/are_files_sorted_by_modified_time",
    "/is_directory_read_only_for_user",
    "/are_all_images_tagged",
    "/library_folders",
    "/check_if_timer_started",
    "/check_if_world_clock_exists",
)
_KEPT_WINDOWS = ("powershell",)  # what /setup/close_all leaves open, as upstream does


class NaviOnly:
    """`computer` and `human` in `/execute_windows`' globals: upstream's Navi objects (set-of-marks pointer, human
    input), which are not part of this stand-in; using one says so."""

    def __init__(self, name: str) -> None:
        self._name = name

    def __getattr__(self, attribute: str) -> Any:
        raise NotImplementedError(f"{self._name}.{attribute}: WAA's Navi objects are not part of this stand-in")


def _path(text: object) -> Path:
    return Path(os.path.expandvars(os.path.expanduser(str(text))))


def _execute_windows(body: dict[str, Any]) -> Response:
    printed = io.StringIO()
    try:
        with contextlib.redirect_stdout(printed):
            exec(str(body.get("command", "")), {"computer": NaviOnly("computer"), "human": NaviOnly("human")})
        if "error" in printed.getvalue().lower():
            raise RuntimeError(printed.getvalue())
    except Exception as exc:  # upstream: any failure is a 500 with the message
        return JSONResponse({"status": "error", "message": str(exc)}, status_code=500)
    return JSONResponse({"status": "success"})


def _launch(body: dict[str, Any]) -> Response:
    command = body.get("command", "")
    subprocess.Popen(command, shell=True, start_new_session=True, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    return PlainTextResponse(f"{command} launched successfully")


def _exists(body: dict[str, Any], key: str, is_kind: str) -> Response:
    if key not in body or "path" not in body:
        return JSONResponse({"error": f"{key} and path are required"}, status_code=400)
    found = _path(body["path"]) / str(body[key])
    if getattr(found, is_kind)():
        return JSONResponse({"status": "success", "message": f"{body[key]} exists in {body['path']}."})
    return JSONResponse({"status": "error", "message": f"{body[key]} does not exist in {body['path']}."}, 400)


def _create_folder(body: dict[str, Any]) -> Response:
    if "path" not in body:
        return JSONResponse({"error": "path required"}, status_code=400)
    try:
        _path(body["path"]).mkdir(parents=True, exist_ok=True)
    except OSError:
        return JSONResponse({"status": "error", "message": f"Failed to create {body['path']}."}, status_code=400)
    return JSONResponse({"status": "success", "message": f"{body['path']} created."})


def _create_file(body: dict[str, Any]) -> Response:
    if "path" not in body:
        return JSONResponse({"error": "path required"}, status_code=400)
    path = _path(body["path"]).resolve()
    if path.is_dir():
        return JSONResponse({"status": "error", "message": "path is not a file"}, status_code=400)
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(str(body.get("content", "")), encoding="utf-8")
    return JSONResponse({"status": "success", "message": f"{path} created."})


def _recycle(body: dict[str, Any]) -> Response:
    trash = _path("~/.local/share/Trash/files")
    try:
        trash.mkdir(parents=True, exist_ok=True)
        shutil.move(str(_path(body["path"])), trash / _path(body["path"]).name)
    except (KeyError, OSError):
        return JSONResponse({"status": "error", "message": f"Failed to recycle {body.get('path')}"}, status_code=400)
    return JSONResponse({"status": "success", "message": f"{body['path']} recycled"})


def _upload(body: dict[str, Any]) -> Response:
    if "file_path" not in body or "file_data" not in body:
        return JSONResponse({"error": "file_path and file_data are required"}, status_code=400)
    path = _path(body["file_path"])
    try:
        path.write_bytes(body["file_data"])
    except OSError as exc:  # upstream's file.save: no folder is made
        return JSONResponse({"status": "error", "message": str(exc)}, status_code=500)
    return PlainTextResponse("File Uploaded")


def _get_file(body: dict[str, Any]) -> Response:
    path = _path(body.get("file_path", ""))
    if not path.is_file():
        return JSONResponse({"error": "File not found"}, status_code=404)
    return Response(path.read_bytes(), media_type="application/octet-stream")


def _open_file(body: dict[str, Any]) -> Response:
    path = _path(body.get("path", ""))
    if not path.exists():
        return PlainTextResponse(f"File not found: {path}", status_code=404)
    subprocess.Popen(
        ["xdg-open", str(path)], start_new_session=True, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL
    )
    time.sleep(0.5)  # upstream sleeps 5 s for the application to come up
    return PlainTextResponse("File opened successfully")


def _window_action(body: dict[str, Any], flag: str) -> Response:
    if not body.get("window_name"):
        return PlainTextResponse("window_name required", status_code=400)
    options = "-" + ("x" if body.get("by_class") else "") + ("F" if body.get("strict") else "") + flag
    subprocess.run(["wmctrl", options, str(body["window_name"])], capture_output=True, timeout=10)
    return PlainTextResponse("Window activated successfully" if flag == "a" else "Window closed successfully.")


def _close_all(_: dict[str, Any]) -> Response:
    listing = subprocess.run(["wmctrl", "-l"], capture_output=True, text=True, timeout=10).stdout
    for line in listing.splitlines():
        fields = line.split(None, 3)
        title = fields[3] if len(fields) == 4 else ""
        if title and not any(kept in title.lower() for kept in _KEPT_WINDOWS):
            subprocess.run(["wmctrl", "-i", "-c", fields[0]], capture_output=True, timeout=10)
    return PlainTextResponse("All windows closed successfully.")


def _clear_task_files(_: dict[str, Any]) -> Response:
    downloads = _path("~/Downloads")
    removed = []
    for entry in sorted(downloads.iterdir()) if downloads.is_dir() else []:
        if entry.is_file() and entry.name != "desktop.ini":
            entry.unlink()
            removed.append(str(entry))
    if not removed:
        return PlainTextResponse(f"No task files to clear from {str(downloads)!r}.")
    return PlainTextResponse(f"All task files ({removed}) cleared successfully from {str(downloads)!r}.")


def _download_file(body: dict[str, Any]) -> Response:
    url, path = body.get("url"), body.get("path")
    if not url or not path:
        return PlainTextResponse("Path or URL not supplied!", status_code=400)
    target = _path(path)
    target.parent.mkdir(parents=True, exist_ok=True)
    try:
        answer = httpx.get(str(url), timeout=60, follow_redirects=True)
        answer.raise_for_status()
    except httpx.HTTPError as exc:
        return PlainTextResponse(f"Failed to download {url}. No retries left. Error: {exc}", status_code=500)
    target.write_bytes(answer.content)
    return PlainTextResponse("File downloaded successfully")


def _folder_path(name: str) -> Response:
    path = _path(f"~/{name}")
    key = f"{name.lower()}_path"
    if path.is_dir():
        return JSONResponse({key: str(path)})
    return JSONResponse({"error": f"Unsupported operating system or {name.lower()} path not found"}, status_code=400)


def build_app() -> Starlette:
    """The routes; each handler is synchronous and runs on a worker thread, as under Flask's threaded server."""
    import pyautogui  # upstream imports it at start, on the server's display, with no pause between calls

    pyautogui.PAUSE = 0
    reader = AtspiProcess()

    def with_body(handler: Any) -> Any:
        async def endpoint(request: Request) -> Response:
            import anyio

            body: Any = {}
            if request.headers.get("content-type", "").startswith("application/json"):
                with contextlib.suppress(ValueError):
                    body = await request.json()
            elif request.method == "POST":
                form = await request.form()
                body = {key: (await value.read() if hasattr(value, "read") else value) for key, value in form.items()}
            return await anyio.to_thread.run_sync(handler, body if isinstance(body, dict) else {})  # type: ignore[no-any-return]

        return endpoint

    def windows_only(route: str) -> Any:
        return lambda _: JSONResponse(
            {"status": "error", "message": f"{route} needs Windows (UIA, win32): not part of this stand-in"}, 500
        )

    routes: dict[tuple[str, str], Any] = {
        ("GET", "/probe"): lambda _: JSONResponse({"status": "Probe successful", "message": "Service is operational"}),
        ("GET", "/platform"): lambda _: PlainTextResponse("Linux"),
        ("POST", "/screen_size"): lambda _: screen_size(),
        ("GET", "/screenshot"): lambda _: screenshot(Faults()),  # no faults: WAA's screenshot as is
        ("GET", "/cursor_position"): lambda _: JSONResponse(
            {"status": "error", "message": "The view function did not return a valid response tuple."}, 500
        ),
        ("POST", "/execute"): execute,
        ("POST", "/setup/execute"): execute,
        ("POST", "/execute_windows"): _execute_windows,
        ("POST", "/setup/launch"): _launch,
        ("POST", "/setup/open_file"): _open_file,
        ("POST", "/setup/activate_window"): lambda body: _window_action(body, "a"),
        ("POST", "/setup/close_window"): lambda body: _window_action(body, "c"),
        ("POST", "/setup/close_all"): _close_all,
        ("POST", "/setup/clear_task_files"): _clear_task_files,
        ("POST", "/setup/create_folder"): _create_folder,
        ("POST", "/setup/create_file"): _create_file,
        ("POST", "/setup/recycle"): _recycle,
        ("POST", "/setup/download_file"): _download_file,
        ("POST", "/setup/upload"): _upload,
        ("POST", "/file"): _get_file,
        ("POST", "/folder_exists"): lambda body: _exists(body, "folder_name", "is_dir"),
        ("POST", "/file_exists"): lambda body: _exists(body, "file_name", "is_file"),
        ("POST", "/desktop_path"): lambda _: _folder_path("Desktop"),
        ("POST", "/documents_path"): lambda _: _folder_path("Documents"),
        ("POST", "/list_directory"): lambda body: JSONResponse(
            {"directory_tree": list_directory(_path(body.get("path", "~")))}
        ),
        ("GET", "/accessibility"): lambda _: accessibility(reader, Faults()),
        ("POST", "/revert_to_snapshot"): lambda _: JSONResponse({"error": "Restore snapshot no implemented"}, 501),
        **{("POST", route): windows_only(route) for route in WINDOWS_ONLY if route != "/obs_winagent"},
        ("GET", "/obs_winagent"): windows_only("/obs_winagent"),
    }
    return Starlette(
        routes=[Route(path, with_body(handler), methods=[method]) for (method, path), handler in routes.items()]
    )
