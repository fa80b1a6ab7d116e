"""upload_file and download_file through the real MCP client (in memory) on each backend: this host (only inside the
code tools' folders), the OSWorld stand-in controller (testkit/osworld_controller: /setup/upload and /file for real
on its files), the WindowsAgentArena stand-in server (testkit/waa_server: the same routes, an upload that makes no
folder, paths looked at inside the server process) and a real local sshd (testkit/sshd.py: SFTP as another account).
Values from one result are passed unchanged to the next call; the files are checked on disk where each machine keeps
them. Bad input (paths out of the allowed folders, links, oversize, an existing file) is refused and changes nothing.
"""

from __future__ import annotations

import base64
import hashlib
import os
import pwd
import shutil
from collections.abc import AsyncIterator, Callable, Iterator
from contextlib import AbstractContextManager, asynccontextmanager
from pathlib import Path
from typing import Any

import pytest
from mcp import Client

from symphony_mcp.config import load_settings
from symphony_mcp.desktop.virtual_display import VirtualDisplay
from symphony_mcp.files.transfer import TRANSFER_FOLDER
from symphony_mcp.limits import MAX_INLINE_FILE_BYTES, MAX_TRANSFER_BYTES
from symphony_mcp.server import build_server
from testkit.mcp_calls import call_error, call_ok
from testkit.osworld_controller.process import running_controller
from testkit.sshd import RunningSshd, running_sshd, sshd_unavailable
from testkit.waa_server.process import running_waa_server

pytestmark = pytest.mark.anyio

TEXT = 'héllo → 日本 a<b>c "quoted"\nsecond line\n'
BINARY = bytes(range(256)) * 64  # 16 KiB, every byte value: not UTF-8


@asynccontextmanager
async def served(tmp_path: Path, **settings: Any) -> AsyncIterator[Client]:
    server = build_server(load_settings(memory={"trajectory_dir": str(tmp_path / "trajectories")}, **settings))
    try:
        async with Client(server.mcp) as client:
            yield client
    finally:
        server.close()


def transfers(tmp_path: Path) -> Path:
    return tmp_path / "trajectories" / TRANSFER_FOLDER


async def moves_both_ways(
    client: Client, tmp_path: Path, place: Callable[[str], str], on_disk: Callable[[str], Path]
) -> None:
    """Text up and back; bytes up, saved into the transfer folder, and up again from there; an existing file kept
    unless overwrite is asked for. `place(name)` is a path on the machine, `on_disk(path)` where it keeps it."""
    up = await call_ok(client, "upload_file", dest=place("docs/note.txt"), content=TEXT)
    assert on_disk(up["path"]).read_text(encoding="utf-8") == TEXT
    assert (up["bytes"], up["sha256"]) == (len(TEXT.encode()), hashlib.sha256(TEXT.encode()).hexdigest())
    down = await call_ok(client, "download_file", src=up["path"])  # the path as the result named it
    assert (down["text"], down["base64"], down["sha256"]) == (TEXT, None, up["sha256"])

    binary = await call_ok(
        client, "upload_file", dest=place("docs/data.bin"), content=base64.b64encode(BINARY).decode(), encoding="base64"
    )
    assert on_disk(binary["path"]).read_bytes() == BINARY
    inline = await call_ok(client, "download_file", src=binary["path"])
    assert inline["text"] is None and base64.b64decode(inline["base64"]) == BINARY
    saved = await call_ok(client, "download_file", src=binary["path"], save_as="from-machine/data.bin")
    assert saved["host_file"] == str(transfers(tmp_path) / "from-machine" / "data.bin") and saved["text"] is None
    assert Path(saved["host_file"]).read_bytes() == BINARY and saved["base64"] is None
    again = await call_ok(client, "upload_file", dest=place("copy/data.bin"), host_file="from-machine/data.bin")
    assert on_disk(again["path"]).read_bytes() == BINARY and again["host_file"] == saved["host_file"]

    error = await call_error(client, "upload_file", dest=up["path"], content="replaced")
    assert "exists; pass overwrite=true" in error and on_disk(up["path"]).read_text(encoding="utf-8") == TEXT
    await call_ok(client, "upload_file", dest=up["path"], content="replaced", overwrite=True)
    assert on_disk(up["path"]).read_text() == "replaced"
    error = await call_error(client, "download_file", src=place("docs/no-such-file.txt"))
    assert "no file" in error


