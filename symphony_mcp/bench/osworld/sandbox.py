"""One OSWorld environment's machine: its own mount, PID, host-name and network namespaces, an overlay over the root.

OSWorld gives every environment a VM reverted to a snapshot before each task. Here a task gets a sandbox
instead, started at reset and thrown away at the next one: SANDBOX_INIT (run as root under `unshare --mount
--pid --fork`) mounts an overlayfs whose lower layer is the host's `/` and whose upper layer is a tmpfs,
pivots into it and stays as the namespace's PID 1. Whatever the task, its setup, the agent or its code write
anywhere, `sudo` into `/` included, lands in that tmpfs, and killing PID 1 ends every process of the
environment (the kernel kills a PID namespace with its init) and frees the overlay. Parallel environments
each have their own sandbox, so each sees its own copy-on-write home.

bubblewrap 0.8 (Debian 12) has no overlay options (`--overlay`, `--tmp-overlay` came in 0.10) and mounts
everything nosuid, which stops `sudo` (measured), so the mounts are plain mount(8) calls in our own
namespace; util-linux's `nsenter` and `setpriv` run each command inside, as the task user (its uid, groups
and HOME), with a capability bounding set that `sudo` cannot exceed (no mounting, raw devices, modules,
clock or host network changes).

The machine's network (network.py: its own address, loopback, NAT through the host) and its desktop (desktop.py:
Xvfb, window manager and accessibility bus as the task user) are made at start, inside, and end with PID 1.

Everything that touches the environment goes through `command()`: setup steps, the symphony server the
agent talks to, OSWorld's getters reading files, and files put in place, so a symlink the task made cannot
point the host at its own files.
"""

from __future__ import annotations

import contextlib
import logging
import os
import shutil
import signal
import subprocess
import sys
import time
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path

from symphony_mcp.bench.osworld.account import TaskUser
from symphony_mcp.bench.osworld.desktop import Desktop, desktop_problem, start_desktop
from symphony_mcp.bench.osworld.loopback import expose, relay
from symphony_mcp.bench.osworld.network import EnvironmentNetwork, connect, network_problem
from symphony_mcp.desktop.accessibility import APP_ENVIRONMENT
from symphony_mcp.desktop.virtual_display import tied_to_this_process
from symphony_mcp.errors import SymphonyError

log = logging.getLogger(__name__)
SANDBOX_INIT = Path(__file__).with_name("sandbox-init.sh")
ENVIRONMENT_OWN = (Path("/tmp"), Path("/root"))  # folders an environment has its own of (sandbox-init.sh)
PROGRAMS = ("unshare", "nsenter", "setpriv", "mount", "pivot_root")
# What a task's root (after sudo) may not do: it could reach the host through these (mount namespaces, raw
# devices, kernel modules, the clock, the host's network setup, other processes' memory, auditing, BPF).
DROPPED_CAPABILITIES = (
    "sys_admin", "sys_module", "sys_rawio", "sys_time", "sys_boot", "mknod", "net_admin", "sys_ptrace",
    "mac_admin", "mac_override", "syslog", "sys_pacct", "audit_control", "bpf", "perfmon", "checkpoint_restore",
    "wake_alarm", "block_suspend",
)  # fmt: skip
START_SECONDS = 30.0
# OSWorld's image's user has uid 1000, and tasks name its runtime folder literally
# (DBUS_SESSION_BUS_ADDRESS='unix:path=/run/user/1000/bus'): inside, that path leads to the task user's.
OSWORLD_UID = 1000
STOP_SECONDS = 30.0
# Its own mount, PID, host-name (a task's `hostnamectl` stays inside) and network namespaces; IPC is the host's (host
# X clients share the environment's X server's memory through it).
UNSHARE = (
    "unshare", "--mount", "--propagation", "private", "--uts", "--pid", "--net", "--fork", "--kill-child=SIGKILL", "--",
)  # fmt: skip


class SandboxError(SymphonyError):
    """The environment's sandbox could not start (not root, a program missing, the kernel refused a mount)."""


def sandbox_problem() -> str | None:
    """Why environments cannot be sandboxed here, or None."""
    if os.geteuid() != 0:
        return "OSWorld environments are sandboxed with mount and PID namespaces: run the benchmark as root"
    missing = [p for p in PROGRAMS if shutil.which(p) is None]
    if missing:
        return f"{', '.join(missing)} not found: install them (Debian: apt-get install util-linux mount)"
    return network_problem() or desktop_problem()


