"""One SSH connection to a remote machine (paramiko), shared by its desktop and its code executor.

On connecting, the agent (ssh_agent.py) is uploaded over SFTP once, to a path named by its content hash, and run
for the session on one channel that speaks JSON lines: an action is one round trip on a warm channel, where
MacOSArena uploads a script and starts `sudo python3` for every action. Commands (the code tools) run on channels of
their own on the same connection, with their exit status read. The host key is checked against the known_hosts
file the user gives; a key it lacks or that differs is refused. A dropped connection is made again on the next call;
a read (screenshot, cursor) is retried once on the new connection, an action is reported as not known to have run.
"""

from __future__ import annotations

import hashlib
import json
import secrets
import shlex
import socket
import stat
import threading
import time
from dataclasses import dataclass
from pathlib import Path, PurePosixPath
from typing import Any
from urllib.parse import urlsplit

import paramiko

from symphony_mcp.errors import DisplayUnavailableError, RemoteActionError, clip
from symphony_mcp.limits import MAX_REMOTE_ANSWER, MAX_REMOTE_LINE

AGENT_SOURCE = Path(__file__).with_name("ssh_agent.py").read_bytes()
_AGENT_DIR = ".cache/symphony-mcp"  # under the SSH user's home on the machine
# named by its content: a machine keeps the agent between sessions, and a changed agent is uploaded anew
AGENT_PATH = f"{_AGENT_DIR}/agent-{hashlib.sha256(AGENT_SOURCE).hexdigest()[:16]}.py"
_CONNECT_SECONDS = 15.0
_POLL_SECONDS = 0.005


class HostKeyRefusedError(DisplayUnavailableError):
    """The machine's host key is not the one known_hosts holds for it, or known_hosts holds none."""


class AgentStartError(DisplayUnavailableError):
    """Logged in, but the agent did not start: the machine's python3, its input module, or its display is missing."""


@dataclass(frozen=True)
class Target:
    user: str
    host: str
    port: int

    @classmethod
    def parse(cls, url: str) -> Target:
        parts = urlsplit(url)
        if parts.scheme != "ssh" or not parts.hostname or not parts.username:
            raise ValueError(f"an SSH machine is ssh://user@host[:port], got {clip(url)}")
        return cls(user=parts.username, host=parts.hostname, port=parts.port or 22)

    def __str__(self) -> str:
        return f"ssh://{self.user}@{self.host}:{self.port}"


@dataclass(frozen=True)
class CommandResult:
    status: int
    stdout: bytes
    stderr: bytes
    stdout_dropped: int
    stderr_dropped: int
    seconds: float


@dataclass(frozen=True)
class AgentHello:
    platform: str
    screen: tuple[int, int]
    pid: int


