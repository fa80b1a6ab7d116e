"""The `symphony-mcp` command line. Flags override the environment and the config file."""

from __future__ import annotations

import argparse
import logging
import sys
from pathlib import Path
from typing import TYPE_CHECKING, Any, get_args

from symphony_mcp import __version__
from symphony_mcp.errors import SymphonyError, clip_message
from symphony_mcp.limits import MAX_ERROR_MESSAGE
from symphony_mcp.stop_signals import StopRequested, restore_default_signals, stop_before_serving

if TYPE_CHECKING:
    from symphony_mcp.config import Settings

# Settings and everything heavy are imported inside the functions: until main() has set up the stop
# signals, a SIGTERM ends the process the default way (exit -15), so that moment comes early.

# flag -> path of the setting (group, [role,] field); a command's parser defines the flags it takes
_FLAGS: dict[str, tuple[str, ...]] = {
    "transport": ("server", "transport"),
    "host": ("server", "host"),
    "port": ("server", "port"),
    "path": ("server", "path"),
    "token": ("server", "token"),
    "allowed_host": ("server", "allowed_hosts"),
    "schema_rules": ("server", "schema_rules"),
    "display": ("display", "display"),
    "virtual_display": ("display", "virtual"),
    "resolution": ("display", "resolution"),
    "window_manager": ("display", "window_manager"),
    "monitor": ("display", "monitor"),
    "image_format": ("screenshot", "format"),
    "quality": ("screenshot", "quality"),
    "max_width": ("screenshot", "max_width"),
    "max_height": ("screenshot", "max_height"),
    "max_bytes": ("screenshot", "max_bytes"),
    "grounder_url": ("models", "grounder", "base_url"),
    "grounder_model": ("models", "grounder", "model"),
    "grounding_family": ("grounding", "family"),
    "trajectory_dir": ("memory", "trajectory_dir"),
    "orchestrator_url": ("models", "orchestrator", "base_url"),
    "orchestrator_model": ("models", "orchestrator", "model"),
    "memoryer_url": ("models", "memoryer", "base_url"),
    "memoryer_model": ("models", "memoryer", "model"),
    "max_steps": ("orchestrator", "max_steps"),
    "task_timeout": ("orchestrator", "task_timeout_seconds"),
    "results": ("orchestrator", "results_dir"),
    "reflection": ("orchestrator", "reflection"),
    "enabled_tools": ("orchestrator", "enabled_tools"),
    "reset": ("orchestrator", "reset"),
    "function_calling": ("orchestrator", "function_calling"),
    "policy_enabled_tools": ("policy", "enabled_tools"),
    "policy_enabled_groups": ("policy", "enabled_groups"),
    "policy_disabled_tools": ("policy", "disabled_tools"),
    "policy_disabled_groups": ("policy", "disabled_groups"),
    "policy_read_only": ("policy", "read_only"),
    "policy_open_app_allow": ("policy", "open_app_allow"),
    "policy_confirm_tools": ("policy", "confirm_tools"),
    "policy_confirm_groups": ("policy", "confirm_groups"),
    "policy_timeout_seconds": ("policy", "timeout_seconds"),
    "policy_audit": ("policy", "audit"),
    "policy_audit_file": ("policy", "audit_file"),
    "docs_index": ("search", "docs_index"),
}
EXIT_FAIL, EXIT_USAGE, EXIT_ERROR = 1, 2, 3


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="symphony-mcp", description="Computer-use tools over MCP.")
    parser.add_argument("--version", action="version", version=f"symphony-mcp {__version__}")
    commands = parser.add_subparsers(dest="command", required=True)
    serve = commands.add_parser("serve", help="run the MCP server (stdio by default)")
    serve.add_argument("--config", type=Path, help="TOML or JSON settings file")
    serve.add_argument("--transport", choices=["stdio", "http"])
    serve.add_argument("--host", help="HTTP bind address (default 127.0.0.1)")
    serve.add_argument("--port", type=int, help="HTTP port (default 8765)")
    serve.add_argument("--path", help="HTTP endpoint path (default /mcp)")
    serve.add_argument("--token", help="bearer token for HTTP (required off loopback)")
    serve.add_argument("--allowed-host", action="append", help="extra accepted Host header, repeatable")
    serve.add_argument(
        "--schema-rules",
        action=argparse.BooleanOptionalAction,
        help="state refused argument combinations in input schemas as a root `not`, for validators and fuzzers; "
        "many hosts drop such tools (README)",
    )
    serve.add_argument("--display", help="X display to use (default $DISPLAY)")
    serve.add_argument("--virtual-display", choices=["auto", "always", "never"])
    serve.add_argument("--resolution", help="virtual display size, e.g. 1920x1080")
    serve.add_argument("--window-manager", help="window manager for the virtual display ('' for none)")
    serve.add_argument("--monitor", type=int, help="default monitor for screenshots (0 = all)")
    serve.add_argument("--image-format", choices=["jpeg", "png", "webp"])
    serve.add_argument("--quality", type=int)
    serve.add_argument("--max-width", type=int)
    serve.add_argument("--max-height", type=int)
    serve.add_argument("--max-bytes", type=int)
    _grounder_flags(serve)
    serve.add_argument("--trajectory-dir", type=Path, help="where task trajectories are written")
    _policy_flags(serve)
    serve.add_argument("--log-level", choices=["DEBUG", "INFO", "WARNING", "ERROR"])

    run = commands.add_parser("run", help="run a task with the bundled OS-Symphony orchestrator")
    run.add_argument("instruction", help="the task, in words")
    run.add_argument("--task-id", help="result directory name (default: time-based)")
    run.add_argument("--results", type=Path, help="results directory (default ./results)")
    run.add_argument("--checker", help="shell command whose exit status 0 means the task is done")
    run.add_argument("--force", action="store_true", help="run again even if the task finished before")
    run.add_argument("--server-url", help="use a running server (streamable HTTP) instead of spawning one")
    run.add_argument("--token", help="bearer token for --server-url")
    _agent_flags(run)

    bench = commands.add_parser(
        "bench",
        help="run a benchmark's tasks on parallel virtual desktops; `bench list BENCHMARK` lists its tasks",
        usage="%(prog)s [list] BENCHMARK [options]",
    )
    bench.add_argument("words", nargs="*", metavar="BENCHMARK", help="miniwob, osworld (or `list` BENCHMARK)")
    bench.add_argument("--adapter", metavar="MODULE:NAME", help="a custom adapter: a callable returning an Adapter")
    bench.add_argument(
        "--option",
        action="append",
        default=[],
        metavar="KEY=VALUE",
        help="an argument of the adapter, e.g. seeds=3 (miniwob) or tasks_dir=DIR (osworld); repeatable",
    )
    bench.add_argument("--tasks", type=_comma_list, help="comma-separated task ids")
    bench.add_argument("--domains", type=_comma_list, help="comma-separated domains")
    bench.add_argument("--all", action="store_true", help="the whole task list, not the default subset")
    bench.add_argument("--parallel", type=int, default=1, help="environments at once (default 1)")
    bench.add_argument("--results", type=Path, help="results root (default ./results): <results>/<benchmark>/...")
    bench.add_argument("--force", action="store_true", help="run finished tasks again too")
    bench.add_argument("--backend", choices=["local", "ray"], default="local")
    bench.add_argument("--ray-address", help="an existing Ray cluster, e.g. auto or ray://host:10001")
    bench.add_argument("--resolution", help="each environment's display size (default 1920x1080)")
    bench.add_argument("--quiet", action="store_true", help="no live view and no per-task lines")
    _agent_flags(bench)

    report = commands.add_parser("report", help="write the static HTML report of a results directory")
    report.add_argument("results", type=Path, help="results directory")

    docs = commands.add_parser("docs", help="the offline documentation index (search engine 'local')")
    docs_commands = docs.add_subparsers(dest="docs_command", required=True)
    index = docs_commands.add_parser("index", help="index local HTML documentation (replaces the index)")
    index.add_argument("paths", nargs="+", type=Path, metavar="PATH", help="HTML files or directories")
    search = docs_commands.add_parser("search", help="query the index: title, file and snippet of each hit")
    search.add_argument("query", help="free text, e.g. 'how to freeze rows in Calc'")
    search.add_argument("--limit", type=int, default=10, help="hits at most (default 10)")
    for command in (index, search):
        command.add_argument("--config", type=Path, help="TOML or JSON settings file")
        command.add_argument("--index", dest="docs_index", type=Path, help="the index file (default search.docs_index)")
    return parser


