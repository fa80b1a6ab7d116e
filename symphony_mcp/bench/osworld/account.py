"""The task user OSWorld's tasks assume (`user`, password `password`, a home with Desktop, Documents, ...).

The account is made by `symphony-mcp osworld-user create` (run as root; it runs SCRIPT), which records what it
created in RECORD. Task commands run as that user (the server and the agent keep running as the invoking user), so `~`
is /home/user as in OSWorld's VM. Before each task the home is put back to what the script created, as
OSWorld reverts its VM snapshot, and only for an account the script created: a real person's `user` is never
wiped.
"""

from __future__ import annotations

import grp
import os
import pwd
import shutil
from dataclasses import dataclass
from pathlib import Path
from typing import Any

RECORD = Path(os.environ.get("OSWORLD_USER_RECORD", "/var/lib/symphony-mcp/osworld-user.created"))
# Shipped in the package (symphony-mcp osworld-user runs it), so the hint below works outside this repository.
SCRIPT = Path(__file__).with_name("osworld-user.sh")
CREATE_HINT = "create it as root with `symphony-mcp osworld-user create` (undo: `symphony-mcp osworld-user remove`)"
# The folders the script makes (OSWorld's Ubuntu image has them).
HOME_FOLDERS = ("Desktop", "Documents", "Downloads", "Music", "Pictures", "Public", "Templates", "Videos")
SKELETON = Path("/etc/skel")


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

    def process_options(self) -> dict[str, Any]:
        """subprocess options that run a command as this user (we are root, or we are this user)."""
        if os.geteuid() == self.uid:
            return {}
        return {"user": self.uid, "group": self.gid, "extra_groups": list(self.groups)}

    def expand(self, path: str) -> str:
        """`~` and `~/...` as this user's home (OSWorld's server expands them in the VM, as `user`)."""
        if path == "~" or path.startswith("~/"):
            return str(self.home) + path[1:]
        return path

    def restore_home(self) -> None:
        """Put the home back to what the account script created: the skeleton files and the empty folders."""
        for entry in self.home.iterdir():
            if entry.is_dir() and not entry.is_symlink():
                shutil.rmtree(entry)
            else:
                entry.unlink()
        if SKELETON.is_dir():
            shutil.copytree(SKELETON, self.home, dirs_exist_ok=True, symlinks=True)
        for folder in HOME_FOLDERS:
            (self.home / folder).mkdir(exist_ok=True)
        if os.geteuid() == 0:
            for root, dirs, files in os.walk(self.home):
                for name in (root, *(os.path.join(root, n) for n in dirs + files)):
                    os.lchown(name, self.uid, self.gid)


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
            f"the account '{name}' was not created by `symphony-mcp osworld-user create`; its home is reset before "
            f"every task (as OSWorld reverts its VM), so only an account that script created is used"
        )
    groups = tuple(g.gr_gid for g in grp.getgrall() if name in g.gr_mem)
    return TaskUser(name, password, entry.pw_uid, entry.pw_gid, Path(entry.pw_dir), (entry.pw_gid, *groups))


def _created_by_script(name: str, home: str) -> bool:
    try:
        lines = RECORD.read_text(encoding="utf-8").splitlines()
    except OSError:
        return False
    return f"user={name}" in lines and f"home={home}" in lines
