"""Files on the machine the tools act on, one class per backend: this host (only inside the code tools' folders), an
OSWorld VM (its controller's /setup/upload and /file), a WindowsAgentArena machine (the same routes on its server) or
an SSH machine (SFTP).

Each refuses before it changes anything: a path outside what it may reach, a file over the cap, a file that exists
when overwriting was not asked for. A remote machine is the user's to give: any path its user can reach is allowed
there (the VM, the SSH account); on this host the tools reach only the directories the code tools may write.
"""

from __future__ import annotations

import contextlib
import errno
import os
import shlex
import stat
from pathlib import Path, PurePosixPath
from typing import Protocol

from symphony_mcp.code.folders import OpenDirectory, normalised, open_directory
from symphony_mcp.desktop.remote import waa_code
from symphony_mcp.desktop.remote.osworld_controller import OsworldController
from symphony_mcp.desktop.remote.ssh_machine import SshMachine
from symphony_mcp.desktop.remote.waa_controller import WaaController
from symphony_mcp.errors import InvalidInputError, clip

_READ = os.O_RDONLY | os.O_NOFOLLOW | os.O_CLOEXEC | os.O_NONBLOCK
_WRITE = os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW | os.O_CLOEXEC


class MachineFiles(Protocol):
    """Reads and writes whole files on one machine."""

    def read(self, path: str, cap: int) -> tuple[str, bytes]:
        """The file's path as the machine names it, and its bytes (refused beyond `cap`)."""
        ...

    def write(self, path: str, data: bytes, overwrite: bool) -> str:
        """Write `data` at `path` (missing directories made); the path as the machine names it."""
        ...


class FileTooBigError(InvalidInputError):
    """A file over the cap of its route (in a call, or through the transfer folder)."""


def too_big(path: str, size: int, cap: int) -> FileTooBigError:
    return FileTooBigError(f"{clip(path)} is {size} bytes; at most {cap} bytes move this way")


def exists_already(path: str) -> InvalidInputError:
    return InvalidInputError(f"{clip(path)} exists; pass overwrite=true to replace it")


class FolderFiles:
    """Files inside a few directories of this host, reached without following links (code/folders.py's walk), so a
    link planted inside cannot lead out: the code tools' work directory and writable paths, or the server's transfer
    folder. A relative path is inside the first directory."""

    def __init__(self, roots: list[Path], what: str) -> None:
        self.roots = roots
        self.what = what

    def place(self, path: str) -> tuple[Path, Path]:
        """The absolute path (`..` resolved as text) and the root it is in, or a refusal naming the allowed roots."""
        if not path or "\x00" in path:
            raise InvalidInputError(f"{self.what}: give a file path (no NUL characters)")
        full = normalised(self.roots[0] / Path(path).expanduser())
        for root in self.roots:
            if full != root and full.is_relative_to(root):
                return full, root
        allowed = ", ".join(str(root) for root in self.roots)
        raise InvalidInputError(f"{clip(path)} is outside {self.what} ({allowed}); give a path inside one of them")

    def _directory(self, full: Path, root: Path, create: bool) -> OpenDirectory:
        return open_directory(full.parent, root, create=create)

    def read(self, path: str, cap: int) -> tuple[str, bytes]:
        full, root = self.place(path)
        directory = self._directory(full, root, create=False)
        try:
            fd = os.open(full.name, _READ, dir_fd=directory.fd)
        except FileNotFoundError:
            raise InvalidInputError(f"no file {clip(str(full))}") from None
        except OSError as exc:
            raise _refused(full, exc) from None
        finally:
            directory.close()
        mode = os.fstat(fd)
        if not stat.S_ISREG(mode.st_mode) or mode.st_size > cap:
            os.close(fd)
            if not stat.S_ISREG(mode.st_mode):
                raise InvalidInputError(f"{clip(str(full))} is not a regular file (a directory, fifo or device)")
            raise too_big(str(full), mode.st_size, cap)
        with os.fdopen(fd, "rb") as file:
            data = file.read(cap + 1)
        if len(data) > cap:  # grew since fstat
            raise too_big(str(full), len(data), cap)
        return str(full), data

    def write(self, path: str, data: bytes, overwrite: bool) -> str:
        full, root = self.place(path)
        directory = self._directory(full, root, create=True)
        try:
            with contextlib.suppress(FileNotFoundError):
                found = os.stat(full.name, dir_fd=directory.fd, follow_symlinks=False)
                if stat.S_ISLNK(found.st_mode):
                    raise InvalidInputError(f"{clip(str(full))} is a symbolic link; these tools never follow one")
                if not overwrite:
                    raise exists_already(str(full))
                if not stat.S_ISREG(found.st_mode):
                    raise InvalidInputError(f"{clip(str(full))} exists and is not a regular file; not replaced")
            part = f".{full.name[:200]}.{os.getpid()}.part"
            fd = os.open(part, _WRITE, 0o644, dir_fd=directory.fd)
            try:
                with os.fdopen(fd, "wb") as file:
                    file.write(data)
                os.replace(part, full.name, src_dir_fd=directory.fd, dst_dir_fd=directory.fd)
            except BaseException:
                with contextlib.suppress(OSError):
                    os.unlink(part, dir_fd=directory.fd)
                raise
        except OSError as exc:
            raise _refused(full, exc) from None
        finally:
            directory.close()
        return str(full)


