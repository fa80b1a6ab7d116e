"""The `CodeExecutor` of a WindowsAgentArena machine: blocks run there through its server, never on this host.

A block is uploaded as a file (`/setup/upload`: no command-line length limit, which is 32,767 characters on
Windows), then one `/execute` runs it with the server's own Python (`sys.executable`, asked once: WAA's machine has
no `python3`, a Linux one may have no `python`) through a small runner that works on Windows and Linux alike: it
makes the work directory, runs the block there (python: the server's Python; bash: `bash`, which a Windows machine
lacks, saying so), stops it at the timeout, removes the file and exits with the block's status. `/execute` answers
200 with that status whatever it is, and is sent once. The machine is the sandbox: nothing confines the block.
"""

from __future__ import annotations

import asyncio
import time
import uuid
from pathlib import Path, PurePosixPath

from symphony_mcp.code.remote import check_block, remote_run
from symphony_mcp.code.types import CodeRun, Language
from symphony_mcp.config import CodeSettings
from symphony_mcp.desktop.remote import waa_code
from symphony_mcp.desktop.remote.osworld_controller import CommandResult
from symphony_mcp.desktop.remote.waa_controller import WaaController

WAA_WORKDIR = PurePosixPath("~/symphony-code")  # under the server user's home (C:\Users\Docker on WAA's VM)
_TIMED_OUT = 128 + 9  # the runner's status for a block it stopped at the timeout (_RUNNER says it too)
_RUNNER = """
import os, shutil, subprocess, sys
block, directory, language, seconds = sys.argv[1:5]
block, directory = os.path.expanduser(block), os.path.expanduser(directory)
try:
    os.makedirs(directory, exist_ok=True)
    program = sys.executable if language == "python" else shutil.which("bash")
    if program is None:
        sys.stderr.write("bash is not installed on this machine; run the block as python\\n")
        sys.exit(127)
    try:
        status = subprocess.run([program, block], cwd=directory, timeout=float(seconds)).returncode
    except subprocess.TimeoutExpired:
        status = 137  # stopped at the timeout: what a shell reports for SIGKILL
finally:
    os.remove(block)
sys.exit(status)
"""


class WaaExecutor:
    """Runs run_code's blocks on the WAA machine; `default_workdir` is a path there."""

    def __init__(self, controller: WaaController, settings: CodeSettings) -> None:
        self.controller = controller
        self.settings = settings
        self.default_workdir = Path(settings.workdir or WAA_WORKDIR)
        self._python: str | None = None

    async def run(self, language: Language, code: str, timeout_s: float, workdir: Path | None = None) -> CodeRun:
        check_block(self.settings, language, timeout_s, "server")
        directory = PurePosixPath(self.default_workdir) / PurePosixPath(str(workdir or "."))
        started = time.monotonic()
        result = await asyncio.to_thread(self._run, language, code, timeout_s, str(directory))
        return remote_run(self.settings, language, result, started, timeout_s, (_TIMED_OUT,), str(directory))

    def _run(self, language: Language, code: str, timeout_s: float, directory: str) -> CommandResult:
        if self._python is None:
            self._python = str(self.controller.ask(waa_code.SERVER_PYTHON, "finding the server's Python"))
        block = f"~/.symphony-block-{uuid.uuid4().hex[:12]}.{'py' if language == 'python' else 'sh'}"
        self.controller.upload(block, code.encode("utf-8"))
        argv = [self._python, "-c", _RUNNER, block, directory, language, f"{timeout_s:g}"]
        return self.controller.execute(argv, timeout_s + 5)
