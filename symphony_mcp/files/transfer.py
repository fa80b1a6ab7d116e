"""Moving files between the caller (or the server's transfer folder on this host) and the machine the tools act on:
the core of upload_file and download_file.

A file comes from the call (text or base64) or from the transfer folder, and goes to the call's result or into the
transfer folder. The transfer folder (`<trajectory_dir>/transfers`) is the only place on this host these tools read
or write for the caller besides the machine itself, so no host path outside the server's own folders is ever named
by a caller; on the local backend the machine is this host, and there the tools reach only the code tools' folders.
"""

from __future__ import annotations

import asyncio
import base64
import binascii
import hashlib
from typing import Literal

from pydantic import BaseModel, Field

from symphony_mcp.errors import InvalidInputError
from symphony_mcp.files.machines import FileTooBigError, FolderFiles, MachineFiles, too_big
from symphony_mcp.limits import MAX_INLINE_FILE_BYTES, MAX_TRANSFER_BYTES

TRANSFER_FOLDER = "transfers"  # under the trajectory directory
Encoding = Literal["text", "base64"]


class FileMoved(BaseModel):
    """A file written on the machine (upload_file) or read from it (download_file)."""

    machine: str = Field(description="backend and URL")
    path: str = Field(description="on the machine")
    bytes: int
    sha256: str
    host_file: str | None = Field(None, description="the copy in the transfer folder")
    text: str | None = Field(None, description="the content read, when UTF-8")
    base64: str | None = Field(None, description="the content read, when not UTF-8")


def decoded(content: str, encoding: Encoding) -> bytes:
    if encoding == "text":
        return content.encode("utf-8", "surrogatepass")
    try:
        return base64.b64decode(content, validate=True)
    except (binascii.Error, ValueError):
        raise InvalidInputError(
            "content is not valid base64 (encoding='base64'); give encoding='text' for text"
        ) from None


class FileTransfer:
    """upload_file and download_file on one machine, with the server's transfer folder on this host."""

    def __init__(self, machine: MachineFiles, host_folder: FolderFiles, where: str) -> None:
        self.machine = machine
        self.host_folder = host_folder
        self.where = where  # the backend and its URL, as results name the machine

    async def upload(
        self, dest: str, content: str | None, encoding: Encoding, host_file: str | None, overwrite: bool
    ) -> FileMoved:
        if (content is None) == (host_file is None):
            raise InvalidInputError("give the file as content, or as host_file in the transfer folder (one of them)")
        if content is not None:
            data = decoded(content, encoding)
            if len(data) > MAX_INLINE_FILE_BYTES:
                raise too_big("content", len(data), MAX_INLINE_FILE_BYTES)
            source = None
        else:
            assert host_file is not None
            source, data = await asyncio.to_thread(self.host_folder.read, host_file, MAX_TRANSFER_BYTES)
        path = await asyncio.to_thread(self.machine.write, dest, data, overwrite)
        return FileMoved(
            machine=self.where, path=path, bytes=len(data), sha256=hashlib.sha256(data).hexdigest(), host_file=source
        )

    async def download(self, src: str, save_as: str | None, overwrite: bool) -> FileMoved:
        if save_as is not None:
            self.host_folder.place(save_as)  # refused before anything is read
        cap = MAX_TRANSFER_BYTES if save_as is not None else MAX_INLINE_FILE_BYTES
        try:
            path, data = await asyncio.to_thread(self.machine.read, src, cap)
        except FileTooBigError as exc:
            hint = (
                ""
                if save_as is not None
                else f"; with save_as it is saved in the transfer folder (up to {MAX_TRANSFER_BYTES})"
            )
            raise FileTooBigError(f"{exc}{hint}") from None
        moved = FileMoved(machine=self.where, path=path, bytes=len(data), sha256=hashlib.sha256(data).hexdigest())
        if save_as is not None:
            moved.host_file = await asyncio.to_thread(self.host_folder.write, save_as, data, overwrite)
            return moved
        try:
            moved.text = data.decode("utf-8")
        except UnicodeDecodeError:
            moved.base64 = base64.b64encode(data).decode("ascii")
        return moved