def _agent_flags(parser: argparse.ArgumentParser) -> None:
    """The orchestrator's and its models' settings, shared by `run` and `bench`."""
    parser.add_argument("--config", type=Path, help="TOML or JSON settings file (also given to the server)")
    parser.add_argument("--max-steps", type=int, help="action budget (default 15)")
    parser.add_argument("--task-timeout", type=float, metavar="SECONDS", help="wall time bound of each task")
    parser.add_argument("--no-reflection", dest="reflection", action="store_const", const=False)
    parser.add_argument("--enabled-tools", type=_comma_list, help="comma-separated")
    parser.add_argument("--reset", action="store_const", const=True, help="close the windows the task opened")
    parser.add_argument(
        "--function-calling", action="store_const", const=True, help="actions as native tool calls (OpenAI tools)"
    )
    parser.add_argument("--orchestrator-url", help="planner model endpoint")
    parser.add_argument("--orchestrator-model", help="planner model name")
    parser.add_argument("--memoryer-url", help="Reflection-Memory Agent model endpoint")
    parser.add_argument("--memoryer-model", help="Reflection-Memory Agent model name")
    _grounder_flags(parser)
    parser.add_argument("--log-level", choices=["DEBUG", "INFO", "WARNING", "ERROR"])


def _comma_list(value: str) -> list[str]:
    return [item.strip() for item in value.split(",") if item.strip()]


