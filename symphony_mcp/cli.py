"""The `symphony-mcp` command line. Flags override the environment and the config file."""

from __future__ import annotations

import argparse
import logging
import sys
import textwrap
from collections.abc import Callable
from enum import IntEnum
from pathlib import Path
from types import UnionType
from typing import TYPE_CHECKING, Annotated, Any, Literal, Union, get_args, get_origin

from symphony_mcp import __version__
from symphony_mcp.errors import SettingsError, SymphonyError, clip_message
from symphony_mcp.limits import MAX_ERROR_MESSAGE
from symphony_mcp.stop_signals import StopRequested, restore_default_signals, stop_before_serving

if TYPE_CHECKING:
    from symphony_mcp.config import FlagSetting, Settings

# Settings and everything heavy are imported inside the functions: until main() has set up the stop
# signals, a SIGTERM ends the process the default way (exit -15), so that moment comes early.


class ExitCode(IntEnum):
    """Every status `symphony-mcp` exits with, for every command; `--help` and the README list these."""

    OK = 0
    FAILED = 1
    USAGE = 2
    UNAVAILABLE = 3
    INTERRUPTED = 130


EXIT_MEANINGS: dict[ExitCode, str] = {
    ExitCode.OK: "done: the server stopped cleanly, the task succeeded, the command did what it was asked",
    ExitCode.FAILED: "the work ran and came out negative: the task failed (run), no hits (docs search)",
    ExitCode.USAGE: "the command line or a setting is wrong: an unknown flag, a name that matches no tool, "
    "group, benchmark or adapter option (the message lists the known ones, for tools and groups the closest), "
    "a bad value, a refused combination; nothing was done",
    ExitCode.UNAVAILABLE: "the settings are valid but something they need is missing or failed: a model "
    "endpoint, the display, a dependency or benchmark package, the docs index, the port; a benchmark's "
    "tasks that could not run; or the task ended in Error",
    ExitCode.INTERRUPTED: "stopped by Ctrl-C during a benchmark (unfinished tasks run again next time)",
}


def exit_code_for(error: BaseException) -> ExitCode:
    """The status of a command that stopped on `error`: settings the user can correct, or a missing part."""
    from pydantic import ValidationError

    return ExitCode.USAGE if isinstance(error, (SettingsError, ValidationError)) else ExitCode.UNAVAILABLE


def _fail(error: BaseException) -> ExitCode:
    print(f"symphony-mcp: {error}", file=sys.stderr)
    return exit_code_for(error)


FETCH_PARALLEL = 4  # downloads at once by default: a few, not a flood on the file hosts

EPILOG = "exit status:\n" + "\n".join(
    textwrap.fill(meaning, 79, initial_indent=f"  {int(code):<4} ", subsequent_indent=" " * 7)
    for code, meaning in EXIT_MEANINGS.items()
)


def _command(commands: Any, name: str, summary: str, description: str, **options: Any) -> argparse.ArgumentParser:
    """A subcommand whose --help says what it does and ends with the exit statuses."""
    return commands.add_parser(
        name,
        help=summary,
        description=textwrap.fill(description, 79),
        epilog=EPILOG,
        formatter_class=argparse.RawDescriptionHelpFormatter,
        **options,
    )


