"""Directories the confined code can write, reached without following a link it planted.

Code writes in its work directories between (and during) runs, so any directory below them can become a
symbolic link (to `/`, say) at any moment, also between a check and a use. The server therefore never uses
such a path by name: it walks from `/` one component at a time with openat(O_PATH | O_NOFOLLOW | O_DIRECTORY),
refusing a link anywhere, and hands the final descriptor on (bubblewrap's --bind-fd, fchdir), so the directory
that was checked is the one that is used. The roots (the default work directory, the writable paths) are
resolved once when the server starts, so a link found later on their way was planted after that.
"""

from __future__ import annotations

import contextlib
import errno
import os
import stat
from dataclasses import dataclass
from pathlib import Path, PurePosixPath

from symphony_mcp.errors import InvalidInputError

MAX_DEPTH = 64  # directories below a root a run's workdir may be
NAME_MAX = 255  # bytes of one file name (Linux)
_OPEN = os.O_PATH | os.O_NOFOLLOW | os.O_DIRECTORY | os.O_CLOEXEC


class MissingDirectoryError(InvalidInputError):
    """The directory (or one on its way) does not exist and was not to be made."""


@dataclass(frozen=True)
class OpenDirectory:
    """A directory held by a descriptor (O_PATH) and the path it had when it was opened."""

    path: Path
    fd: int

    def close(self) -> None:
        with contextlib.suppress(OSError):
            os.close(self.fd)


def normalised(path: Path) -> Path:
    """`path` (absolute) with `.` and `..` resolved lexically: a link is refused by the walk anyway, so the text
    says where the walk goes; names too long or too many are refused here, with the limit."""
    text = os.path.normpath(path)
    for name in PurePosixPath(text).parts[1:]:
        if len(os.fsencode(name)) > NAME_MAX:
            raise InvalidInputError(
                f"the directory name {name[:40]!r}… is {len(os.fsencode(name))} bytes long; names are at most "
                f"{NAME_MAX} bytes"
            )
    return Path(text)


def open_directory(path: Path, root: Path | None = None, create: bool = False) -> OpenDirectory:
    """The directory `path` (absolute, normalised; at most MAX_DEPTH below `root`), opened without following any
    link on the way. With `create`, missing directories are made. Every refusal is an InvalidInputError naming
    the component and why.

    From `root` down (directories the code can write) each directory gets its owner's rwx back if the code took
    it away (`chmod 000 .`), so no run can leave a work directory the next run cannot enter.
    """
    parts = PurePosixPath(path).parts
    if not path.is_absolute() or len(parts) - len(PurePosixPath(root or "/").parts) > MAX_DEPTH:
        raise InvalidInputError(f"workdir {str(path)[:200]!r} is more than {MAX_DEPTH} directories deep")
    fd = os.open("/", _OPEN)
    current = Path("/")
    try:
        for name in parts[1:]:
            current = current / name
            child = _open_child(fd, name, current, create)
            os.close(fd)
            fd = child
            if root is not None and current.is_relative_to(root):
                _give_owner_access(fd)
        return OpenDirectory(path, fd)
    except BaseException:
        os.close(fd)
        raise


def _open_child(parent: int, name: str, path: Path, create: bool) -> int:
    try:
        return os.open(name, _OPEN, dir_fd=parent)
    except FileNotFoundError:
        if not create:
            raise MissingDirectoryError(f"{str(path)[:200]!r} does not exist") from None
    except OSError as exc:
        raise _refusal(parent, name, path, exc) from None
    try:
        os.mkdir(name, 0o755, dir_fd=parent)
    except FileExistsError:
        pass  # made meanwhile (by a parallel run, or the code): opened below like any other, links refused
    except OSError as exc:
        raise _refusal(parent, name, path, exc) from None
    try:
        return os.open(name, _OPEN, dir_fd=parent)
    except OSError as exc:
        raise _refusal(parent, name, path, exc) from None


def _refusal(parent: int, name: str, path: Path, exc: OSError) -> InvalidInputError:
    where = repr(str(path)[:200])
    if exc.errno == errno.ENOTDIR and _is_link(parent, name):  # O_PATH | O_NOFOLLOW opens a link, then not a dir
        exc = OSError(errno.ELOOP, os.strerror(errno.ELOOP))
    if exc.errno == errno.ELOOP:
        why = f"{where} is a symbolic link; code directories are entered only through real directories, never links"
    elif exc.errno == errno.ENOTDIR:
        why = f"{where} exists and is not a directory (a file, fifo or device); name a directory"
    else:
        why = f"{where} cannot be opened as a directory: {exc.strerror or exc}"
    return InvalidInputError(why)


def _give_owner_access(fd: int) -> None:
    """The owner's rwx back on the directory behind `fd` (through /proc: an O_PATH descriptor has no fchmod)."""
    mode = stat.S_IMODE(os.fstat(fd).st_mode)
    if mode & stat.S_IRWXU != stat.S_IRWXU:
        with contextlib.suppress(OSError):  # not ours to change (another user's writable path): left as it is
            os.chmod(f"/proc/self/fd/{fd}", mode | stat.S_IRWXU)


def _is_link(parent: int, name: str) -> bool:
    try:
        return stat.S_ISLNK(os.stat(name, dir_fd=parent, follow_symlinks=False).st_mode)
    except OSError:
        return False