def _refused(path: Path, exc: OSError) -> InvalidInputError:
    if exc.errno == errno.ELOOP:
        return InvalidInputError(f"{clip(str(path))} is a symbolic link; these tools never follow one")
    return InvalidInputError(f"{clip(str(path))}: {exc.strerror or exc}")


def _remote_path(path: str, absolute_only: bool) -> str:
    if not path or "\x00" in path:
        raise InvalidInputError("give a file path on the machine (no NUL characters)")
    if absolute_only and not path.startswith("/"):
        raise InvalidInputError(
            f"{clip(path)}: give an absolute path on the machine (its controller has no home for us)"
        )
    if PurePosixPath(path).name in ("", ".", ".."):
        raise InvalidInputError(f"{clip(path)} names a directory; give a file path")
    return path


class OsworldFiles:
    """Files on an OSWorld VM through its controller: a size or existence check with `stat` through /execute, then
    /file (a read, retried) or /setup/upload."""

    def __init__(self, controller: OsworldController) -> None:
        self.controller = controller

    def _stat(self, path: str) -> tuple[int, str] | None:
        found = self.controller.execute(["stat", "-L", "-c", "%s %F", path])
        if not found.ok:
            return None
        size, _, kind = found.output.strip().partition(" ")
        return int(size), kind

    def read(self, path: str, cap: int) -> tuple[str, bytes]:
        path = _remote_path(path, absolute_only=True)
        found = self._stat(path)
        if found is None:
            raise InvalidInputError(f"no file {clip(path)} on {self.controller.url}")
        size, kind = found
        if kind not in ("regular file", "regular empty file"):
            raise InvalidInputError(f"{clip(path)} on {self.controller.url} is a {kind}, not a regular file")
        if size > cap:
            raise too_big(path, size, cap)
        data = self.controller.download(path)
        if len(data) > cap:
            raise too_big(path, len(data), cap)
        return path, data

    def write(self, path: str, data: bytes, overwrite: bool) -> str:
        path = _remote_path(path, absolute_only=True)
        found = self._stat(path)
        if found is not None and not overwrite:
            raise exists_already(path)
        if found is not None and found[1] not in ("regular file", "regular empty file"):
            raise InvalidInputError(f"{clip(path)} on {self.controller.url} is a {found[1]}; not replaced")
        parent = str(PurePosixPath(path).parent)
        self.controller.check(["mkdir", "-p", parent], f"making {shlex.quote(parent)}")
        self.controller.upload(path, data)
        return path


