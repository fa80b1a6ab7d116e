"""The command line that confines one run: bubblewrap, else `unshare` namespaces, else (only when the user
allows it) nothing; resource limits through prlimit(1) inside, so RLIMIT_NPROC counts in the run's own user
namespace; an environment built from an allow-list, so no SYMPHONY_* setting, token or API key reaches the code.
"""

from __future__ import annotations

import functools
import os
import shutil
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path

from symphony_mcp.code.folders import OpenDirectory
from symphony_mcp.code.types import Confinement
from symphony_mcp.config import CodeSettings
from symphony_mcp.errors import PolicyError

CODE_PATH = "/usr/local/bin:/usr/bin:/bin"
# What of /etc the code sees: name resolution, certificates, locale and library configuration; not shadow files,
# sudoers or the machine's secrets.
_ETC = (
    "alternatives", "ca-certificates", "ca-certificates.conf", "fonts", "group", "host.conf", "hostname", "hosts",
    "ld.so.cache", "ld.so.conf", "ld.so.conf.d", "localtime", "locale.alias", "mime.types", "nsswitch.conf",
    "os-release", "passwd", "protocols", "resolv.conf", "services", "ssl", "timezone", "xdg",
)  # fmt: skip
_ROOT_LINKS = ("bin", "lib", "lib32", "lib64", "libx32", "sbin")
BLOCK_DIR = "/run/symphony-code"
_SUFFIX = {"python": ".py", "bash": ".sh"}


def system_program(name: str) -> str | None:
    """A program on the server's PATH: a PATH without bubblewrap and unshare means no confinement (and a refusal)."""
    return shutil.which(name)


@functools.cache
def _works(program: str, *args: str) -> bool:
    try:
        probe = [program, *args, sys.executable, "-c", ""]
        return subprocess.run(probe, capture_output=True, timeout=10).returncode == 0
    except (OSError, subprocess.SubprocessError):
        return False


def choose(settings: CodeSettings) -> Confinement:
    """The strongest confinement that works here and the settings allow, or a PolicyError saying what to do."""
    if settings.backend == "none":  # chosen, not fallen back to: the server runs inside a sandbox of its own
        return "unconfined"
    bwrap, unshare = system_program("bwrap"), system_program("unshare")
    if settings.backend in ("auto", "bwrap") and bwrap and _works(bwrap, *_bwrap_probe()):
        return "bwrap"
    if settings.backend in ("auto", "unshare") and unshare and _works(unshare, *_unshare_flags()):
        return "unshare"
    if settings.allow_unconfined:
        return "unconfined"
    wanted = "bubblewrap (`bwrap`) or `unshare`" if settings.backend == "auto" else f"`{settings.backend}`"
    raise PolicyError(
        f"code cannot run: {wanted} is not available or does not work here, and unconfined runs are not allowed. "
        "Install bubblewrap on the server's PATH (Debian/Ubuntu: apt-get install bubblewrap), set "
        "SYMPHONY_CODE__BACKEND=auto, or accept running code with the server user's full rights with "
        "SYMPHONY_CODE__ALLOW_UNCONFINED=true"
    )


BWRAP_FIX = "apt-get install -y bubblewrap"


def bwrap_fix(settings: CodeSettings) -> str:
    """How to get bubblewrap's confinement from here: install it, and choose it when another backend was set."""
    return BWRAP_FIX if settings.backend == "auto" else f"{BWRAP_FIX} (and SYMPHONY_CODE__BACKEND=auto)"


def weaker_than_bwrap(settings: CodeSettings) -> str | None:
    """What code would run under here instead of bubblewrap (or why it would not run), or None when bubblewrap
    confines it: the server logs it at start and `doctor` prints it, both with BWRAP_FIX."""
    try:
        confinement = choose(settings)
    except PolicyError as exc:
        return str(exc)
    if confinement == "bwrap":
        return None
    why = {
        "unshare": "settings code.backend=unshare",
        "none": "settings code.backend=none: the server's own sandbox confines it",
    }.get(settings.backend, "bubblewrap is missing or fails here")
    if confinement == "unshare":
        return f"code runs in `unshare` namespaces, which hide listed home secrets but not the file system ({why})"
    return f"code runs unconfined, with the server user's full rights ({why})"


def _bwrap_probe() -> list[str]:
    return ["--ro-bind", "/", "/", "--unshare-all", "--die-with-parent", "--"]


def _unshare_flags() -> list[str]:
    return ["--user", "--map-root-user", "--net", "--ipc", "--mount", "--pid", "--fork", "--kill-child", "--mount-proc"]


@dataclass(frozen=True)
class Plan:
    """One run's argv (confinement + limits + interpreter) and environment."""

    argv: list[str]
    env: dict[str, str]
    fds: tuple[int, ...] = ()  # descriptors the command needs (the directories it binds)


def interpreter(language: str) -> list[str]:
    if language == "python":
        return [sys.executable]
    bash = system_program("bash")
    if bash is None:
        raise PolicyError("bash is not installed on this machine; run python code instead")
    return [bash]


def environment(settings: CodeSettings, workdir: Path) -> dict[str, str]:
    """The only variables the code sees."""
    env = {
        "PATH": CODE_PATH,
        "HOME": str(Path.home()),
        "TMPDIR": "/tmp",
        "LANG": os.environ.get("LANG", "C.UTF-8"),
        "TERM": "dumb",
        "PWD": str(workdir),
        "PYTHONIOENCODING": "utf-8",
        "PYTHONDONTWRITEBYTECODE": "1",
    }
    user = os.environ.get("USER") or os.environ.get("LOGNAME")
    if user:
        env["USER"] = env["LOGNAME"] = user
    if settings.display and os.environ.get("DISPLAY"):
        env["DISPLAY"] = os.environ["DISPLAY"]
        if os.environ.get("XAUTHORITY"):
            env["XAUTHORITY"] = os.environ["XAUTHORITY"]
    return env


