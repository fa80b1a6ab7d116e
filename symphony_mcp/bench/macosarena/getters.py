"""MacOSArena's shell-level getters: the checks that are shell commands and a comparison, run over SSH on the task's
machine, written here from upstream's documented behaviour (`evaluators/getter/{finder,terminal}.py`).

Upstream's other getters read macOS application state (Notes, Reminders, Calendar, Clock, Safari, System
Settings, VS Code, Finder tags) through osascript, plists and app databases; a task that needs one is listed as
skipped with that reason (MACOS_APP_STATE in tasks.py). What differs from upstream, on purpose: parameters from the
task JSON are quoted for the shell (upstream pastes them into double quotes), `~` at the start of a path is the
SSH user's home everywhere, and BSD `stat -f` is `stat -c` on a Linux machine, so these checks mean the same on both.
"""

from __future__ import annotations

import shlex
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, Protocol

CONDA = "/opt/anaconda3/condabin/conda"  # where MacOSArena's macOS image has conda (upstream's path)
ECHO_SCRIPT_OUTPUT = "macOS task complete"
EXECUTABLE_BY_OWNER_ONLY = frozenset({"100", "300", "500", "700"})  # upstream's accepted modes of the echo script


@dataclass(frozen=True)
class ShellOutput:
    status: int
    stdout: str
    stderr: str


class MachineShell(Protocol):
    """The task's machine as the getters see it: its platform and a POSIX shell on it."""

    @property
    def platform(self) -> str:
        """`darwin` or `linux` (the SSH agent's sys.platform)."""
        ...

    def sh(self, script: str) -> ShellOutput:
        """`script` run by /bin/sh as the SSH user."""
        ...


def shell_path(path: str) -> str:
    """`path` for sh: a leading `~` is the user's home (`"$HOME"`), the rest quoted as data."""
    if path == "~":
        return '"$HOME"'
    if path.startswith("~/"):
        return '"$HOME"/' + shlex.quote(path[2:])
    return shlex.quote(path)


def privileged(command: str) -> str:
    """`command` with sudo as upstream runs it (MacOSArena's user has it without a password), else as the user."""
    return f"{{ sudo -n {command} 2>/dev/null || {command}; }}"


def _stat_mode(machine: MachineShell, path: str) -> str:
    """The file's permission bits in octal as upstream reads them (BSD `stat -f %A` on a Mac, `stat -c %a` here)."""
    command = f"stat -f %A {shell_path(path)}" if machine.platform == "darwin" else f"stat -c %a {shell_path(path)}"
    return machine.sh(privileged(command)).stdout.strip()


def finder_check_file_exists(machine: MachineShell, file_path: str) -> bool:
    return machine.sh(f"test -f {shell_path(file_path)}").status == 0


def finder_check_folder_exists(machine: MachineShell, folder_path: str) -> bool:
    return machine.sh(f"test -d {shell_path(folder_path)}").status == 0


def finder_read_file_contents(machine: MachineShell, file_path: str) -> str:
    """The file's text, stripped; "" when it cannot be read (upstream's answer to any error)."""
    read = machine.sh(f"cat {shell_path(file_path)}")
    return read.stdout.strip() if read.status == 0 and not read.stderr else ""


def terminal_check_files_in_directory(machine: MachineShell, folder_path: str, required_files: list[str]) -> bool:
    listed = set(machine.sh(f"ls {shell_path(folder_path)}").stdout.strip().splitlines())
    return all(name in listed for name in required_files)


def terminal_check_command_in_history(machine: MachineShell, target_command: str) -> bool:
    """The command appears in the shell history zsh (a Mac's shell) or bash wrote."""
    history = machine.sh("cat ~/.zsh_history 2>/dev/null || cat ~/.bash_history").stdout
    return target_command in history


def terminal_check_package_in_conda_env(machine: MachineShell, env_name: str, package_name: str) -> bool:
    listed = machine.sh(f"{CONDA} list -n {shlex.quote(env_name)}").stdout
    return any(line.split()[:1] == [package_name] for line in listed.splitlines())


def terminal_check_archive_validity_count_name_mod(machine: MachineShell, base_path: str = "/Users/Shared") -> bool:
    """archive_<the machine's date YYYYMMDD>.tar.gz in `base_path` with at least 5 entries, mode executable by its owner
    only (…100). Like upstream, the archive is read with sudo (its mode lets nobody else read it)."""
    today = machine.sh('date "+%Y%m%d"').stdout.strip()
    if not today.isdigit():
        return False
    archive = f"{base_path.rstrip('/')}/archive_{today}.tar.gz"
    if machine.sh(f"test -f {shell_path(archive)}").status != 0:
        return False
    entries = machine.sh(privileged(f"tar -tzf {shell_path(archive)}") + " | wc -l").stdout.strip()
    if not entries.isdigit() or int(entries) < 5:
        return False
    return _stat_mode(machine, archive).endswith("100")


def terminal_check_echo_macos_script(machine: MachineShell, base_path: str = "/Users/Shared") -> bool:
    """Exactly one hidden file named like `.*echo_macos*` in `base_path`, executable by its owner only, printing
    'macOS task complete' when bash runs it."""
    found = machine.sh(privileged(f"find {shell_path(base_path)} -maxdepth 1 -name '.*echo_macos*' -type f")).stdout
    matches = found.strip().splitlines()
    if len(matches) != 1:
        return False
    if _stat_mode(machine, matches[0]) not in EXECUTABLE_BY_OWNER_ONLY:
        return False
    return machine.sh(f"bash {shlex.quote(matches[0])}").stdout.strip() == ECHO_SCRIPT_OUTPUT


Getter = Callable[..., Any]
SHELL_GETTERS: dict[str, Getter] = {
    getter.__name__: getter
    for getter in (
        finder_check_file_exists,
        finder_check_folder_exists,
        finder_read_file_contents,
        terminal_check_files_in_directory,
        terminal_check_command_in_history,
        terminal_check_package_in_conda_env,
        terminal_check_archive_validity_count_name_mod,
        terminal_check_echo_macos_script,
    )
}