class WaaFiles:
    """Files on a WindowsAgentArena machine through its server: what is at the path asked for in the server process
    (`/execute_windows`, so Windows paths mean what they mean there, `~` and `%VARS%` expanded as its `/file` and
    `/setup/upload` expand them), then `/file` (a read, retried) or `/setup/upload`, whose save makes no folder: the
    missing ones are made first."""

    def __init__(self, controller: WaaController) -> None:
        self.controller = controller

    def _found(self, path: str) -> tuple[str, str | None, int]:
        """The path as the machine names it, what is there (file, directory, other, or None) and its size."""
        path = _remote_path(path, absolute_only=False)
        answer = self.controller.ask(waa_code.file_stat(path), f"looking at {clip(path)}")
        full = str(answer["path"])
        if not answer["absolute"]:
            raise InvalidInputError(
                f"{clip(path)}: give an absolute path on the machine (C:\\Users\\... on Windows, or one under ~); "
                "its server has no working folder for us"
            )
        if answer["error"]:
            raise InvalidInputError(f"{clip(full)} on {self.controller.url}: {answer['error']}")
        return full, answer["kind"], int(answer["size"])

    def read(self, path: str, cap: int) -> tuple[str, bytes]:
        full, kind, size = self._found(path)
        if kind is None:
            raise InvalidInputError(f"no file {clip(full)} on {self.controller.url}")
        if kind != "file":
            raise InvalidInputError(f"{clip(full)} on {self.controller.url} is a {kind}, not a regular file")
        if size > cap:
            raise too_big(full, size, cap)
        data = self.controller.download(full)
        if len(data) > cap:  # grew since it was looked at
            raise too_big(full, len(data), cap)
        return full, data

    def write(self, path: str, data: bytes, overwrite: bool) -> str:
        full, kind, _ = self._found(path)
        if kind is not None and not overwrite:
            raise exists_already(full)
        if kind not in (None, "file"):
            raise InvalidInputError(f"{clip(full)} on {self.controller.url} is a {kind}; not replaced")
        self.controller.run(waa_code.make_parents(full), f"making the folder of {clip(full)}")
        self.controller.upload(full, data)
        return full


class SshFiles:
    """Files on an SSH machine over SFTP, as its user: a relative path or `~/...` is in the user's home."""

    def __init__(self, machine: SshMachine) -> None:
        self.machine = machine

    def read(self, path: str, cap: int) -> tuple[str, bytes]:
        try:
            return self._read(path, cap)
        except OSError as exc:  # SFTP's answer for the user: permission denied, not a directory, ...
            raise InvalidInputError(f"{clip(path)} on {self.machine.target}: {exc.strerror or exc}") from None

    def write(self, path: str, data: bytes, overwrite: bool) -> str:
        try:
            return self._write(path, data, overwrite)
        except OSError as exc:
            raise InvalidInputError(f"{clip(path)} on {self.machine.target}: {exc.strerror or exc}") from None

    def _read(self, path: str, cap: int) -> tuple[str, bytes]:
        path = _remote_path(path, absolute_only=False)
        found = self.machine.stat(path)
        if found is None:
            raise InvalidInputError(f"no file {clip(path)} on {self.machine.target}")
        if not stat.S_ISREG(found.st_mode or 0):
            raise InvalidInputError(f"{clip(path)} on {self.machine.target} is not a regular file")
        if (found.st_size or 0) > cap:
            raise too_big(path, found.st_size or 0, cap)
        data = self.machine.download(path)
        if len(data) > cap:
            raise too_big(path, len(data), cap)
        return path, data

    def _write(self, path: str, data: bytes, overwrite: bool) -> str:
        path = _remote_path(path, absolute_only=False)
        found = self.machine.stat(path)
        if found is not None and not overwrite:
            raise exists_already(path)
        if found is not None and not stat.S_ISREG(found.st_mode or 0):
            raise InvalidInputError(f"{clip(path)} on {self.machine.target} is not a regular file; not replaced")
        self.machine.upload(path, data, make_parents=True)
        return path