@dataclass
class Sandbox:
    """A running environment: its PID 1 (in our PID namespace), the task user its commands run as, its network
    (vm_ip and OSWorld's ports) and desktop (display)."""

    user: TaskUser
    init_pid: int
    process: subprocess.Popen[bytes]
    namespace: str = ""  # its PID namespace, e.g. "pid:[4026532180]"
    children: list[subprocess.Popen[bytes]] = field(default_factory=list)  # launched in the background
    network: EnvironmentNetwork | None = None
    desktop: Desktop | None = None
    relays: dict[int, subprocess.Popen[bytes]] = field(default_factory=dict)  # the host's ends, by host loopback port

    @classmethod
    def start(cls, user: TaskUser) -> Sandbox:
        """Start a fresh environment (call from the event loop's thread: the unshare process is not tied to a worker
        thread that may end); wait_ready() makes its network and desktop."""
        problem = sandbox_problem()
        if problem:
            raise SandboxError(problem)
        process = subprocess.Popen(
            [
                # A runner killed by SIGKILL takes its environments with it (unshare --fork ignores SIGTERM).
                *tied_to_this_process("KILL"),
                *UNSHARE,
                "/bin/sh",
                str(SANDBOX_INIT),
                *_shown_from_host(),
            ],
            stdin=subprocess.DEVNULL,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
        )
        return cls(user, 0, process)

    def wait_ready(self, timeout: float = START_SECONDS) -> None:
        """Block until PID 1 is in its new root, then give the environment its network and desktop (a worker thread
        may wait)."""
        assert self.process.stdout is not None
        line = self.process.stdout.readline()
        if line.strip() != b"ready":
            _, errors = self.process.communicate(timeout=timeout)
            raise SandboxError(f"the environment's sandbox did not start: {errors.decode(errors='replace').strip()}")
        children = Path(f"/proc/{self.process.pid}/task/{self.process.pid}/children").read_text().split()
        if len(children) != 1:
            self.stop()
            raise SandboxError(f"the environment's sandbox has no single first process (found {children})")
        self.init_pid = int(children[0])
        self.namespace = os.readlink(f"/proc/{self.init_pid}/ns/pid")
        try:
            self.network = connect(self.init_pid)
            self._make_runtime_dir()
            self.desktop = start_desktop(
                self.command, {**self.user.env(""), **self._runtime_env()}, self.init_pid, self.session_bus_path
            )
        except BaseException:
            self.stop()
            raise

    @property
    def runtime_dir(self) -> str:
        """The task user's XDG runtime folder inside, as a login makes it (its session bus, dconf, PulseAudio)."""
        return f"/run/user/{self.user.uid}"

    @property
    def session_bus_path(self) -> str:
        """Where the environment's session bus listens (the folder's `bus`, as systemd's user session has it)."""
        return f"{self.runtime_dir}/bus"

    def _make_runtime_dir(self) -> None:
        owner = f"{self.user.uid}:{self.user.gid}"
        script = f'install -d -m 700 -o {self.user.uid} -g {self.user.gid} "$1"'
        if self.user.uid != OSWORLD_UID:
            script += f' && {{ [ -e /run/user/{OSWORLD_UID} ] || ln -s "$1" /run/user/{OSWORLD_UID}; }}'
        done = subprocess.run(
            self.command(["sh", "-c", script, "sh", self.runtime_dir], as_root=True),
            env=self.user.env(""), stdin=subprocess.DEVNULL, capture_output=True, timeout=START_SECONDS,
        )  # fmt: skip
        if done.returncode != 0:
            errors = done.stderr.decode(errors="replace").strip()
            raise SandboxError(f"could not make the runtime folder {self.runtime_dir} ({owner}): {errors}")

    def _runtime_env(self) -> dict[str, str]:
        return {"XDG_RUNTIME_DIR": self.runtime_dir}

    @property
    def display(self) -> str:
        """The environment's X display (its number reserved on the host, where it opens as usual)."""
        assert self.desktop is not None, "the sandbox is not ready"
        return self.desktop.display

    @property
    def vm_ip(self) -> str:
        """The environment's address, where the host reaches what it serves (OSWorld's `vm_ip`)."""
        assert self.network is not None, "the sandbox is not ready"
        return self.network.vm_ip

    def reach_host_port(self, port: int) -> None:
        """Make the host's 127.0.0.1:`port` (a model endpoint the server inside uses) answer on 127.0.0.1:`port`
        inside (loopback.py); once per port."""
        if port not in self.relays:
            self.relays[port], inside = relay(self.command, self.env(), self.init_pid, port)
            self.children.append(inside)

    def expose(self, port: int, host_port: int) -> subprocess.Popen[bytes]:
        """Make vm_ip:`port` lead to the host's host_port on its end of the link (a service the host runs for the
        environment, e.g. the in-VM server's stand-in); the caller ends the returned relay."""
        assert self.network is not None, "the sandbox is not ready"
        return expose(self.command, self.env(), self.init_pid, (self.vm_ip, port), (self.network.host_ip, host_port))

    def command(self, argv: Sequence[str], *, cwd: str | None = None, as_root: bool = False) -> list[str]:
        """`argv` run inside the environment, as the task user (or its root, as after sudo), from `cwd` (the
        user's home by default); the caller passes the environment variables (env()) to the process it starts.
        It dies with the nsenter process the caller starts, so a timeout ends it."""
        assert self.init_pid, "the sandbox is not ready"
        user = [] if as_root else [f"--reuid={self.user.uid}", f"--regid={self.user.gid}", "--init-groups"]
        bounding = ",".join(f"-{name}" for name in DROPPED_CAPABILITIES)
        return [
            "nsenter", f"--target={self.init_pid}", "--mount", "--pid", "--uts", "--net", "--root", "--wd", "--",
            "setpriv", *user, f"--bounding-set={bounding}", "--pdeathsig=KILL", "--",
            "env", f"--chdir={cwd or self.user.home}", "--", *argv,
        ]  # fmt: skip

    def env(self) -> dict[str, str]:
        """The task user's login-like environment on the environment's display and session bus."""
        bus = self.desktop.session_bus if self.desktop else None
        own = {**self._runtime_env(), **({"DBUS_SESSION_BUS_ADDRESS": bus} if bus else {})}
        # Applications join the accessibility bus, as on the image's desktop (OSWorld reads their trees).
        return {**APP_ENVIRONMENT, **self.user.env(self.display), **own}

    def read_file(self, path: str) -> bytes | None:
        """A file's bytes as the task user reads it inside the environment (None when it cannot)."""
        done = subprocess.run(
            self.command(["cat", "--", path]), env=self.env(), stdin=subprocess.DEVNULL, capture_output=True
        )
        return done.stdout if done.returncode == 0 else None

    def write_file(self, path: str, data: bytes) -> None:
        """Write a file as the task user, making missing folders (OSWorld's /setup/upload, run as the user)."""
        script = 'mkdir -p -- "$(dirname -- "$1")" && cat > "$1"'
        done = subprocess.run(
            self.command(["sh", "-c", script, "sh", path]), env=self.env(), input=data, capture_output=True
        )
        if done.returncode != 0:
            raise SandboxError(f"could not write {path}: {done.stderr.decode(errors='replace').strip()}")

    def stop(self) -> None:
        """End every process of the environment and drop its overlay (idempotent)."""
        if self.network is not None:
            # Its link first, while the namespace holds the other end: once PID 1 is gone the pair goes with it, and
            # another environment (of any runner) may take the same link name before a delete by name here.
            self.network.close()
        if self.init_pid:
            with contextlib.suppress(ProcessLookupError):
                os.kill(self.init_pid, signal.SIGKILL)
        try:  # unshare reaps PID 1 and ends; killing it first would leave PID 1 to the host's init to reap
            self.process.wait(timeout=STOP_SECONDS if self.init_pid else 0)
        except subprocess.TimeoutExpired:
            self.process.kill()  # unshare --kill-child takes PID 1 (and so the namespace) with it
            self.process.wait()
        for child in self.children:
            child.wait()  # their nsenter ends once the namespace is gone
        self.children.clear()
        for process in self.relays.values():
            process.kill()  # the host's end does not end with the environment
            process.wait()
        self.relays.clear()
        if self.desktop is not None:
            self.desktop.stop()
        deadline = time.monotonic() + STOP_SECONDS  # SIGKILL is delivered when each process next runs
        while self.namespace and processes_in(self.namespace) and time.monotonic() < deadline:
            time.sleep(0.05)
        if self.namespace and processes_in(self.namespace):
            log.warning("environment processes %s outlived their sandbox", processes_in(self.namespace))
        for stream in (self.process.stdout, self.process.stderr):
            if stream is not None:
                stream.close()


