"""A real OpenSSH server for the SSH backend's tests: Debian's sshd run by the test on a free loopback port with a
throwaway host key, a throwaway user key and its own config (never the system's sshd, never port 22), logging in
one test user, so "the remote machine" is another account on this host driving the tests' Xvfb.

Needs root (sshd switches to the user it logs in) and openssh-server (scripts/install.sh --dev).
"""

from __future__ import annotations

import contextlib
import os
import pwd
import shutil
import subprocess
import tempfile
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

from testkit.ports import free_port, port_open
from testkit.waiting import wait_for

SSHD = Path("/usr/sbin/sshd")
SSH_USER = "symphony-ssh-test"  # made once (useradd) and kept, as `symphony-mcp osworld-user` keeps its account


@dataclass(frozen=True)
class RunningSshd:
    port: int
    user: str
    home: Path  # the user's home on "the machine"
    key_file: Path  # the user's private key
    known_hosts: Path  # holds this server's host key
    folder: Path  # the keys, config and logs
    process: subprocess.Popen[bytes]
    ports: tuple[int, ...]  # every port it listens on, `port` first

    @property
    def url(self) -> str:
        return f"ssh://{self.user}@127.0.0.1:{self.port}"

    @property
    def urls(self) -> list[str]:
        """One URL per port: as many "machines" (one account, one home) as the runner sees."""
        return [f"ssh://{self.user}@127.0.0.1:{port}" for port in self.ports]

    def log(self) -> str:
        return (self.folder / "sshd.log").read_text(errors="replace")


def sshd_unavailable() -> str | None:
    """Why the tests cannot run a real sshd here, or None."""
    if not SSHD.exists():
        return "no /usr/sbin/sshd (openssh-server; scripts/install.sh --dev installs it)"
    if os.geteuid() != 0:
        return "sshd logs another user in only when started as root"
    return None


def ensure_user() -> pwd.struct_passwd:
    """The test user, made if missing: a shell, a home, and no password (`*`: not locked, so keys log it in)."""
    try:
        return pwd.getpwnam(SSH_USER)
    except KeyError:
        subprocess.run(
            ["useradd", "--create-home", "--shell", "/bin/bash", "--comment", "symphony-mcp SSH tests", SSH_USER],
            check=True,
        )
        subprocess.run(["usermod", "-p", "*", SSH_USER], check=True)
        return pwd.getpwnam(SSH_USER)


def keygen(path: Path) -> str:
    """A new ed25519 key pair at `path` (and .pub); the public line."""
    subprocess.run(["ssh-keygen", "-q", "-t", "ed25519", "-N", "", "-f", str(path)], check=True)
    return path.with_suffix(".pub").read_text().strip()


@contextlib.contextmanager
def running_sshd(port_count: int = 1) -> Iterator[RunningSshd]:
    """sshd on `port_count` free loopback ports in the foreground, stopped by its pid afterwards (its sessions with
    it)."""
    user = ensure_user()
    folder = Path(tempfile.mkdtemp(prefix="symphony-sshd-"))
    folder.chmod(0o755)  # sshd reads authorized_keys as the user it logs in
    try:
        host_public = keygen(folder / "host_key")
        user_public = keygen(folder / "user_key")
        (folder / "authorized_keys").write_text(user_public + "\n")
        (folder / "authorized_keys").chmod(0o644)
        found: list[int] = []
        while len(found) < port_count:  # distinct ones: the system may hand the same free port out twice
            found += [candidate] if (candidate := free_port()) not in found else []
        ports = tuple(found)
        port = ports[0]
        host_key = " ".join(host_public.split()[:2])
        (folder / "known_hosts").write_text("".join(f"[127.0.0.1]:{each} {host_key}\n" for each in ports))
        config = folder / "sshd_config"
        config.write_text(
            "\n".join(
                [
                    *(f"Port {each}" for each in ports),
                    "ListenAddress 127.0.0.1",
                    f"HostKey {folder / 'host_key'}",
                    f"PidFile {folder / 'sshd.pid'}",
                    f"AuthorizedKeysFile {folder / 'authorized_keys'}",
                    "StrictModes no",
                    "PasswordAuthentication no",
                    "KbdInteractiveAuthentication no",
                    "UsePAM no",
                    f"AllowUsers {SSH_USER}",
                    "Subsystem sftp internal-sftp",
                    "",
                ]
            )
        )
        Path("/run/sshd").mkdir(mode=0o755, exist_ok=True)  # the privilege separation directory
        with (folder / "sshd.log").open("wb") as log:
            process = subprocess.Popen([str(SSHD), "-D", "-e", "-f", str(config)], stderr=log, start_new_session=True)
        try:
            wait_for(lambda: all(map(port_open, ports)) or process.poll() is not None, timeout=15)
            if process.poll() is not None:
                raise RuntimeError(f"sshd exited with {process.returncode}: {(folder / 'sshd.log').read_text()}")
            yield RunningSshd(
                port, SSH_USER, Path(user.pw_dir), folder / "user_key", folder / "known_hosts", folder, process, ports
            )
        finally:
            stop_sessions(process.pid)
            process.terminate()
            process.wait(timeout=10)
    finally:
        shutil.rmtree(folder, ignore_errors=True)


def _children(pid: int) -> list[int]:
    path = Path(f"/proc/{pid}/task/{pid}/children")
    with contextlib.suppress(OSError):
        return [int(child) for child in path.read_text().split()]
    return []


def stop_sessions(sshd_pid: int) -> None:
    """End every connection of this sshd, as a dropped network would: each session's processes (the privileged and
    the user's sshd, the user's programs) are killed, deepest first, so the TCP connection closes."""
    found: list[int] = []
    pending = _children(sshd_pid)
    while pending:
        pid = pending.pop()
        found.append(pid)
        pending += _children(pid)
    for pid in reversed(found):
        with contextlib.suppress(ProcessLookupError):
            os.kill(pid, 9)