class SshMachine:
    """The connection, the agent's channel and SFTP of one machine; safe to call from several threads."""

    def __init__(
        self,
        url: str,
        known_hosts: Path,
        key_file: Path | None = None,
        python: str = "python3",
        display: str = ":0",
        timeout: float = 30.0,
    ) -> None:
        self.target = Target.parse(url)
        self._known_hosts = known_hosts.expanduser()
        self._key_file = key_file.expanduser() if key_file else None
        self._python = python
        self._display = display
        self._timeout = timeout
        self._lock = threading.RLock()  # one agent request at a time; (re)connecting happens under it
        self._client: paramiko.SSHClient | None = None
        self._channel: paramiko.Channel | None = None
        self._reader: Any = None
        self._hello: AgentHello | None = None

    # --- the connection -----------------------------------------------------------------------------------------
    def hello(self) -> AgentHello:
        with self._lock:
            self._ensure()
            assert self._hello is not None
            return self._hello

    def _ensure(self) -> None:
        transport = self._client.get_transport() if self._client else None
        if transport is not None and transport.is_active() and self._channel and not self._channel.closed:
            return
        self._drop()
        self._client = self._connect()
        try:
            self._start_agent(self._client)
        except Exception:
            self._drop()
            raise

    def _connect(self) -> paramiko.SSHClient:
        client = paramiko.SSHClient()
        if not self._known_hosts.is_file():
            raise HostKeyRefusedError(
                f"no known_hosts file at {self._known_hosts} to check {self.target}'s host key against; set "
                "SYMPHONY_DESKTOP__SSH_KNOWN_HOSTS, or add the machine's key: ssh-keyscan -p "
                f"{self.target.port} {self.target.host} >> {self._known_hosts} (check its fingerprint first)"
            )
        client.load_host_keys(str(self._known_hosts))
        client.set_missing_host_key_policy(paramiko.RejectPolicy())
        try:
            client.connect(
                self.target.host,
                self.target.port,
                username=self.target.user,
                key_filename=str(self._key_file) if self._key_file else None,
                look_for_keys=self._key_file is None,
                allow_agent=self._key_file is None,
                timeout=_CONNECT_SECONDS,
                banner_timeout=_CONNECT_SECONDS,
                auth_timeout=_CONNECT_SECONDS,
            )
        except paramiko.BadHostKeyException as exc:
            client.close()
            raise HostKeyRefusedError(
                f"{self.target} offered a {exc.key.get_name()} host key (SHA256 {_fingerprint(exc.key)}) that does "
                f"not match the one {self._known_hosts} holds for it (SHA256 {_fingerprint(exc.expected_key)}): "
                "refused. If the machine's key really changed, replace its line in that file"
            ) from None
        except paramiko.SSHException as exc:
            client.close()
            if "not found in known_hosts" in str(exc):
                raise HostKeyRefusedError(
                    f"{self.target}'s host key is not in {self._known_hosts}: refused. Add it after checking its "
                    f"fingerprint: ssh-keyscan -p {self.target.port} {self.target.host} >> {self._known_hosts}"
                ) from None
            raise DisplayUnavailableError(f"cannot log in to {self.target}: {exc}") from None
        except paramiko.ssh_exception.NoValidConnectionsError as exc:  # one error per address tried
            client.close()
            reasons = "; ".join(sorted({error.strerror or str(error) for error in exc.errors.values()}))
            raise DisplayUnavailableError(f"cannot reach {self.target}: {reasons}") from None
        except OSError as exc:
            client.close()
            raise DisplayUnavailableError(f"cannot reach {self.target}: {exc}") from None
        transport = client.get_transport()
        if transport is not None and isinstance(transport.sock, socket.socket):
            # an action is one small message: Nagle would hold it behind the unacknowledged end of another channel
            # until the delayed ACK (40 ms, measured on a click following a command)
            transport.sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        return client

    def _start_agent(self, client: paramiko.SSHClient) -> None:
        """Upload the agent unless the machine has this version, then start it on a channel of its own."""
        path = AGENT_PATH
        with client.open_sftp() as sftp:
            try:
                sftp.stat(path)
            except FileNotFoundError:
                _makedirs(sftp, _AGENT_DIR)
                # a part of this connection's own: connections starting at once would otherwise truncate one
                # another's part, and one could start the agent while another is still writing it
                part = f"{path}.{secrets.token_hex(8)}.part"
                with sftp.open(part, "wb") as file:
                    file.write(AGENT_SOURCE)
                sftp.posix_rename(part, path)  # atomic: the agent's path is whole or absent
        command = f"DISPLAY={shlex.quote(self._display)} exec {shlex.quote(self._python)} -u {path} serve"
        channel = self._open_channel(client)
        channel.exec_command(command)
        self._channel, self._reader = channel, channel.makefile("rb")
        try:
            reply, _ = self._exchange({"op": "hello"}, "starting the agent")
        except EOFError as exc:
            raise AgentStartError(
                f"the agent did not start on {self.target} ({self._python}, DISPLAY {self._display} on X11): {exc}"
            ) from None
        self._hello = AgentHello(platform=reply["platform"], screen=tuple(reply["screen"]), pid=reply["pid"])

    def _open_channel(self, client: paramiko.SSHClient) -> paramiko.Channel:
        transport = client.get_transport()
        if transport is None:
            raise DisplayUnavailableError(f"the connection to {self.target} is closed")
        channel = transport.open_session(timeout=self._timeout)
        channel.settimeout(self._timeout)
        return channel

    def _drop(self) -> None:
        if self._client is not None:
            self._client.close()
        self._client = self._channel = self._reader = self._hello = None

    def close(self) -> None:
        with self._lock:
            self._drop()

    # --- the agent ----------------------------------------------------------------------------------------------
    def request(
        self, request: dict[str, Any], what: str, *, read: bool = False, seconds: float = 0.0
    ) -> tuple[dict[str, Any], bytes]:
        """One request to the agent, answered within the timeout plus `seconds` (what the action itself takes).
        `read`: nothing changes on the machine, so a dropped connection is made again and the request sent once
        more; an action is never sent twice."""
        with self._lock:
            for attempt in (1, 2):
                self._ensure()
                try:
                    assert self._channel is not None
                    self._channel.settimeout(self._timeout + seconds)
                    return self._exchange(request, what)
                except (OSError, EOFError, paramiko.SSHException) as exc:
                    self._drop()
                    if not read or attempt == 2:
                        raise RemoteActionError(
                            f"the connection to {self.target} dropped during {what} ({type(exc).__name__}: {exc}); "
                            "whether it ran is not known; the next call connects again"
                        ) from None
            raise AssertionError("unreachable")

    def _exchange(self, request: dict[str, Any], what: str) -> tuple[dict[str, Any], bytes]:
        assert self._channel is not None and self._reader is not None
        self._channel.sendall(json.dumps(request).encode() + b"\n")
        line = self._reader.readline(MAX_REMOTE_LINE + 1)
        if not line:
            raise EOFError(f"the agent ended{self._agent_stderr()}")
        reply = _agent_reply(line)
        if not reply.pop("ok"):
            raise RemoteActionError(f"{what} failed on {self.target}: {clip(str(reply.get('error')), 500)}")
        size = reply.get("bytes", 0)
        data = self._reader.read(size) if size else b""
        if len(data) != size:
            raise EOFError("the agent's answer was cut short")
        return reply, data

    def _agent_stderr(self) -> str:
        """The last line the agent wrote to stderr once it has ended (its error), as ': text', or ''."""
        channel = self._channel
        if channel is None:
            return ""
        deadline = time.monotonic() + 5
        while not channel.exit_status_ready() and time.monotonic() < deadline:
            time.sleep(_POLL_SECONDS)
        text = b""
        while channel.recv_stderr_ready():
            text += channel.recv_stderr(65536)
        lines = text.decode("utf-8", "replace").strip().splitlines()
        return ": " + clip(lines[-1], 500) if lines else ""

    # --- commands and files ---------------------------------------------------------------------------------------
    def run(self, argv: list[str], stdin: bytes, timeout: float, output_cap: int) -> CommandResult:
        """A command on its own channel; its exit status, and its output kept up to `output_cap` bytes a stream."""
        return self.shell(shlex.join(argv), stdin, timeout, output_cap)

    def shell(self, command: str, stdin: bytes, timeout: float, output_cap: int) -> CommandResult:
        """A command line as the user's login shell reads it (zsh on a Mac), as `ssh host COMMAND` runs it: what
        MacOSArena's task steps are written for. Its exit status, and its output kept up to `output_cap` a stream."""
        shown = clip(command, 80)
        with self._lock:
            self._ensure()
            assert self._client is not None
            channel = self._open_channel(self._client)
        started = time.monotonic()
        try:
            channel.exec_command(command)
            channel.sendall(stdin)
            channel.shutdown_write()
            out, err = _Capped(output_cap), _Capped(output_cap)
            deadline = started + timeout
            while not (channel.exit_status_ready() and not channel.recv_ready() and not channel.recv_stderr_ready()):
                if time.monotonic() > deadline:
                    raise RemoteActionError(f"{shown} on {self.target} did not end within {timeout:g} s")
                busy = False
                if channel.recv_ready():
                    out.add(channel.recv(65536))
                    busy = True
                if channel.recv_stderr_ready():
                    err.add(channel.recv_stderr(65536))
                    busy = True
                if not busy:
                    time.sleep(_POLL_SECONDS)
            status = channel.recv_exit_status()
        except (OSError, EOFError, paramiko.SSHException) as exc:
            with self._lock:
                self._drop()
            raise RemoteActionError(
                f"the connection to {self.target} dropped while running {shown} ({exc}); the next call connects again"
            ) from None
        finally:
            channel.close()
        seconds = time.monotonic() - started
        return CommandResult(status, out.kept, err.kept, out.dropped, err.dropped, seconds)

    def agent_run(self, seconds: float, workdir: str, language: str, code: str, output_cap: int) -> CommandResult:
        """Code run by the agent's `run` mode: in `workdir`, in a session of its own killed after `seconds`."""
        self.hello()  # connected, with the agent uploaded
        argv = [self._python, AGENT_PATH, "run", f"{seconds:g}", workdir, language]
        return self.run(argv, code.encode("utf-8"), seconds + 15, output_cap)

    def upload(self, path: str, data: bytes, make_parents: bool = False) -> None:
        with self._sftp() as sftp:
            if make_parents:
                _makedirs(sftp, str(PurePosixPath(_home_relative(path)).parent))
            with sftp.open(_home_relative(path), "wb") as file:
                file.write(data)

    def stat(self, path: str) -> paramiko.SFTPAttributes | None:
        """What is at `path` (links followed), or None when nothing is."""
        with self._sftp() as sftp:
            try:
                return sftp.stat(_home_relative(path))
            except FileNotFoundError:
                return None

    def download(self, path: str) -> bytes:
        with self._sftp() as sftp, sftp.open(_home_relative(path), "rb") as file:
            data = bytes(file.read(MAX_REMOTE_ANSWER + 1))
        if len(data) > MAX_REMOTE_ANSWER:
            raise RemoteActionError(f"{clip(path)} on {self.target} is larger than {MAX_REMOTE_ANSWER // 2**20} MiB")
        return data

    def _sftp(self) -> paramiko.SFTPClient:
        with self._lock:
            self._ensure()
            assert self._client is not None
            return self._client.open_sftp()


