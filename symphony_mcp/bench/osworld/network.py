"""One OSWorld environment's network: its own namespace, like a VM's, joined to the host by a veth pair.

Inside: loopback and `eth0` with the environment's address (10.77.<n>.2, the host's side 10.77.<n>.1), the
default route through the host. So OSWorld's fixed ports (the controller 5000, Chrome's DevTools 9222, VLC's
HTTP interface 8080) are the same in every environment without clashes, whatever a task listens on stays
inside, and the host's getters reach `vm_ip:port` as OSWorld's reach its VM.

Outbound: NAT through the host (nftables masquerade and IPv4 forwarding), as QEMU or Docker give OSWorld's VM;
the host's own policy then decides what is reachable (here only the package registries, so the tasks that
`pip install` or `apt-get install` behave as the listing says). Environments cannot reach each other (the
forward chain drops 10.77/16 to 10.77/16). Turning forwarding on is a host-wide sysctl: it stays on.

The veth pair is made from the host into the namespace of the environment's PID 1; it goes away with that
namespace when the last process of the environment ends, and close() removes it at once.
"""

from __future__ import annotations

import contextlib
import shutil
import subprocess
import threading
from dataclasses import dataclass
from pathlib import Path

from symphony_mcp.errors import SymphonyError

NETWORK_PREFIX = "10.77"  # environment n: 10.77.n.0/24
HOST_LINK_PREFIX = "symv"  # the host's end of environment n's pair: symv<n>
NAT_TABLE = "symphony_osworld"
FORWARDING = Path("/proc/sys/net/ipv4/ip_forward")
NETWORK_FIX = "apt-get install -y iproute2 nftables (an OSWorld environment's own network)"
MAX_ENVIRONMENTS = 254
# The ports OSWorld's VM serves on (desktop_env's defaults); every environment has them, on its own address.
SERVER_PORT = 5000
CHROMIUM_PORT = 9222
VLC_PORT = 8080
_NAT_RULES = f"""
table ip {NAT_TABLE} {{
  chain postrouting {{ type nat hook postrouting priority 100; ip saddr {NETWORK_PREFIX}.0.0/16 \
oifname != "{HOST_LINK_PREFIX}*" masquerade; }}
  chain forward {{ type filter hook forward priority 0; ip saddr {NETWORK_PREFIX}.0.0/16 \
ip daddr {NETWORK_PREFIX}.0.0/16 drop; }}
}}
"""
_nat_lock = threading.Lock()


class NetworkError(SymphonyError):
    """An environment's network could not be made (iproute2 or nftables missing, the kernel refused)."""


@dataclass(frozen=True)
class EnvironmentNetwork:
    """An environment's address and the host's end of its link; OSWorld's ports are the same in each."""

    index: int
    vm_ip: str
    host_ip: str
    host_link: str
    server_port: int = SERVER_PORT
    chromium_port: int = CHROMIUM_PORT
    vlc_port: int = VLC_PORT

    def close(self) -> None:
        """Remove the pair now (idempotent: gone already when the namespace ended)."""
        subprocess.run(["ip", "link", "delete", self.host_link], capture_output=True)


def connect(init_pid: int) -> EnvironmentNetwork:
    """Give the network namespace of `init_pid` (an environment's PID 1, root in it) its link to the host, on the
    first free 10.77.<n>.0/24; the host's `ip link add` is the atomic claim of <n> between parallel environments."""
    _ensure_nat()
    for index in range(1, MAX_ENVIRONMENTS + 1):
        link = f"{HOST_LINK_PREFIX}{index}"
        made = _ip("link", "add", link, "type", "veth", "peer", "name", "eth0", "netns", str(init_pid), check=False)
        if made.returncode == 0:
            break
        if "exists" not in made.stderr:
            raise NetworkError(f"could not make the environment's network link: {made.stderr.strip()}")
    else:
        raise NetworkError(f"no free environment network: {MAX_ENVIRONMENTS} environments have one")
    network = EnvironmentNetwork(index, f"{NETWORK_PREFIX}.{index}.2", f"{NETWORK_PREFIX}.{index}.1", link)
    try:
        _ip("addr", "add", f"{network.host_ip}/24", "dev", link)
        _ip("link", "set", link, "up")
        inside = ["nsenter", f"--target={init_pid}", "--net", "--"]
        for step in (
            ("link", "set", "lo", "up"),
            ("addr", "add", f"{network.vm_ip}/24", "dev", "eth0"),
            ("link", "set", "eth0", "up"),
            ("route", "add", "default", "via", network.host_ip),
        ):
            _ip(*step, prefix=inside)
    except BaseException:
        network.close()
        raise
    return network


def network_problem() -> str | None:
    """Why environments cannot have a network of their own here, or None."""
    missing = [p for p in ("ip", "nft") if shutil.which(p) is None]
    return f"{', '.join(missing)} not found: {NETWORK_FIX}" if missing else None


def _ensure_nat() -> None:
    """The masquerade and isolation rules and IPv4 forwarding, once per host (kept: other environments use them)."""
    with _nat_lock:
        listed = subprocess.run(["nft", "list", "table", "ip", NAT_TABLE], capture_output=True)
        if listed.returncode != 0:
            made = subprocess.run(["nft", "-f", "-"], input=_NAT_RULES, capture_output=True, text=True)
            if made.returncode != 0:
                raise NetworkError(f"could not add the environments' NAT rules: {made.stderr.strip()}")
        with contextlib.suppress(OSError):
            if FORWARDING.read_text().strip() != "1":
                FORWARDING.write_text("1\n")


def _ip(*args: str, prefix: list[str] | None = None, check: bool = True) -> subprocess.CompletedProcess[str]:
    done = subprocess.run([*(prefix or []), "ip", *args], capture_output=True, text=True)
    if check and done.returncode != 0:
        raise NetworkError(f"ip {' '.join(args)} failed: {done.stderr.strip()}")
    return done