def build_parser() -> argparse.ArgumentParser:
    from symphony_mcp.config import comma_list

    parser = argparse.ArgumentParser(
        prog="symphony-mcp",
        description="Computer-use tools over MCP: the server, the bundled OS-Symphony orchestrator, benchmarks.",
        epilog=EPILOG,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    parser.add_argument("--version", action="version", version=f"symphony-mcp {__version__}")
    commands = parser.add_subparsers(dest="command", required=True)
    serve = _command(
        commands,
        "serve",
        "run the MCP server (stdio by default)",
        "Serve the computer-use tools over MCP: stdio for a host that starts the server, or streamable HTTP "
        "(--transport http) for clients that connect. Without a display (no $DISPLAY, no --display) it starts "
        "its own Xvfb with openbox and stops it on exit. Flags override the environment (SYMPHONY_*) and "
        "--config; every setting is in the README's Settings table.",
    )
    serve.add_argument("--config", type=Path, help="TOML or JSON settings file")
    _setting_flags(serve, "serve")

    run = _command(
        commands,
        "run",
        "run a task with the bundled OS-Symphony orchestrator",
        "Run one task with the bundled OS-Symphony orchestrator over a spawned server (or --server-url). It "
        "needs the orchestrator role's model (--orchestrator-url/--orchestrator-model or "
        "SYMPHONY_MODELS__ORCHESTRATOR__* / SYMPHONY_MODELS__DEFAULT__*); the grounder and memoryer are optional.",
    )
    run.add_argument("instruction", help="the task, in words")
    run.add_argument("--task-id", help="result directory name (default: time-based)")
    run.add_argument("--checker", help="shell command whose exit status 0 means the task is done")
    run.add_argument("--force", action="store_true", help="run again even if the task finished before")
    run.add_argument("--server-url", help="use a running server (streamable HTTP) instead of spawning one")
    run.add_argument("--token", help="bearer token for --server-url")
    run.add_argument("--config", type=Path, help="TOML or JSON settings file (also given to the server)")
    _setting_flags(run, "run")

    bench = _command(
        commands,
        "bench",
        "run a benchmark's tasks on parallel virtual desktops; `bench list BENCHMARK` lists its tasks",
        "Run a benchmark's tasks through the bundled orchestrator, each environment on its own virtual "
        "desktop, with resume; `bench list BENCHMARK` lists the tasks, skipped ones with the reason; "
        "`bench osworld fetch-cache DIR` downloads the selected OSWorld tasks' files (on a networked machine) into "
        "a cache with a manifest of sizes and sha256 sums, for OSWORLD_CACHE: resumable, checked, never fetched twice.",
        usage="%(prog)s [list] BENCHMARK [options] | %(prog)s osworld fetch-cache DIR [options]",
    )
    bench.add_argument(
        "words", nargs="*", metavar="BENCHMARK", help="miniwob, osworld, osworld-vm, waa (or `list` BENCHMARK)"
    )
    bench.add_argument("--adapter", metavar="MODULE:NAME", help="a custom adapter: a callable returning an Adapter")
    bench.add_argument(
        "--option",
        action="append",
        default=[],
        metavar="KEY=VALUE",
        help="an argument of the adapter, e.g. seeds=3 (miniwob) or tasks_dir=DIR (osworld); repeatable",
    )
    bench.add_argument("--tasks", type=comma_list, help="comma-separated task ids")
    bench.add_argument("--domains", type=comma_list, help="comma-separated domains")
    bench.add_argument("--all", action="store_true", help="the whole task list, not the default subset")
    bench.add_argument(
        "--parallel",
        type=int,
        help=f"environments at once (default 1); fetch-cache: downloads at once ({FETCH_PARALLEL})",
    )
    bench.add_argument(
        "--mirror",
        action="append",
        default=[],
        metavar="PREFIX=REPLACEMENT",
        help="fetch-cache: fetch URLs starting with PREFIX from REPLACEMENT instead (a mirror); repeatable",
    )
    bench.add_argument(
        "--machines",
        type=comma_list,
        metavar="URL,...",
        help="remote machines, one environment each: osworld-vm and waa http://VM:5000, macosarena ssh://user@host:22",
    )
    bench.add_argument(
        "--machine-reset",
        metavar="COMMAND",
        help="run here before each task to revert a machine; {url} {host} {port} {index} are filled in",
    )
    bench.add_argument("--force", action="store_true", help="run finished tasks again too")
    bench.add_argument(
        "--backend", choices=["local", "ray"], default="local", help="environments here (default) or on Ray"
    )
    bench.add_argument("--ray-address", help="an existing Ray cluster, e.g. auto or ray://host:10001")
    bench.add_argument("--quiet", action="store_true", help="no live view and no per-task lines")
    bench.add_argument("--config", type=Path, help="TOML or JSON settings file (also given to the servers)")
    _setting_flags(bench, "bench")

    account = _command(
        commands,
        "osworld-user",
        "as root: create or remove the account OSWorld's tasks assume (user `user`)",
        "As root: create, remove or check the local account OSWorld's tasks assume (user `user`), which the "
        "OSWorld adapter runs each task's setup and apps as.",
    )
    account.add_argument(
        "action", choices=["create", "remove", "status"], help="make the account, delete it, or say whether it is ready"
    )

    doctor = _command(
        commands,
        "doctor",
        "what this machine has and lacks for each capability, with fixes",
        "Check what this machine has and lacks for each capability (display, window manager, OCR data, code "
        "confinement, Chromium, model endpoints, the live view, OSWorld's account): one line each, with the "
        "exact command or setting that fixes it. With a remote desktop backend (SYMPHONY_DESKTOP__BACKEND osworld or "
        "ssh, from the environment or --config) it checks the remote machine instead of this host's display.",
    )
    doctor.add_argument("--config", type=Path, help="TOML or JSON settings file (the server's)")
    doctor.add_argument("--json", action="store_true", help="the findings as JSON, for machines")

    report = _command(
        commands,
        "report",
        "write the static HTML report of a results directory",
        "Write the static HTML report of a results directory (of `run` or `bench`); it opens offline.",
    )
    report.add_argument("results", type=Path, help="results directory")

    docs = _command(
        commands,
        "docs",
        "the offline documentation index (search engine 'local')",
        "Build and query the offline documentation index that tutorial search uses with SYMPHONY_SEARCH__ENGINE=local.",
    )
    docs_commands = docs.add_subparsers(dest="docs_command", required=True)
    index = _command(
        docs_commands,
        "index",
        "index local HTML documentation (replaces the index)",
        "Index local HTML documentation, e.g. /usr/share/doc/python3.11/html; the new index replaces the old "
        "one only once it is complete.",
    )
    index.add_argument("paths", nargs="+", type=Path, metavar="PATH", help="HTML files or directories")
    search = _command(
        docs_commands,
        "search",
        "query the index: title, file and snippet of each hit",
        "Query the offline documentation index: title, file and snippet of each hit.",
    )
    search.add_argument("query", help="free text, e.g. 'how to freeze rows in Calc'")
    search.add_argument("--limit", type=int, default=10, help="hits at most (default 10)")
    for command in (index, search):
        command.add_argument("--config", type=Path, help="TOML or JSON settings file")
        _setting_flags(command, "docs")
    return parser


def _setting_flags(parser: argparse.ArgumentParser, command: str) -> None:
    """The flags of the settings `command` takes (config.py marks each with a `Flag`), in groups named after
    the settings' groups; each flag's help is its setting's description, default and environment variable."""
    groups: dict[str, Any] = {}
    for setting in setting_flags(command):
        group = setting.path[0] if len(setting.path) > 1 else "other"
        if group not in groups:
            groups[group] = parser.add_argument_group(f"{group} settings")
        groups[group].add_argument(
            setting.flag, dest=setting.dest, help=setting.help.replace("%", "%%"), **_parsing(setting)
        )


def setting_flags(command: str) -> list[FlagSetting]:
    """The settings whose flags `command` takes."""
    from symphony_mcp.config import flag_settings

    return [setting for setting in flag_settings() if command in setting.commands]


def _parsing(setting: FlagSetting) -> dict[str, Any]:
    """How argparse reads a setting's flag: a switch, a choice, a list (repeatable, comma-separated), or text
    that the settings parse (a number, a path, a size)."""
    kind = setting.field.annotation
    if get_origin(kind) in (Union, UnionType):  # X | None
        kind = next(arg for arg in get_args(kind) if arg is not type(None))
    if get_origin(kind) is Annotated:  # a list setting's parsing rule (config.ListSetting)
        kind = get_args(kind)[0]
    if kind is bool:
        return {"action": argparse.BooleanOptionalAction}
    if get_origin(kind) is Literal:
        return {"choices": list(get_args(kind))}
    if get_origin(kind) is list:
        from symphony_mcp.config import comma_list

        return {"action": "extend", "type": comma_list, "metavar": setting.metavar or "LIST"}
    return {"metavar": setting.metavar or setting.flag.removeprefix("--").replace("-", "_").upper()}


def settings_from_args(args: argparse.Namespace) -> Settings:
    """The settings with the flags given on the command line on top."""
    from symphony_mcp.config import flag_settings, load_settings

    overrides: dict[str, Any] = {}
    for setting in flag_settings():
        value = getattr(args, setting.dest, None)
        if value is not None:
            *groups, field = setting.path
            node = overrides
            for group in groups:
                node = node.setdefault(group, {})
            node[field] = value
    return load_settings(getattr(args, "config", None), **overrides)


def main(argv: list[str] | None = None) -> int:
    stop_before_serving()
    try:
        return _dispatch(argv)
    except StopRequested as stop:  # before `serve` began serving: nothing to end, nothing left running
        print(f"symphony-mcp: {stop.name} received while starting; stopped", file=sys.stderr)
        return ExitCode.OK


def _dispatch(argv: list[str] | None) -> int:
    from pydantic import ValidationError

    args = build_parser().parse_args(argv)
    if args.command != "serve":
        restore_default_signals()  # the other commands handle Ctrl-C their own way
    if args.command == "report":
        return _report(args.results)
    if args.command == "osworld-user":
        return _osworld_user(args.action)
    try:
        settings = settings_from_args(args)
    except (ValidationError, ValueError) as exc:
        print(f"symphony-mcp: invalid settings: {exc}", file=sys.stderr)
        return ExitCode.USAGE
    # Logs go to stderr: stdout carries the stdio transport. A run shows its live view there instead.
    level = settings.log_level if args.command == "serve" or getattr(args, "log_level", None) else "WARNING"
    logging.basicConfig(level=level, stream=sys.stderr, format="%(asctime)s %(levelname)s %(name)s: %(message)s")
    for handler in logging.getLogger().handlers:
        handler.addFilter(_clipped)
    if args.command in ("serve", "run", "bench"):
        try:
            _check_tool_names(settings, args.command)
        except SettingsError as exc:
            return _fail(exc)
    if args.command == "serve":
        return _serve(settings)
    if args.command == "doctor":
        from symphony_mcp.doctor import diagnose, report

        text, missing = report(diagnose(settings), args.json)
        print(text)
        return ExitCode.UNAVAILABLE if missing else ExitCode.OK
    if args.command == "docs":
        return _docs(settings.search.docs_index, args)
    if args.command == "bench":
        return _bench(settings, args)
    return _run(settings, args)


def _check_tool_names(settings: Settings, command: str) -> None:
    """Names of tools and groups are checked before a display, a server or a model starts (one registry)."""
    from symphony_mcp.policy.tools import check_names

    check_names(settings.policy)
    if command != "serve":
        from symphony_mcp.orchestrator.action_space import check_enabled_tools

        check_enabled_tools(settings.orchestrator.enabled_tools)


def _osworld_user(action: str) -> int:
    """Run the account script shipped in the package (a wheel install has no scripts/ folder)."""
    import subprocess

    from symphony_mcp.bench.osworld.account import SCRIPT

    return subprocess.run(["bash", str(SCRIPT), action], check=False).returncode


def _clipped(record: logging.LogRecord) -> bool:
    """Cut every log line to a bounded size: some lines (the SDK's too) quote what a caller sent, whole."""
    message = record.getMessage()
    if len(message) > MAX_ERROR_MESSAGE:
        record.msg, record.args = clip_message(message), None
    if record.exc_info and not record.exc_text:
        record.exc_text = clip_message(logging.Formatter().formatException(record.exc_info))
    return True


def _run(settings: Settings, args: argparse.Namespace) -> int:
    import anyio

    from symphony_mcp.orchestrator.api import TaskOutcome, run_task, spawned_server
    from symphony_mcp.orchestrator.checker import CommandChecker
    from symphony_mcp.orchestrator.connection import RemoteServer, ServerConnection
    from symphony_mcp.orchestrator.live import live_view
    from symphony_mcp.orchestrator.terminal import make_console

    checker = CommandChecker(args.checker, settings.orchestrator.checker_timeout) if args.checker else None
    connection: ServerConnection | None = RemoteServer(args.server_url, args.token) if args.server_url else None
    if connection is None and args.config is not None:
        connection = spawned_server(settings, "--config", str(args.config))
    console = make_console(stderr=True)
    try:
        with live_view(console) as sink:

            async def go() -> TaskOutcome:
                return await run_task(
                    args.instruction,
                    settings=settings,
                    task_id=args.task_id,
                    connection=connection,
                    checker=checker,
                    force=args.force,
                    on_event=sink,
                )

            outcome = anyio.run(go)
    except (SymphonyError, ValueError, OSError) as exc:
        return _fail(exc)
    note = " (finished earlier; --force runs it again)" if outcome.skipped else ""
    message = f": {outcome.record.message}" if outcome.record.message else ""
    print(f"{outcome.outcome} {outcome.task_id} {outcome.directory}{note}{message}")
    return {"success": ExitCode.OK, "unverified": ExitCode.OK, "fail": ExitCode.FAILED}.get(
        outcome.outcome, ExitCode.UNAVAILABLE
    )


def _report(results: Path) -> int:
    """A benchmark's folder (or a results root holding some) gets the benchmark page; any other the plain report."""
    from symphony_mcp.bench.report import benchmark_folders, write_bench_report
    from symphony_mcp.orchestrator.report import report_command

    folders = list(benchmark_folders(results))
    if not folders:
        return report_command(results)
    for folder in folders:
        print(write_bench_report(folder))
    return ExitCode.OK


def _bench(settings: Settings, args: argparse.Namespace) -> int:
    from symphony_mcp.bench.command import list_tasks, run_bench
    from symphony_mcp.bench.machines import parse_machines
    from symphony_mcp.bench.registry import adapter_spec, parse_option
    from symphony_mcp.bench.report import write_bench_report
    from symphony_mcp.bench.request import BenchRequest
    from symphony_mcp.bench.types import TaskFilter
    from symphony_mcp.orchestrator.terminal import make_console

    listing = bool(args.words) and args.words[0] == "list"
    names = args.words[1:] if listing else args.words
    if len(names) > 1 and names[1] == "fetch-cache":
        return _fetch_cache(args, names)
    if len(names) > 1 or (not names and not args.adapter):
        print("symphony-mcp bench: give one BENCHMARK (or --adapter MODULE:NAME)", file=sys.stderr)
        return ExitCode.USAGE
    selection = TaskFilter(tuple(args.tasks or ()), tuple(args.domains or ()), args.all)
    try:
        spec = adapter_spec(names[0] if names else None, args.adapter)
        options = tuple(parse_option(option) for option in args.option)
        if listing:
            print("\n".join(list_tasks(spec, selection, options)))
            return ExitCode.OK
        if args.machines and args.parallel is not None:
            raise SettingsError("--parallel and --machines: with machines there is one environment per machine")
        request = BenchRequest(
            spec,
            selection,
            options,
            1 if args.parallel is None else args.parallel,
            args.force,
            args.backend,
            args.ray_address,
            args.quiet,
            ("--config", str(args.config)) if args.config else (),
            parse_machines(args.machines or []),
            args.machine_reset,
        )
        summary, path = run_bench(request, settings, make_console(stderr=True))
    except (SymphonyError, ValueError, OSError) as exc:
        return _fail(exc)
    except KeyboardInterrupt:
        print("symphony-mcp: stopped; unfinished tasks run again next time", file=sys.stderr)
        return ExitCode.INTERRUPTED
    overall = summary.overall
    rate = "—" if overall.success_rate is None else f"{overall.success_rate:.1%}"
    print(
        f"{summary.scope or summary.benchmark}: {overall.successes}/{overall.finished} succeeded ({rate}), "
        f"{len(summary.skipped)} skipped, {summary.ran_now} run now; {path}"
    )
    print(write_bench_report(path.parent))
    return ExitCode.UNAVAILABLE if summary.not_run else ExitCode.OK


def _fetch_cache(args: argparse.Namespace, names: list[str]) -> int:
    """`bench osworld fetch-cache DIR`: the selected tasks' files, downloaded with a manifest (osworld/fetch.py)."""
    from symphony_mcp.bench.osworld.adapter import DEFAULT_DOMAINS, OSWorldAdapter
    from symphony_mcp.bench.osworld.fetch import fetch_cache, parse_mirror
    from symphony_mcp.bench.osworld.tasks import load_task_set, select
    from symphony_mcp.bench.registry import adapter_spec, load_adapter, parse_option
    from symphony_mcp.bench.types import TaskFilter

    if names[0] != "osworld" or len(names) != 3:
        print("symphony-mcp bench: usage: bench osworld fetch-cache DIR [--all|--domains|--tasks]", file=sys.stderr)
        return ExitCode.USAGE
    try:
        adapter = load_adapter(adapter_spec("osworld", None), tuple(map(parse_option, args.option)))
        assert isinstance(adapter, OSWorldAdapter)
        if adapter.tasks_dir is None:
            raise SettingsError("no OSWorld task folder: give --option tasks_dir=DIR or set OSWORLD_TASKS")
        mirrors = [parse_mirror(text) for text in args.mirror]
        selection = TaskFilter(tuple(args.tasks or ()), tuple(args.domains or ()), args.all)
        tasks = select(load_task_set(adapter.tasks_dir, adapter.task_list).tasks, selection, DEFAULT_DOMAINS)
        folder = Path(names[2]).expanduser()
        parallel = FETCH_PARALLEL if args.parallel is None else args.parallel
        report = fetch_cache(tasks, folder, mirrors, parallel, _fetch_line(args.quiet))
    except (SymphonyError, ValueError, OSError, TypeError) as exc:
        return _fail(exc)
    print(
        f"{len(tasks)} tasks: {report.fetched} files fetched, {report.present} already there, "
        f"{len(report.failed)} failed; {folder}"
    )
    for failure in report.failed:
        print(f"  failed: {failure}", file=sys.stderr)
    return ExitCode.UNAVAILABLE if report.failed else ExitCode.OK


def _fetch_line(quiet: bool) -> Callable[[Any, str], None]:
    def line(file: Any, what: str) -> None:
        if not quiet:
            print(f"{what}: {file.task_id}/{file.name}", file=sys.stderr)

    return line


def _docs(index: Path, args: argparse.Namespace) -> int:
    from symphony_mcp.search.docs_index import DocsIndex, build_index, plain_snippet

    try:
        if args.docs_command == "index":
            report = build_index(args.paths, index)
            skipped = ", ".join(f"{count} {why}" for why, count in report.skipped.items()) or "none"
            more = " (stopped at the page bound)" if report.truncated else ""
            print(f"indexed {report.pages} pages{more} in {report.seconds:.1f} s, skipped: {skipped}; {report.index}")
            return ExitCode.OK
        docs = DocsIndex(index)
        try:
            hits = docs.search(args.query, args.limit)
        finally:
            docs.close()
    except (SymphonyError, OSError) as exc:
        return _fail(exc)
    for number, hit in enumerate(hits, 1):
        print(f"{number}. {hit.title}\n   {hit.path}\n   {plain_snippet(hit.snippet)}")
    if not hits:
        print("no results", file=sys.stderr)
    return ExitCode.OK if hits else ExitCode.FAILED


def _serve(settings: Settings) -> int:
    from symphony_mcp.desktop.live_view import live_view_for
    from symphony_mcp.desktop.virtual_display import display_for
    from symphony_mcp.server import build_server, check_http_security, run
    from symphony_mcp.stop_signals import exit_now

    try:
        if settings.server.transport == "http":
            check_http_security(settings.server)
        if settings.desktop.backend != "local":  # the tools act on a remote machine: no display of this host
            logging.getLogger(__name__).info(
                "serving the %s machine at %s over %s",
                settings.desktop.backend,
                settings.desktop.url,
                settings.server.transport,
            )
            stopped_by = run(build_server(settings), settings)
        else:
            with display_for(settings.display) as display, live_view_for(display, settings.view):
                logging.getLogger(__name__).info("serving on display %s over %s", display, settings.server.transport)
                stopped_by = run(build_server(settings), settings)
    except (SymphonyError, ValueError, OSError) as exc:
        return _fail(exc)
    if stopped_by is not None and settings.server.transport == "stdio":
        exit_now(0)  # everything is closed; only the stdin reader, blocked until stdin closes, remains
    return ExitCode.OK


if __name__ == "__main__":
    sys.exit(main())