def limits(settings: CodeSettings) -> list[str]:
    prlimit = system_program("prlimit")
    if prlimit is None:
        raise PolicyError("prlimit (util-linux) is not on the server's PATH: code cannot run with resource limits")
    mb = 1024 * 1024
    return [
        prlimit,
        f"--cpu={settings.cpu_seconds}:{settings.cpu_seconds + 1}",  # SIGXCPU first (a kill reason), SIGKILL after
        f"--as={settings.memory_mb * mb}",
        f"--fsize={settings.file_size_mb * mb}",
        f"--nproc={settings.processes}",
        f"--nofile={settings.open_files}",
        "--",
    ]


def plan(
    settings: CodeSettings,
    confinement: Confinement,
    language: str,
    block: int,
    workdir: OpenDirectory,
    writable: list[OpenDirectory],
) -> Plan:
    """The command that runs `block` (a descriptor of the code, a memfd: no file is left behind by a server
    killed mid-run) in `workdir` under `confinement`.

    The directories the code may write are bound by descriptor, never by path (see folders.py); the caller
    starts the command in `workdir` by its descriptor too.
    """
    env = environment(settings, workdir.path)
    if confinement == "bwrap":
        inside = f"{BLOCK_DIR}/block{_SUFFIX[language]}"
        bwrap = system_program("bwrap")
        assert bwrap is not None  # choose() found it
        argv = [bwrap, *_bwrap_mounts(settings, workdir, writable), "--ro-bind-data", str(block), inside]
        argv += ["--remount-ro", "/", "--chdir", str(workdir.path), "--unshare-all", "--die-with-parent"]
        argv += ["--new-session", "--cap-drop", "ALL", "--clearenv"]
        if settings.network:
            argv.append("--share-net")
        for name, value in env.items():
            argv += ["--setenv", name, value]
        fds = (block, workdir.fd, *(directory.fd for directory in writable))
        return Plan([*argv, "--", *limits(settings), *interpreter(language), inside], env, fds)
    command = [*limits(settings), *interpreter(language), f"/proc/self/fd/{block}"]
    if confinement == "unshare":
        unshare = system_program("unshare")
        assert unshare is not None
        flags = [f for f in _unshare_flags() if not (settings.network and f == "--net")]
        command = [unshare, *flags, "--", *_hiding(command)]
    return Plan(command, env, (block,))


# What the unshare fallback hides in the home directory (it does not narrow the rest of the file system): keys,
# credentials and browser profiles.
SENSITIVE_HOME = (
    ".ssh", ".gnupg", ".aws", ".kube", ".docker", ".netrc", ".git-credentials", ".password-store", ".mozilla",
    ".config/google-chrome", ".config/chromium", ".config/BraveSoftware", ".config/gh", ".local/share/keyrings",
)  # fmt: skip
# In the run's own mount namespace: an empty read-only tmpfs over each directory, /dev/null over each file.
_HIDE = (
    'while [ "$1" != -- ]; do if [ -d "$1" ]; then mount -t tmpfs -o ro,size=0 none "$1"; '
    'elif [ -e "$1" ]; then mount --bind /dev/null "$1"; fi; shift; done; shift; exec "$@"'
)


def _hiding(command: list[str]) -> list[str]:
    """`command` behind a prelude that hides SENSITIVE_HOME (needs bash and mount; without them, as it is)."""
    bash, mount = system_program("bash"), system_program("mount")
    if bash is None or mount is None:
        return command
    hidden = [str(Path.home() / name) for name in SENSITIVE_HOME if (Path.home() / name).exists()]
    return [bash, "-c", _HIDE, "hide", *hidden, "--", *command] if hidden else command


def _bwrap_mounts(settings: CodeSettings, workdir: OpenDirectory, writable: list[OpenDirectory]) -> list[str]:
    tmp_bytes = str(settings.tmp_mb * 1024 * 1024)  # RAM-backed: also counted in the run's memory cgroup
    args = ["--ro-bind", "/usr", "/usr", "--proc", "/proc", "--dev", "/dev", "--size", tmp_bytes, "--tmpfs", "/tmp"]
    for name in _ROOT_LINKS:
        path = Path("/") / name
        if path.is_symlink():
            args += ["--symlink", os.readlink(path), str(path)]
        elif path.is_dir():
            args += ["--ro-bind", str(path), str(path)]
    for name in _ETC:
        args += ["--ro-bind-try", f"/etc/{name}", f"/etc/{name}"]
    # The prefix also as named: a venv reached through a link runs as `<link>/bin/python` and looks for its
    # pyvenv.cfg there.
    prefixes = (Path(sys.prefix), Path(sys.prefix).resolve(), Path(sys.base_prefix).resolve())
    for prefix in {*prefixes, Path(sys.executable).resolve().parent}:
        if not prefix.is_relative_to("/usr"):
            args += ["--ro-bind", str(prefix), str(prefix)]
    if settings.display and os.environ.get("DISPLAY"):
        args += ["--ro-bind-try", "/tmp/.X11-unix", "/tmp/.X11-unix"]
        if os.environ.get("XAUTHORITY"):
            args += ["--ro-bind-try", os.environ["XAUTHORITY"], os.environ["XAUTHORITY"]]
    for directory in [*writable, workdir]:
        args += ["--bind-fd", str(directory.fd), str(directory.path)]
    return args