def _grounder_flags(parser: argparse.ArgumentParser) -> None:
    from symphony_mcp.config import GroundingFamilyName

    parser.add_argument("--grounder-url", help="grounding model endpoint, e.g. http://localhost:8000/v1")
    parser.add_argument("--grounder-model", help="grounding model name, e.g. ui-tars-1.5-7b")
    parser.add_argument("--grounding-family", choices=list(get_args(GroundingFamilyName)))


def _policy_flags(parser: argparse.ArgumentParser) -> None:
    """The README's "Policies"; lists are comma-separated, names and groups as tools/list shows them."""
    group = parser.add_argument_group("policy")
    for field, what in (
        ("enabled_tools", "offer only these tools (and those of --enabled-groups)"),
        ("enabled_groups", "offer only these groups' tools, e.g. read-only,ocr"),
        ("disabled_tools", "turn these tools off"),
        ("disabled_groups", "turn these groups off, e.g. destructive"),
        ("open_app_allow", "programs open_app may start and directories whose files it may open"),
        ("confirm_tools", "ask the user (MCP elicitation) before every call of these tools"),
        ("confirm_groups", "ask the user before every call of these groups' tools, e.g. destructive"),
    ):
        group.add_argument(f"--{field.replace('_', '-')}", dest=f"policy_{field}", metavar="LIST", help=what)
    group.add_argument(
        "--read-only", dest="policy_read_only", action="store_const", const=True, help="offer read-only tools only"
    )
    group.add_argument(
        "--timeout-seconds", dest="policy_timeout_seconds", type=float, metavar="SECONDS", help="time bound of a call"
    )
    group.add_argument("--audit-file", dest="policy_audit_file", type=Path, metavar="PATH", help="the audit log")
    group.add_argument("--no-audit", dest="policy_audit", action="store_const", const=False, help="no audit log")


def settings_from_args(args: argparse.Namespace) -> Settings:
    from symphony_mcp.config import load_settings

    overrides: dict[str, Any] = {}
    for flag, (*groups, field) in _FLAGS.items():
        value = getattr(args, flag, None)
        if value is not None:
            node = overrides
            for group in groups:
                node = node.setdefault(group, {})
            node[field] = value
    if getattr(args, "log_level", None):
        overrides["log_level"] = args.log_level
    return load_settings(getattr(args, "config", None), **overrides)


def main(argv: list[str] | None = None) -> int:
    stop_before_serving()
    try:
        return _command(argv)
    except StopRequested as stop:  # before `serve` began serving: nothing to end, nothing left running
        print(f"symphony-mcp: {stop.name} received while starting; stopped", file=sys.stderr)
        return 0


def _command(argv: list[str] | None) -> int:
    from pydantic import ValidationError

    args = build_parser().parse_args(argv)
    if args.command != "serve":
        restore_default_signals()  # the other commands handle Ctrl-C their own way
    if args.command == "report":
        return _report(args.results)
    try:
        settings = settings_from_args(args)
    except (ValidationError, ValueError) as exc:
        print(f"symphony-mcp: invalid settings: {exc}", file=sys.stderr)
        return EXIT_USAGE
    # Logs go to stderr: stdout carries the stdio transport. A run shows its live view there instead.
    level = settings.log_level if args.command == "serve" or getattr(args, "log_level", None) else "WARNING"
    logging.basicConfig(level=level, stream=sys.stderr, format="%(asctime)s %(levelname)s %(name)s: %(message)s")
    for handler in logging.getLogger().handlers:
        handler.addFilter(_clipped)
    if args.command == "serve":
        return _serve(settings)
    if args.command == "docs":
        return _docs(settings.search.docs_index, args)
    if args.command == "bench":
        return _bench(settings, args)
    return _run(settings, args)


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
    from rich.console import Console

    from symphony_mcp.orchestrator.api import TaskOutcome, run_task, spawned_server
    from symphony_mcp.orchestrator.checker import CommandChecker
    from symphony_mcp.orchestrator.connection import RemoteServer, ServerConnection
    from symphony_mcp.orchestrator.live import live_view

    checker = CommandChecker(args.checker, settings.orchestrator.checker_timeout) if args.checker else None
    connection: ServerConnection | None = RemoteServer(args.server_url, args.token) if args.server_url else None
    if connection is None and args.config is not None:
        connection = spawned_server(settings, "--config", str(args.config))
    console = Console(stderr=True)
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
        print(f"symphony-mcp: {exc}", file=sys.stderr)
        return EXIT_ERROR
    note = " (finished earlier; --force runs it again)" if outcome.skipped else ""
    message = f": {outcome.record.message}" if outcome.record.message else ""
    print(f"{outcome.outcome} {outcome.task_id} {outcome.directory}{note}{message}")
    return {"success": 0, "fail": EXIT_FAIL}.get(outcome.outcome, EXIT_ERROR)


