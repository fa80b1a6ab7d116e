"""upload_file and download_file on each backend beside the raw route they use, in one run.

Starts its own Xvfb (benchmark_desktop), the OSWorld stand-in controller (testkit/osworld_controller) and a real sshd
on a loopback port (testkit/sshd.py), and one symphony-mcp server per backend in this process, called through the
real MCP client in memory. Each round moves the same 1 MiB of every byte value (base64 in the call and the result):

- `upload_file` / `download_file` through the tool, per backend (local: the code work directory);
- the raw route without the tool: the OSWorld controller's /setup/upload and /file (`OsworldController`), SFTP
  put/get on the SSH connection (`SshMachine`), a plain write/read of the file here.

The tool adds what makes it safe: base64 in and out, the size and kind check before a read (OSWorld: `stat` through
/execute, SSH: an SFTP stat), an existence check before a write, the link-refusing walk on this host. Cases are
interleaved per round. Prints a markdown report and writes it to --output:

    python -m benchmarks.overhead.file_transfer
"""

from __future__ import annotations

import argparse
import asyncio
import base64
import datetime
import tempfile
import time
from collections.abc import Awaitable, Callable
from contextlib import AsyncExitStack
from pathlib import Path

from mcp import Client

from benchmarks.common import REPO, Stats, benchmark_desktop, invocation, log, machine_facts, publish_report, table
from symphony_mcp.config import load_settings
from symphony_mcp.desktop.remote.osworld_controller import OsworldController
from symphony_mcp.desktop.remote.ssh_machine import SshMachine
from symphony_mcp.server import build_server
from testkit.osworld_controller.process import running_controller
from testkit.sshd import running_sshd, sshd_unavailable

DEFAULT_OUTPUT = REPO / "benchmarks" / "results" / "file_transfer.md"
PAYLOAD = bytes(range(256)) * 4096  # 1 MiB
Case = Callable[[], Awaitable[object]]


async def measure(cases: dict[str, Case], repeats: int, warmups: int) -> dict[str, Stats]:
    samples: dict[str, list[float]] = {name: [] for name in cases}
    for round_number in range(warmups + repeats):
        for name, operation in cases.items():
            started = time.perf_counter()
            await operation()
            if round_number >= warmups:
                samples[name].append((time.perf_counter() - started) * 1000)
    return {name: Stats(tuple(values)) for name, values in samples.items()}


async def tool(client: Client, name: str, **arguments: object) -> None:
    result = await client.call_tool(name, arguments)
    if result.is_error:
        raise RuntimeError(f"{name} failed: {result.content}")
    if name == "download_file":
        assert result.structured_content is not None
        assert base64.b64decode(result.structured_content["base64"]) == PAYLOAD