async def large_files_are_capped(client: Client, tmp_path: Path, place: Callable[[str], str], folder: Path) -> None:
    """A file over 2 MiB comes only through the transfer folder, one over 8 MiB not at all. `place(name)` is a path on
    the machine, `folder` where the machine keeps it."""
    (folder / "large.bin").write_bytes(b"\1" * (MAX_INLINE_FILE_BYTES + 1))
    error = await call_error(client, "download_file", src=place("large.bin"))
    assert "with save_as it is saved in the transfer folder" in error
    saved = await call_ok(client, "download_file", src=place("large.bin"), save_as="large.bin")
    assert saved["bytes"] == MAX_INLINE_FILE_BYTES + 1 and Path(saved["host_file"]).stat().st_size == saved["bytes"]
    (folder / "huge.bin").write_bytes(b"\1" * (MAX_TRANSFER_BYTES + 1))
    error = await call_error(client, "download_file", src=place("huge.bin"), save_as="huge.bin")
    assert f"at most {MAX_TRANSFER_BYTES} bytes" in error and not (transfers(tmp_path) / "huge.bin").exists()


async def test_local_backend_moves_files_only_inside_the_code_folders(xdisplay: VirtualDisplay, tmp_path: Path) -> None:
    workdir, writable = tmp_path / "work", tmp_path / "writable"
    writable.mkdir()
    outside = tmp_path / "outside"
    outside.mkdir()
    (outside / "secret.txt").write_text("host secret")
    async with served(tmp_path, code={"workdir": str(workdir), "writable_paths": [str(writable)]}) as client:
        await moves_both_ways(client, tmp_path, lambda name: name, Path)  # relative: in the work directory
        assert (workdir / "docs" / "note.txt").exists()
        put = await call_ok(client, "upload_file", dest=str(writable / "w.txt"), content="in a writable path")
        assert Path(put["path"]).read_text() == "in a writable path"
        error = await call_error(client, "download_file", src="docs")  # a directory
        assert "is not a regular file" in error

        for dest in ("../outside/x.txt", str(outside / "x.txt"), "/etc/symphony-test.txt", "~/x.txt"):
            error = await call_error(client, "upload_file", dest=dest, content="no")
            assert "is outside the code tools' work directory and writable paths" in error, error
        assert (
            sorted(p.name for p in outside.iterdir()) == ["secret.txt"] and not Path("/etc/symphony-test.txt").exists()
        )
        error = await call_error(client, "download_file", src=str(outside / "secret.txt"))
        assert "outside the code tools' work directory" in error and "host secret" not in error
        (workdir / "escape").symlink_to(outside)  # a link planted inside leads nowhere
        error = await call_error(client, "download_file", src="escape/secret.txt")
        assert "symbolic link" in error and "host secret" not in error
        error = await call_error(client, "upload_file", dest="escape/new.txt", content="no")
        assert "symbolic link" in error and not (outside / "new.txt").exists()
        (workdir / "link.txt").symlink_to(outside / "secret.txt")
        error = await call_error(client, "download_file", src="link.txt")
        assert "symbolic link" in error and "host secret" not in error


async def test_the_transfer_folder_is_the_only_host_folder_named_and_sizes_are_capped(
    xdisplay: VirtualDisplay, tmp_path: Path
) -> None:
    workdir = tmp_path / "work"
    outside = tmp_path / "outside"
    outside.mkdir()
    (outside / "secret.txt").write_text("host secret")
    async with served(tmp_path, code={"workdir": str(workdir)}) as client:
        await call_ok(client, "upload_file", dest="small.txt", content="small")
        for name in ("../outside/secret.txt", str(outside / "secret.txt"), "/etc/passwd"):
            error = await call_error(client, "upload_file", dest="got.txt", host_file=name)
            assert "outside the server's transfer folder" in error, error
            error = await call_error(client, "download_file", src="small.txt", save_as=name, overwrite=True)
            assert "outside the server's transfer folder" in error
        assert not (workdir / "got.txt").exists() and (outside / "secret.txt").read_text() == "host secret"
        transfers(tmp_path).mkdir(parents=True, exist_ok=True)
        (transfers(tmp_path) / "planted").symlink_to(outside / "secret.txt")
        error = await call_error(client, "upload_file", dest="got.txt", host_file="planted")
        assert "symbolic link" in error and not (workdir / "got.txt").exists()
        error = await call_error(client, "download_file", src="small.txt", save_as="planted", overwrite=True)
        assert "symbolic link" in error and (outside / "secret.txt").read_text() == "host secret"

        error = await call_error(client, "upload_file", dest="big.txt", content="x" * (MAX_INLINE_FILE_BYTES + 1))
        assert f"at most {MAX_INLINE_FILE_BYTES} bytes" in error and not (workdir / "big.txt").exists()
        error = await call_error(client, "upload_file", dest="both.txt", content="a", host_file="small.txt")
        assert "both.txt" not in os.listdir(workdir)
        error = await call_error(client, "upload_file", dest="bad.bin", content="not base64!", encoding="base64")
        assert "not valid base64" in error and not (workdir / "bad.bin").exists()

        await large_files_are_capped(client, tmp_path, lambda name: name, workdir)