def _report(results: Path) -> int:
    """A benchmark's folder (or a results root holding some) gets the benchmark page; any other the plain report."""
    from symphony_mcp.bench.report import benchmark_folders, write_bench_report
    from symphony_mcp.orchestrator.report import report_command

    folders = list(benchmark_folders(results))
    if not folders:
        return report_command(results)
    for folder in folders:
        print(write_bench_report(folder))
    return 0


def _bench(settings: Settings, args: argparse.Namespace) -> int:
    from rich.console import Console

    from symphony_mcp.bench.command import BenchRequest, list_tasks, run_bench
    from symphony_mcp.bench.registry import adapter_spec, parse_option
    from symphony_mcp.bench.report import write_bench_report
    from symphony_mcp.bench.types import TaskFilter

    listing = bool(args.words) and args.words[0] == "list"
    names = args.words[1:] if listing else args.words
    if len(names) > 1 or (not names and not args.adapter):
        print("symphony-mcp bench: give one BENCHMARK (or --adapter MODULE:NAME)", file=sys.stderr)
        return EXIT_USAGE
    selection = TaskFilter(tuple(args.tasks or ()), tuple(args.domains or ()), args.all)
    try:
        spec = adapter_spec(names[0] if names else None, args.adapter)
        options = tuple(parse_option(option) for option in args.option)
        if listing:
            print("\n".join(list_tasks(spec, selection, options)))
            return 0
        request = BenchRequest(
            spec,
            selection,
            options,
            args.parallel,
            args.force,
            args.backend,
            args.ray_address,
            args.quiet,
            ("--config", str(args.config)) if args.config else (),
        )
        summary, path = run_bench(request, settings, Console(stderr=True))
    except (SymphonyError, ValueError, OSError) as exc:
        print(f"symphony-mcp: {exc}", file=sys.stderr)
        return EXIT_ERROR
    except KeyboardInterrupt:
        print("symphony-mcp: stopped; unfinished tasks run again next time", file=sys.stderr)
        return 130
    overall = summary.overall
    rate = "—" if overall.success_rate is None else f"{overall.success_rate:.1%}"
    print(
        f"{summary.benchmark}: {overall.successes}/{overall.finished} succeeded ({rate}), "
        f"{len(summary.skipped)} skipped, {summary.ran_now} run now; {path}"
    )
    print(write_bench_report(path.parent))
    return EXIT_ERROR if summary.not_run else 0


def _docs(index: Path, args: argparse.Namespace) -> int:
    from symphony_mcp.search.docs_index import DocsIndex, build_index, plain_snippet

    try:
        if args.docs_command == "index":
            report = build_index(args.paths, index)
            skipped = ", ".join(f"{count} {why}" for why, count in report.skipped.items()) or "none"
            more = " (stopped at the page bound)" if report.truncated else ""
            print(f"indexed {report.pages} pages{more} in {report.seconds:.1f} s, skipped: {skipped}; {report.index}")
            return 0
        docs = DocsIndex(index)
        try:
            hits = docs.search(args.query, args.limit)
        finally:
            docs.close()
    except (SymphonyError, OSError) as exc:
        print(f"symphony-mcp: {exc}", file=sys.stderr)
        return EXIT_ERROR
    for number, hit in enumerate(hits, 1):
        print(f"{number}. {hit.title}\n   {hit.path}\n   {plain_snippet(hit.snippet)}")
    if not hits:
        print("no results", file=sys.stderr)
    return 0 if hits else EXIT_FAIL


def _serve(settings: Settings) -> int:
    from symphony_mcp.desktop.virtual_display import display_for
    from symphony_mcp.server import build_server, check_http_security, run
    from symphony_mcp.stop_signals import exit_now

    try:
        if settings.server.transport == "http":
            check_http_security(settings.server)
        with display_for(settings.display) as display:
            logging.getLogger(__name__).info("serving on display %s over %s", display, settings.server.transport)
            stopped_by = run(build_server(settings), settings)
    except (SymphonyError, ValueError) as exc:
        print(f"symphony-mcp: {exc}", file=sys.stderr)
        return 1
    if stopped_by is not None and settings.server.transport == "stdio":
        exit_now(0)  # everything is closed; only the stdin reader, blocked until stdin closes, remains
    return 0


if __name__ == "__main__":
    sys.exit(main())