def _agent_reply(line: bytes) -> dict[str, Any]:
    """The agent's JSON line, checked: a machine that answers past the bounds or out of the protocol is refused with
    an EOFError, so the connection is dropped (what follows on it cannot be trusted) and the action not resent."""
    if len(line) > MAX_REMOTE_LINE or not line.endswith(b"\n"):
        raise EOFError(f"the agent's answer line is longer than {MAX_REMOTE_LINE:,} bytes or unterminated")
    try:
        reply = json.loads(line)
    except ValueError:
        raise EOFError(f"the agent answered a line that is not JSON: {clip(line.decode('utf-8', 'replace'))}") from None
    size = reply.get("bytes", 0) if isinstance(reply, dict) else None
    sized = isinstance(size, int) and 0 <= size <= MAX_REMOTE_ANSWER
    if not isinstance(reply, dict) or "ok" not in reply or not sized:
        raise EOFError(f"the agent's answer is out of its protocol: {clip(line.decode('utf-8', 'replace'))}")
    return reply


class _Capped:
    def __init__(self, cap: int) -> None:
        self.cap, self.kept, self.dropped = cap, b"", 0

    def add(self, chunk: bytes) -> None:
        room = max(0, self.cap - len(self.kept))
        self.kept += chunk[:room]
        self.dropped += len(chunk) - len(chunk[:room])


def _home_relative(path: str) -> str:
    """SFTP paths start in the user's home: `~/x` is `x` there."""
    return path[2:] if path.startswith("~/") else path


def _makedirs(sftp: paramiko.SFTPClient, path: str) -> None:
    """Each folder of `path` made unless there; another connection making it at the same moment is no error."""
    current = PurePosixPath()
    for part in PurePosixPath(path).parts:
        current /= part
        try:
            sftp.mkdir(str(current))
        except OSError:  # SFTP answers a bare "Failure" when it exists: what counts is a folder there now
            if not stat.S_ISDIR(sftp.stat(str(current)).st_mode or 0):
                raise


def _fingerprint(key: paramiko.PKey) -> str:
    import base64

    return base64.b64encode(hashlib.sha256(key.asbytes()).digest()).decode().rstrip("=")
