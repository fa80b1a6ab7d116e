"""The HTTP client of OSWorld's in-VM controller (its Flask server, port 5000), made safe for what breaks a naive one.

- Calls to one machine are serialised: a few parallel requests wedge that server for good (RESEARCH-NEXT §8), so
  every client of a URL (the desktop thread, the code tools) shares one `OsworldController` and its lock.
- A request is sent again only when it cannot have run twice: reads (screenshot, cursor, files) after any transport
  failure, anything else only when the connection was never made. Scripts go through `/execute`, never
  `/run_bash_script`, which runs the script and then answers 500.
- `/execute` answers 200 for a command that failed: the exit status and stderr decide, never the HTTP status.
- An answer is read up to `limits.MAX_REMOTE_ANSWER` bytes and refused beyond: the machine is not trusted to bound it.
"""

from __future__ import annotations

import json
import socket
import threading
import time
from dataclasses import dataclass
from typing import Any, TypeVar

import httpx

from symphony_mcp.errors import DisplayUnavailableError, RemoteActionError, clip
from symphony_mcp.limits import MAX_REMOTE_ANSWER

READ_ATTEMPTS = 3
_RETRY_PAUSE_SECONDS = 0.3
ACCESSIBILITY_SECONDS = 120  # a Chromium page and a GTK window took 1.85 s upstream; a big Calc sheet far longer
COMMAND_SECONDS = 120  # the controller's own bound on one /execute
_ANSWER_MARGIN_SECONDS = 15  # beyond a command's bound, for the controller to answer
# Nagle off, as requests/urllib3 do: httpx sends a POST's headers and body in two writes, and the second must not
# wait for the machine's delayed ACK of the first.
_SOCKET_OPTIONS = [(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)]
_SYS_PLATFORMS = {"Linux": "linux", "Darwin": "darwin", "Windows": "win32"}


@dataclass(frozen=True)
class Answer:
    """A controller's answer, its body read whole (decoded) and bounded: what the routes' callers read of it."""

    status_code: int
    content: bytes
    encoding: str

    @property
    def text(self) -> str:
        return self.content.decode(self.encoding, errors="replace")

    def json(self) -> Any:
        return json.loads(self.content)


@dataclass(frozen=True)
class CommandResult:
    """What the machine's command did: its exit status and its output."""

    returncode: int
    output: str
    error: str

    @property
    def ok(self) -> bool:
        return self.returncode == 0


