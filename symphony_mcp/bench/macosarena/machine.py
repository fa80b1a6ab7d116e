"""One MacOSArena machine as the adapter uses it: reached over SSH with its host key checked (again after the runner's
reset of it), its setup commands and checks run on it, and the settings that put a task's symphony-mcp server on it
(the SSH backend)."""

from __future__ import annotations

import time
from dataclasses import dataclass
from pathlib import Path

from symphony_mcp.bench.macosarena.getters import ShellOutput
from symphony_mcp.desktop.remote.ssh_machine import CommandResult, HostKeyRefusedError, SshMachine
from symphony_mcp.errors import DisplayUnavailableError, SymphonyError

COMMAND_SECONDS = 120.0  # a setup command or a check (conda list on a cold machine takes tens of seconds)
OUTPUT_CAP = 1 << 20
_RECONNECT_PAUSE = 2.0


class SetupError(SymphonyError):
    """A task's setup did not complete on its machine (a command failed, no machine for the environment)."""


@dataclass(frozen=True)
class MachineAccess:
    """How to reach one machine and start the SSH backend's agent on it."""

    url: str  # ssh://user@host:port
    known_hosts: Path
    key_file: Path | None = None
    python: str = "python3"
    display: str = ":0"  # an X11 machine's display (a Mac has none)

    def server_env(self) -> dict[str, str]:
        """The settings of a symphony-mcp server acting on this machine through the SSH backend."""
        env = {
            "SYMPHONY_DESKTOP__BACKEND": "ssh",
            "SYMPHONY_DESKTOP__URL": self.url,
            "SYMPHONY_DESKTOP__SSH_KNOWN_HOSTS": str(self.known_hosts),
            "SYMPHONY_DESKTOP__SSH_PYTHON": self.python,
            "SYMPHONY_DESKTOP__SSH_DISPLAY": self.display,
        }
        if self.key_file is not None:
            env["SYMPHONY_DESKTOP__SSH_KEY_FILE"] = str(self.key_file)
        return env


class ArenaMachine:
    """The connection the adapter keeps to one machine (the task's server makes its own)."""

    def __init__(self, access: MachineAccess) -> None:
        self.access = access
        self._ssh = SshMachine(access.url, access.known_hosts, access.key_file, access.python, access.display)

    @property
    def platform(self) -> str:
        return self._ssh.hello().platform

    def sh(self, script: str) -> ShellOutput:
        """`script` run by /bin/sh as the SSH user (the checks)."""
        return self._output(self._ssh.run(["sh", "-c", script], b"", COMMAND_SECONDS, OUTPUT_CAP))

    def command(self, line: str) -> ShellOutput:
        """A setup command as MacOSArena runs it: the line given to the user's login shell (zsh on a Mac)."""
        return self._output(self._ssh.shell(line, b"", COMMAND_SECONDS, OUTPUT_CAP))

    @staticmethod
    def _output(result: CommandResult) -> ShellOutput:
        text = (result.stdout.decode("utf-8", "replace"), result.stderr.decode("utf-8", "replace"))
        return ShellOutput(result.status, *text)

    def wait_for_login(self, timeout: float) -> None:
        """Log in and start the agent, trying again while the machine is not up yet (a refused host key is final)."""
        deadline = time.monotonic() + timeout
        while True:
            try:
                self._ssh.hello()
                return
            except HostKeyRefusedError:
                raise
            except DisplayUnavailableError:
                if time.monotonic() > deadline:
                    raise
                time.sleep(_RECONNECT_PAUSE)

    def close(self) -> None:
        self._ssh.close()