async def run(args: argparse.Namespace, display: str, folder: Path) -> dict[str, Stats]:
    content = base64.b64encode(PAYLOAD).decode()
    with running_sshd() as sshd, running_controller(folder / "vm-home") as vm:
        ssh = {
            "backend": "ssh",
            "url": sshd.url,
            "ssh_key_file": str(sshd.key_file),
            "ssh_known_hosts": str(sshd.known_hosts),
            "ssh_python": "/usr/bin/python3",
            "ssh_display": display,
        }
        backends = {
            "local": ({"backend": "local"}, "bench.bin"),
            "osworld": ({"backend": "osworld", "url": vm.url}, str(folder / "vm-home" / "bench.bin")),
            "ssh": (ssh, "~/file-transfer-bench.bin"),
        }
        raw_controller = OsworldController(vm.url, 30)
        raw_ssh = SshMachine(sshd.url, sshd.known_hosts, sshd.key_file, "/usr/bin/python3", display)
        local_file = folder / "raw.bin"
        cases: dict[str, Case] = {}
        async with AsyncExitStack() as stack:
            for name, (desktop, path) in backends.items():
                settings = load_settings(
                    log_level="WARNING",  # INFO logs every HTTP request through rich: its time is not the tool's
                    desktop=desktop,
                    memory={"trajectory_dir": str(folder / f"traj-{name}")},
                    code={"workdir": str(folder / f"work-{name}")},
                )
                server = build_server(settings)
                stack.callback(server.close)
                client = await stack.enter_async_context(Client(server.mcp))
                cases[f"upload_file: {name}"] = lambda c=client, p=path: tool(
                    c, "upload_file", dest=p, content=content, encoding="base64", overwrite=True
                )
                cases[f"download_file: {name}"] = lambda c=client, p=path: tool(c, "download_file", src=p)
            osworld_path = backends["osworld"][1]
            cases["raw write: local"] = lambda: asyncio.to_thread(local_file.write_bytes, PAYLOAD)
            cases["raw read: local"] = lambda: asyncio.to_thread(local_file.read_bytes)
            cases["raw /setup/upload: osworld"] = lambda: asyncio.to_thread(
                raw_controller.upload, osworld_path, PAYLOAD
            )
            cases["raw /file: osworld"] = lambda: asyncio.to_thread(raw_controller.download, osworld_path)
            cases["raw SFTP put: ssh"] = lambda: asyncio.to_thread(raw_ssh.upload, "~/file-transfer-raw.bin", PAYLOAD)
            cases["raw SFTP get: ssh"] = lambda: asyncio.to_thread(raw_ssh.download, "~/file-transfer-raw.bin")
            try:
                return await measure(cases, args.repeats, args.warmups)
            finally:
                raw_controller.close()
                raw_ssh.close()
                for leftover in ("file-transfer-bench.bin", "file-transfer-raw.bin"):
                    (sshd.home / leftover).unlink(missing_ok=True)


def render(results: dict[str, Stats], args: argparse.Namespace, command: str, facts: list[str]) -> str:
    pairs = [
        ("upload", "local", "raw write: local"),
        ("download", "local", "raw read: local"),
        ("upload", "osworld", "raw /setup/upload: osworld"),
        ("download", "osworld", "raw /file: osworld"),
        ("upload", "ssh", "raw SFTP put: ssh"),
        ("download", "ssh", "raw SFTP get: ssh"),
    ]
    ratio_rows = [
        [
            f"{what}_file: {backend}",
            f"{results[f'{what}_file: {backend}'].median:.1f}",
            f"{results[raw].median:.1f}",
            f"{results[f'{what}_file: {backend}'].median / results[raw].median:.1f}x",
        ]
        for what, backend, raw in pairs
    ]
    rows = [[name, f"{s.median:.1f}", f"{s.p90:.1f}", f"{min(s.samples):.1f}"] for name, s in results.items()]
    return "\n".join(
        [
            "# upload_file and download_file per backend beside the raw route they use",
            "",
            f"- Date: {datetime.datetime.now(datetime.UTC):%Y-%m-%d %H:%M} UTC",
            *facts,
            "- Machines: the OSWorld stand-in controller (testkit/osworld_controller) and a real OpenSSH sshd on "
            "loopback ports (testkit/sshd.py), on the benchmark's own Xvfb; servers in this process, called through "
            "the MCP client in memory",
            f"- Payload: 1 MiB of every byte value, base64 in the call and the result; command: `{command}`",
            f"- Repetitions: {args.repeats} rounds after {args.warmups} warm-up rounds, cases interleaved; times in ms",
            "",
            "## The tool beside the raw route (medians)",
            "",
            *table(["case", "tool", "raw route", "ratio"], ratio_rows),
            "",
            "## All cases",
            "",
            *table(["case", "median", "p90", "min"], rows),
            "",
        ]
    )


def parse_args(argv: list[str] | None = None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--repeats", type=int, default=20)
    parser.add_argument("--warmups", type=int, default=3)
    parser.add_argument("--output", type=Path, default=DEFAULT_OUTPUT)
    return parser.parse_args(argv)


def main(argv: list[str] | None = None) -> int:
    args = parse_args(argv)
    if reason := sshd_unavailable():
        log(f"cannot run: {reason}")
        return 2
    command, facts = invocation(), machine_facts()
    with benchmark_desktop() as display, tempfile.TemporaryDirectory(prefix="file-transfer-") as folder:
        results = asyncio.run(run(args, display, Path(folder)))
    publish_report(render(results, args, command, facts), args.output)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