class OsworldController:
    """One machine's controller: one HTTP client, one lock. Get it with `controller_for(url, ...)`."""

    def __init__(self, url: str, read_timeout: float) -> None:
        self.url = url.rstrip("/")
        self._read_timeout = read_timeout
        transport = httpx.HTTPTransport(socket_options=_SOCKET_OPTIONS)
        self._client = httpx.Client(base_url=self.url, timeout=read_timeout, transport=transport)
        self._lock = threading.Lock()

    # --- reads: idempotent, retried ---------------------------------------------------------------
    def screenshot(self) -> bytes:
        return self._request("GET", "/screenshot", idempotent=True).content

    def screen_size(self) -> tuple[int, int]:
        answer = self._request("POST", "/screen_size", idempotent=True).json()
        return int(answer["width"]), int(answer["height"])

    def platform(self) -> str:
        """The machine's OS as Python's sys.platform names it (the controller answers platform.system(): Linux)."""
        system = self._request("GET", "/platform", idempotent=True).text.strip()
        return _SYS_PLATFORMS.get(system, system.lower())

    def cursor(self) -> tuple[int, int]:
        x, y = self._request("GET", "/cursor_position", idempotent=True).json()
        return int(x), int(y)

    def accessibility_tree(self) -> str:
        """The machine's accessibility tree, OSWorld's XML (a walk of every application: seconds, not ms)."""
        timeout = max(self._read_timeout, ACCESSIBILITY_SECONDS)
        return str(self._request("GET", "/accessibility", idempotent=True, timeout=timeout).json()["AT"])

    def download(self, path: str) -> bytes:
        return self._request("POST", "/file", idempotent=True, data={"file_path": path}).content

    # --- writes and commands: sent once ---------------------------------------------------------
    def upload(self, path: str, data: bytes) -> None:
        self._request("POST", "/setup/upload", idempotent=True, data={"file_path": path}, files={"file_data": data})

    def execute(self, argv: list[str] | str, timeout: float = COMMAND_SECONDS, *, shell: bool = False) -> CommandResult:
        """Run a program on the machine (a list without shell; a string with `shell`, or split by the controller
        without) and wait for it; a failed run is a result, not an error."""
        response = self._request(
            "POST",
            "/execute",
            idempotent=False,
            json={"command": argv, "shell": shell},
            timeout=min(timeout, COMMAND_SECONDS) + _ANSWER_MARGIN_SECONDS,
        )
        answer: dict[str, Any] = response.json()
        if answer.get("status") != "success" or "returncode" not in answer:
            what = argv if isinstance(argv, str) else argv[0]
            raise RemoteActionError(f"{self.url} did not run {clip(what)}: {clip(str(answer))}")
        return CommandResult(int(answer["returncode"]), answer.get("output") or "", answer.get("error") or "")

    # --- OSWorld's setup routes (what its SetupController posts), sent once ---------------------------
    def launch(self, command: list[str] | str, shell: bool = False) -> None:
        """`/setup/launch`: start a program in the background on the machine (the controller does not wait)."""
        self._request("POST", "/setup/launch", idempotent=False, json={"command": command, "shell": shell})

    def open_file(self, path: str, timeout: float) -> None:
        """`/setup/open_file`: open a file (or an application on the machine's PATH) and wait until a window whose
        title holds its name is there, at most `timeout` seconds (upstream's own bound is 1800 s)."""
        self._request(
            "POST",
            "/setup/open_file",
            idempotent=False,
            json={"path": path, "timeout_seconds": timeout},
            timeout=timeout + _ANSWER_MARGIN_SECONDS,
        )

    def window_step(self, action: str, window_name: str, strict: bool, by_class: bool) -> None:
        """`/setup/activate_window` or `/setup/close_window` (`action`: activate, close); upstream answers 200
        whether a window matched or not."""
        body = {"window_name": window_name, "strict": strict, "by_class": by_class}
        self._request("POST", f"/setup/{action}_window", idempotent=False, json=body)

    def check(self, argv: list[str], what: str, timeout: float = COMMAND_SECONDS) -> str:
        """Run a program that must succeed: its output, or a RemoteActionError saying what failed and why."""
        result = self.execute(argv, timeout)
        if not result.ok:
            why = (result.error or result.output).strip() or "no output"
            raise RemoteActionError(f"{what} failed on {self.url} (exit status {result.returncode}): {clip(why)}")
        return result.output

    def close(self) -> None:
        self._client.close()

    def _request(
        self,
        method: str,
        path: str,
        *,
        idempotent: bool,
        timeout: float | None = None,
        answers: tuple[int, ...] = (),
        **kw: Any,
    ) -> Answer:
        """The answer of a status below 400 or in `answers` (a route that says "no" with 400, as WAA's do)."""
        attempts = READ_ATTEMPTS if idempotent else 2
        with self._lock:
            for attempt in range(1, attempts + 1):
                try:
                    response = self._send(method, path, timeout or self._read_timeout, **kw)
                except httpx.ConnectError as exc:  # never reached the machine: nothing ran, safe to send again
                    failure: Exception = exc
                except httpx.TransportError as exc:
                    if not idempotent:
                        raise RemoteActionError(
                            f"{method} {path} to {self.url} got no answer ({type(exc).__name__}); it may have run, "
                            "so it is not sent again"
                        ) from exc
                    failure = exc
                else:
                    if response.status_code < 400 or response.status_code in answers:
                        return response
                    if response.status_code >= 500 and idempotent and attempt < attempts:
                        time.sleep(_RETRY_PAUSE_SECONDS)
                        continue
                    raise RemoteActionError(
                        f"{method} {path} to {self.url} answered HTTP {response.status_code}: {clip(response.text)}"
                    )
                if attempt < attempts:
                    time.sleep(_RETRY_PAUSE_SECONDS * attempt)
            raise DisplayUnavailableError(f"the controller at {self.url} cannot be reached: {failure}")

    def _send(self, method: str, path: str, timeout: float, **kw: Any) -> Answer:
        """The answer, its body read whole but refused past `MAX_REMOTE_ANSWER` bytes or when it trickles in for
        longer than twice `timeout` (each read is bounded by `timeout` alone); a refusal is not retried. The chunks
        are joined once into the answer (a screenshot's bytes are copied once, not rebuilt into a second response)."""
        request = self._client.build_request(method, path, timeout=timeout, **kw)
        response = self._client.send(request, stream=True)
        deadline = time.monotonic() + 2 * timeout
        refused = f"{method} {path} to {self.url}: the answer was refused,"
        try:
            declared = response.headers.get("content-length", "")
            if declared.isdigit() and int(declared) > MAX_REMOTE_ANSWER:
                raise RemoteActionError(f"{refused} {int(declared):,} bytes, more than {MAX_REMOTE_ANSWER:,}")
            chunks: list[bytes] = []
            size = 0
            for chunk in response.iter_bytes():  # decoded: a compressed answer is bounded by what it unpacks to
                chunks.append(chunk)
                size += len(chunk)
                if size > MAX_REMOTE_ANSWER:
                    raise RemoteActionError(f"{refused} more than {MAX_REMOTE_ANSWER:,} bytes")
                if time.monotonic() > deadline:
                    raise RemoteActionError(f"{refused} still coming after {2 * timeout:g} s ({size:,} bytes)")
        finally:
            response.close()
        return Answer(response.status_code, b"".join(chunks), response.encoding or "utf-8")


Client = TypeVar("Client", bound=OsworldController)
_clients: dict[tuple[type[OsworldController], str], OsworldController] = {}
_clients_lock = threading.Lock()


def shared_client(kind: type[Client], url: str, read_timeout: float) -> Client:
    """The one client of `kind` (OSWorld's controller, WAA's server) for a machine in this process, shared by every
    caller, the desktop and the code tools (so calls to it are serialised)."""
    key = (kind, url.rstrip("/"))
    with _clients_lock:
        found = _clients.get(key)
        if not isinstance(found, kind):
            found = _clients[key] = kind(key[1], read_timeout)
        return found


def controller_for(url: str, read_timeout: float) -> OsworldController:
    """The one OSWorld controller client of a machine in this process."""
    return shared_client(OsworldController, url, read_timeout)