def _shown_from_host() -> list[str]:
    """What the server and the tasks' Python one-liners run from, when it lives where the environment has its own
    (an empty /root, a private /tmp): the interpreter (pyenv as root), the venv, the code (a checkout under /tmp,
    as a fresh clone in CI may be, and PYTHONPATH's entries). Shown read-only, outermost folders only."""
    code = Path(__file__).parents[3]  # the folder holding the symphony_mcp package: a checkout or site-packages
    candidates = [Path(sys.base_prefix), Path(sys.prefix), code]
    candidates += [Path(entry) for entry in os.environ.get("PYTHONPATH", "").split(os.pathsep) if entry]
    found = {p.resolve() for p in candidates if p.exists()}
    hidden = [p for p in found if any(p.is_relative_to(own) for own in ENVIRONMENT_OWN)]
    return sorted(str(p) for p in hidden if not any(p != q and p.is_relative_to(q) for q in hidden))


def processes_in(namespace: str, name: str = "") -> list[int]:
    """The live processes of a PID namespace (a zombie has none), optionally those whose command line holds `name`."""
    found = []
    for entry in Path("/proc").iterdir():
        try:
            if not entry.name.isdigit() or os.readlink(entry / "ns" / "pid") != namespace:
                continue
            if name in (entry / "cmdline").read_bytes().replace(b"\0", b" ").decode(errors="replace"):
                found.append(int(entry.name))
        except OSError:  # ended meanwhile
            continue
    return found
