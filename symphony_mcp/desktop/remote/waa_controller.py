"""The HTTP client of WindowsAgentArena's in-VM server (its Flask `main.py`, port 5000), made safe for what breaks a
naive one.

WAA's server is OSWorld's controller grown for Windows, so this is `OsworldController` (one lock per machine, only
reads retried, the exit status of `/execute` decides) plus what WAA adds or changes (RESEARCH-NEXT §2.1, §8):
- `/execute_windows` runs Python *inside the server process* (`exec`), where pyautogui is already imported and its
  pause is 0: an action costs one request and no interpreter start. It answers only success or failure (500 with
  the exception, or when what the code printed holds "error"), so a value comes back through a file the code
  writes and `/file` reads (`ask`).
- `/cursor_position` always answers 500 (it returns a bare tuple, which Flask rejects): the cursor is asked for
  inside the server instead, and that route is never called.
- Its checks answer "no" as HTTP 400 (`/file_exists`, `/folder_exists`, ...): `exists` turns 200/400 into a bool.
- `/accessibility` walks the UIA tree with pywinauto only when asked for `?backend=uia` (win32 by default).
- `/setup/launch` gives no process id, and on upstream's a194956 forces a shell: `launch` sends one command line.
"""

from __future__ import annotations

import json
import threading
import uuid
from typing import Any

from symphony_mcp.desktop.remote.osworld_controller import ACCESSIBILITY_SECONDS, OsworldController
from symphony_mcp.errors import RemoteActionError, clip

# Appended to the code `ask` runs: it writes the code's `answer` where `/file` then reads it (same process, same ~).
_WRITE_ANSWER = """
import json as _symphony_json, os as _symphony_os
with open(_symphony_os.path.expanduser({path!r}), "w", encoding="utf-8") as _symphony_file:
    _symphony_json.dump(answer, _symphony_file)
"""
_NO = 400  # WAA's routes answer a false check with HTTP 400


class WaaController(OsworldController):
    """One WAA machine's server: one HTTP client, one lock. Get it with `shared_client(WaaController, url, ...)`."""

    def __init__(self, url: str, read_timeout: float) -> None:
        super().__init__(url, read_timeout)
        self._answer_path = f"~/.symphony-waa-answer-{uuid.uuid4().hex[:12]}.json"
        self._ask_lock = threading.Lock()  # one answer file per client: an ask's write and read go together

    def probe(self) -> bool:
        """Whether the server answers `/probe` (WAA's health check, polled after a reset)."""
        return self._request("GET", "/probe", idempotent=True).status_code == 200

    def run(self, code: str, what: str, timeout: float | None = None) -> None:
        """Run Python in the server process (`/execute_windows`); an exception there is a RemoteActionError.
        `timeout`: for code that takes long on purpose (a glide, long text), beyond the read timeout."""
        response = self._request(
            "POST", "/execute_windows", idempotent=False, json={"command": code}, answers=(500,), timeout=timeout
        )
        if response.status_code != 200:
            try:
                why = str(response.json().get("message", response.text))
            except ValueError:
                why = response.text
            raise RemoteActionError(f"{what} failed on {self.url}: {clip(why.strip() or 'no reason given')}")

    def ask(self, code: str, what: str) -> Any:
        """The JSON value `code` assigns to `answer`, computed in the server process."""
        with self._ask_lock:
            self.run(code + _WRITE_ANSWER.format(path=self._answer_path), what)
            return json.loads(self.download(self._answer_path))

    def cursor(self) -> tuple[int, int]:
        x, y = self.ask("import pyautogui\nanswer = list(pyautogui.position())", "reading the pointer")
        return int(x), int(y)

    def accessibility_tree(self) -> str:
        """The UIA tree (pywinauto's `uia` backend, which WAA's client asks for) as WAA's XML."""
        timeout = max(self._read_timeout, ACCESSIBILITY_SECONDS)
        response = self._request("GET", "/accessibility", idempotent=True, timeout=timeout, params={"backend": "uia"})
        return str(response.json()["AT"])

    def exists(self, route: str, payload: dict[str, str]) -> bool:
        """A WAA check route (`/file_exists`, `/folder_exists`, ...): 200 is yes, 400 is no."""
        response = self._request("POST", route, idempotent=True, json=payload, answers=(_NO,))
        return response.status_code == 200

    def setup(self, route: str, payload: dict[str, Any], timeout: float | None = None) -> str:
        """A `/setup/...` step of a task (launch, open_file, create_file, close_all, ...): its answer's text."""
        return self._request("POST", f"/setup/{route}", idempotent=False, json=payload, timeout=timeout).text

