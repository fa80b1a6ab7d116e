"""The host's loopback services the environment's server is set to use (a model endpoint on 127.0.0.1), inside.

The server runs in the environment's network namespace, where 127.0.0.1 is the environment's own loopback; a
model server on the host's loopback (a local vLLM, the tests' stand-in) would be out of its reach. OSWorld's VM
never calls a model (its agent runs on the host), so only these ports, named by the server's settings, are
carried in, each by a relay pair joined by a Unix socket in the environment's /tmp (path sockets cross network
namespaces): socat on the host listens on the socket and connects to the host's port, socat inside listens on
127.0.0.1:<port> and connects to the socket. Nothing else goes that way: what a task listens on stays inside.

The other way, `expose` makes a service the host runs for the environment answer at the environment's own address
(the stand-in of OSWorld's in-VM server, which getters reach at `vm_ip:5000` as OSWorld's reach its VM's): socat
inside listens on vm_ip:<port> and connects to the host's end of the environment's link.
"""

from __future__ import annotations

import re
import socket
import subprocess
import time
from collections.abc import Callable, Mapping
from pathlib import Path

from symphony_mcp.errors import SymphonyError

LOOPBACK_URL = re.compile(r"^https?://(?:127\.0\.0\.1|localhost)(?::(?P<port>\d+))?(?:/|$)")
RELAY_FIX = "apt-get install -y socat (the environment's relay to a model endpoint on the host's loopback)"
START_SECONDS = 10.0
LISTENING = "0A"  # TCP_LISTEN in /proc/net/tcp
Inside = Callable[..., list[str]]  # Sandbox.command
Popen = subprocess.Popen[bytes]


class RelayError(SymphonyError):
    """A host loopback port could not be carried into the environment."""


def loopback_ports(env: Mapping[str, str]) -> set[int]:
    """The ports of the host's loopback that the server's settings (its SYMPHONY_* variables) point at."""
    ports = set()
    for value in env.values():
        found = LOOPBACK_URL.match(value)
        if found:
            ports.add(int(found["port"]) if found["port"] else 443 if value.startswith("https") else 80)
    return ports


def relay(
    inside: Inside, env: dict[str, str], init_pid: int, port: int
) -> tuple[subprocess.Popen[bytes], subprocess.Popen[bytes]]:
    """Carry the host's 127.0.0.1:`port` into the environment whose PID 1 is `init_pid`: the host's socat (the
    caller ends it: it does not end with the environment) and the one inside (it ends with the environment)."""
    unix_path = f"/tmp/.symphony-host-{port}.sock"
    on_host = Path(f"/proc/{init_pid}/root{unix_path}")
    try:
        host = _start(["socat", f"UNIX-LISTEN:{on_host},fork,mode=600", f"TCP:127.0.0.1:{port}"], None)
    except FileNotFoundError as exc:
        raise RelayError(f"socat not found: {RELAY_FIX}") from exc
    processes = [host]
    try:
        _wait(on_host.is_socket, host, "the host's relay")
        listen = [f"TCP-LISTEN:{port},bind=127.0.0.1,fork,reuseaddr", f"UNIX-CONNECT:{unix_path}"]
        inner = _start(inside(["socat", *listen], as_root=True), env)
        processes.append(inner)
        _wait(lambda: _listens(init_pid, port), inner, "the environment's relay")
    except BaseException:
        for process in processes:
            process.kill()
            process.wait()
        raise
    return host, inner


def expose(inside: Inside, env: dict[str, str], init_pid: int, at: tuple[str, int], to: tuple[str, int]) -> Popen:
    """Make `at` (the environment's address and a port) lead to `to` (the host's end of its link and the port of
    a service there): the socat inside, which the caller ends (it ends with the environment too)."""
    (address, port), (host, host_port) = at, to
    listen = [f"TCP-LISTEN:{port},bind={address},fork,reuseaddr", f"TCP:{host}:{host_port}"]
    try:
        inner = _start(inside(["socat", *listen], as_root=True), env)
    except FileNotFoundError as exc:
        raise RelayError(f"socat not found: {RELAY_FIX}") from exc
    try:
        _wait(lambda: _listens(init_pid, port, address), inner, "the environment's relay")
    except BaseException:
        inner.kill()
        inner.wait()
        raise
    return inner


def _start(argv: list[str], env: dict[str, str] | None) -> subprocess.Popen[bytes]:
    """A relay's socat; its stderr kept for the error when it exits at once (it writes nothing while it runs)."""
    return subprocess.Popen(argv, env=env, stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)


def _listens(init_pid: int, port: int, address: str = "127.0.0.1") -> bool:
    """Whether `address`:`port` listens in the network namespace of `init_pid` (its /proc/net/tcp)."""
    local = f"{socket.inet_aton(address)[::-1].hex().upper()}:{port:04X}"
    lines = Path(f"/proc/{init_pid}/net/tcp").read_text().splitlines()[1:]
    return any(f[1] == local and f[3] == LISTENING for f in (line.split() for line in lines))


def _wait(ready: Callable[[], bool], process: subprocess.Popen[bytes], name: str) -> None:
    deadline = time.monotonic() + START_SECONDS
    while not ready():
        if process.poll() is not None:
            errors = process.stderr.read().decode(errors="replace").strip() if process.stderr else ""
            raise RelayError(f"{name} for a host port exited with status {process.returncode}: {errors[-300:]}")
        if time.monotonic() > deadline:
            raise RelayError(f"{name} for a host port did not start within {START_SECONDS:g} s")
        time.sleep(0.02)
