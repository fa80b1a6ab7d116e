"""The task user OSWorld's tasks assume (`user`, password `password`, a home with Desktop, Documents, ...).

The account is made by `symphony-mcp osworld-user create` (run as root; it runs SCRIPT), which records what it
created in RECORD. Everything of a task runs as that user inside the environment's sandbox (sandbox.py): its setup,
the agent's server, the apps and code, so `~` is /home/user as in OSWorld's VM. Only an account the script
created is used: its password is public and it can sudo, which is for a disposable account only.
"""

from __future__ import annotations

import grp
import os
import pwd
from dataclasses import dataclass
from pathlib import Path

RECORD = Path(os.environ.get("OSWORLD_USER_RECORD", "/var/lib/symphony-mcp/osworld-user.created"))
# Shipped in the package (symphony-mcp osworld-user runs it), so the hint below works outside this repository.
SCRIPT = Path(__file__).with_name("osworld-user.sh")
CREATE_HINT = "create it as root with `symphony-mcp osworld-user create` (undo: `symphony-mcp osworld-user remove`)"


@dataclass(frozen=True)
class TaskUser:
    name: str
    password: str
    uid: int
    gid: int
    home: Path
    groups: tuple[int, ...]

    @property
    def in_sudo_group(self) -> bool:
        try:
            return grp.getgrnam("sudo").gr_gid in self.groups
        except KeyError:
            return False

    def env(self, display: str) -> dict[str, str]:
        """The environment of a command run as the task user on `display` (a login-like one, not ours)."""
        return {
            "HOME": str(self.home),
            "USER": self.name,
            "LOGNAME": self.name,
            "SHELL": "/bin/bash",
            "PATH": "/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin",
            "LANG": os.environ.get("LANG", "C.UTF-8"),
            "DISPLAY": display,
        }

    def expand(self, path: str) -> str:
        """`~` and `~/...` as this user's home (OSWorld's server expands them in the VM, as `user`)."""
        if path == "~" or path.startswith("~/"):
            return str(self.home) + path[1:]
        return path


def find_task_user(name: str, password: str) -> TaskUser | str:
    """The account, or why it cannot be used (with what to do)."""
    try:
        entry = pwd.getpwnam(name)
    except KeyError:
        return f"the task account '{name}' does not exist: {CREATE_HINT}"
    if os.geteuid() not in (0, entry.pw_uid):
        return f"task commands run as '{name}': run the benchmark as root (or as '{name}')"
    if not _created_by_script(name, entry.pw_dir):
        return (
            f"the account '{name}' was not created by `symphony-mcp osworld-user create`; tasks sudo with its "
            f"public password, so only an account that script created is used"
        )
    groups = tuple(g.gr_gid for g in grp.getgrall() if name in g.gr_mem)
    return TaskUser(name, password, entry.pw_uid, entry.pw_gid, Path(entry.pw_dir), (entry.pw_gid, *groups))


def _created_by_script(name: str, home: str) -> bool:
    try:
        lines = RECORD.read_text(encoding="utf-8").splitlines()
    except OSError:
        return False
    return f"user={name}" in lines and f"home={home}" in lines