@pytest.mark.parametrize(
    ("backend", "running", "expands_home"),
    [("osworld", running_controller, False), ("waa", running_waa_server, True)],
    ids=["osworld-controller", "waa-server"],
)
async def test_machine_backends_move_files_through_their_servers(
    backend: str,
    running: Callable[[Path], AbstractContextManager[Any]],
    expands_home: bool,
    xdisplay: VirtualDisplay,
    tmp_path: Path,
) -> None:
    """OSWorld's controller and WAA's server: the same transfers, refusals and caps; only WAA's server expands `~`
    (OSWorld's controller has no home for us, so a path under `~` is refused there as any relative one)."""
    home = tmp_path / "vm-home"
    with running(home) as vm:
        async with served(tmp_path, desktop={"backend": backend, "url": vm.url}) as client:
            await moves_both_ways(client, tmp_path, lambda name: str(home / name), Path)
            for relative in ["relative.txt"] if expands_home else ["relative.txt", "~/Documents/draft.txt"]:
                error = await call_error(client, "upload_file", dest=relative, content="no")
                assert "give an absolute path on the machine" in error, error
            assert not (home / "relative.txt").exists() and not (home / "Documents" / "draft.txt").exists()
            if expands_home:
                home_relative = await call_ok(client, "upload_file", dest="~/Documents/draft.txt", content="draft")
                assert home_relative["path"] == str(home / "Documents" / "draft.txt")  # expanded as the server does
                assert (home / "Documents" / "draft.txt").read_text() == "draft"
            error = await call_error(client, "download_file", src=str(home / "docs"))
            assert "is a directory, not a regular file" in error
            error = await call_error(client, "upload_file", dest=str(home / "docs"), content="no", overwrite=True)
            assert "is a directory; not replaced" in error and (home / "docs").is_dir()
            await large_files_are_capped(client, tmp_path, lambda name: str(home / name), home)


@pytest.fixture
def sshd(xdisplay: VirtualDisplay) -> Iterator[RunningSshd]:
    if reason := sshd_unavailable():
        pytest.skip(reason)
    with running_sshd() as server:
        yield server


async def test_ssh_backend_moves_files_over_sftp(sshd: RunningSshd, xdisplay: VirtualDisplay, tmp_path: Path) -> None:
    folder = f"transfer-{tmp_path.name}"
    desktop = {
        "backend": "ssh",
        "url": sshd.url,
        "ssh_key_file": str(sshd.key_file),
        "ssh_known_hosts": str(sshd.known_hosts),
        "ssh_python": "/usr/bin/python3",
        "ssh_display": xdisplay.name,
    }
    try:
        async with served(tmp_path, desktop=desktop) as client:

            def on_disk(path: str) -> Path:  # `~/x` on the machine: the SSH user's home
                return sshd.home / path.removeprefix("~/")

            await moves_both_ways(client, tmp_path, lambda name: f"~/{folder}/{name}", on_disk)
            made = sshd.home / folder / "docs" / "note.txt"
            assert made.stat().st_uid == pwd.getpwnam(sshd.user).pw_uid  # written as the machine's user
            error = await call_error(client, "download_file", src="/root/.bashrc")  # what the user cannot read
            assert "/root/.bashrc' on ssh://" in error and "Permission denied" in error and "internal" not in error
            error = await call_error(client, "upload_file", dest="/root/planted.txt", content="no")
            assert "Permission denied" in error and not Path("/root/planted.txt").exists()
    finally:
        shutil.rmtree(sshd.home / folder, ignore_errors=True)
