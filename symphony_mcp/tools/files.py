"""MCP tools that move files to and from the machine the tools act on (files/transfer.py): on an OSWorld VM through
its controller, on a WindowsAgentArena machine through its server, on an SSH machine over SFTP, on this host only
inside the code tools' folders."""

from __future__ import annotations

from typing import Annotated

from mcp.types import ToolAnnotations
from pydantic import Field

from symphony_mcp.files.transfer import Encoding, FileMoved
from symphony_mcp.limits import MAX_INLINE_FILE_TEXT, MAX_PATH
from symphony_mcp.tools.arguments import both, given, missing
from symphony_mcp.tools.cores import Cores
from symphony_mcp.tools.definition import define_tool

WRITES_FILE = ToolAnnotations(readOnlyHint=False, destructiveHint=True, idempotentHint=True, openWorldHint=False)
READS_FILE = ToolAnnotations(readOnlyHint=False, destructiveHint=False, idempotentHint=True, openWorldHint=False)
HOST_FILE = "a relative name in the server's transfer folder, <trajectory_dir>/transfers"
MachinePath = Annotated[
    str,
    Field(
        min_length=1,
        max_length=MAX_PATH,
        description="the file on the machine (osworld: absolute; waa: absolute, or under ~; ssh: also ~/ or "
        "home-relative; local: in the code work directory or writable paths)",
    ),
]
HostFile = Annotated[str | None, Field(min_length=1, max_length=MAX_PATH, description=HOST_FILE)]
Overwrite = Annotated[bool, Field(description="replace an existing file")]


@define_tool(WRITES_FILE, refused=[both(given("content"), given("host_file")), missing("content", "host_file")])
async def upload_file(
    cores: Cores,
    dest: MachinePath,
    content: Annotated[
        str | None,
        Field(max_length=MAX_INLINE_FILE_TEXT, description="the file's content (up to 2 MiB)"),
    ] = None,
    encoding: Annotated[Encoding, Field(description="content as UTF-8 text or base64")] = "text",
    host_file: HostFile = None,
    overwrite: Overwrite = False,
) -> FileMoved:
    """Put a file on the machine the tools act on, from `content` or from `host_file` (up to 8 MiB); missing
    directories are made."""
    return await cores.files.upload(dest, content, encoding, host_file, overwrite)


@define_tool(READS_FILE)
async def download_file(
    cores: Cores,
    src: MachinePath,
    save_as: HostFile = None,
    overwrite: Overwrite = False,
) -> FileMoved:
    """Read a file from the machine the tools act on: its content in the result (up to 2 MiB), or with `save_as`
    into the transfer folder (up to 8 MiB)."""
    return await cores.files.download(src, save_as, overwrite)


DEFINITIONS = (upload_file, download_file)
