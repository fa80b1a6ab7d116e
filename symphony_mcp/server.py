"""Build the MCP server from the tool modules and run it over stdio or streamable HTTP."""

from __future__ import annotations

import contextlib
import logging
from collections.abc import AsyncIterator, Callable, Iterator
from contextlib import asynccontextmanager
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import anyio
from mcp.server.context import CallNext, HandlerResult, ServerRequestContext
from mcp.server.mcpserver import MCPServer
from mcp.server.transport_security import TransportSecuritySettings
from mcp.shared.exceptions import MCPError
from mcp.types import Tool
from starlette.types import ASGIApp

if TYPE_CHECKING:
    import uvicorn

from symphony_mcp import __version__
from symphony_mcp.code.coder import CoderService
from symphony_mcp.code.confine import bwrap_fix, weaker_than_bwrap
from symphony_mcp.code.local import CODE_WORKDIR, LocalExecutor
from symphony_mcp.code.remote import RemoteExecutor
from symphony_mcp.code.ssh import SshExecutor
from symphony_mcp.code.waa import WaaExecutor
from symphony_mcp.config import PolicySettings, ServerSettings, Settings, is_loopback, parse_geometry
from symphony_mcp.desktop.actions import DesktopActions
from symphony_mcp.desktop.local import LocalDesktop
from symphony_mcp.desktop.protocol import Desktop
from symphony_mcp.desktop.recorder import ActionRecorder
from symphony_mcp.desktop.records import ActionLog
from symphony_mcp.desktop.remote.osworld import OsworldDesktop
from symphony_mcp.desktop.remote.osworld_controller import controller_for, shared_client
from symphony_mcp.desktop.remote.ssh import SshDesktop
from symphony_mcp.desktop.remote.ssh_machine import SshMachine
from symphony_mcp.desktop.remote.waa import WaaDesktop
from symphony_mcp.desktop.remote.waa_controller import WaaController
from symphony_mcp.desktop.screen import Screen
from symphony_mcp.desktop.thread import DesktopThread
from symphony_mcp.elements.acting import ElementActions
from symphony_mcp.elements.osworld_source import OsworldTreeSource
from symphony_mcp.elements.reader import ElementReader
from symphony_mcp.elements.waa_tree import WAA_NO_ACTIONS, osworld_shaped
from symphony_mcp.errors import SettingsError, clip, clip_message
from symphony_mcp.files.machines import FolderFiles, MachineFiles, OsworldFiles, SshFiles, WaaFiles
from symphony_mcp.files.transfer import TRANSFER_FOLDER, FileTransfer
from symphony_mcp.http_auth import BearerTokenMiddleware
from symphony_mcp.imaging.geometry import Rect
from symphony_mcp.limits import MAX_ECHO
from symphony_mcp.memory.manager import DEFAULT_SESSION, TaskManager, current_session
from symphony_mcp.models.registry import ModelRegistry
from symphony_mcp.policy.programs import ProgramAllowList
from symphony_mcp.policy.tools import check_names, check_registered
from symphony_mcp.sdk_internals import lowlevel_server
from symphony_mcp.search.searcher import TutorialSearcher
from symphony_mcp.stdio_transport import stdio_transport
from symphony_mcp.stop_signals import serve_until_signalled
from symphony_mcp.tools import actions, code, elements, files, grounding, memory, ocr, screen, search, windows
from symphony_mcp.tools.cores import Cores
from symphony_mcp.tools.definition import register
from symphony_mcp.tools.listing import concise_tool
from symphony_mcp.tools.pipeline import GuardedServer
from symphony_mcp.vision.grounding.grounder import VisionGrounder
from symphony_mcp.vision.grounding.targets import TargetResolver
from symphony_mcp.vision.ocr.grounder import OcrGrounder

log = logging.getLogger(__name__)
# The tool modules, in the order tools/list shows their tools: a new module's DEFINITIONS join here.
TOOL_MODULES = (screen, actions, elements, windows, ocr, grounding, memory, code, files, search)
CODE_TOOLS = ("run_code", "code_agent")  # the tools whose confinement the start-up warning is about
REMOTE_TREE_REASON = (
    "they read the accessibility tree of this host's display, and an SSH machine's tree is not read over SSH; "
    "use screenshot, find_text or locate there (on the osworld backend they read the VM's tree)"
)
REMOTE_CODER_REASON = (
    "the Coder reads the machine's facts and changed files on this host; run_code runs blocks on the remote machine"
)
GRACEFUL_HTTP_SECONDS = 3  # open streams (e.g. a client's SSE GET) get this long to end after a stop signal

INSTRUCTIONS = """Computer-use tools for one desktop. Typical loop: `screenshot`, decide, act with
`click` / `type` / `hotkey` / `scroll` / `drag_and_drop`, then `screenshot` again to verify.
Coordinates: every tool takes and returns them in the pixels of the latest screenshot (results
name it as frame_id), so a value read from any result can be passed to any tool as it is; pass
frame_id for an older screenshot, or space='screen' for absolute screen pixels (fields named
screen_* are always screen pixels). Tools that look (ocr, find_text, locate) read the area the
latest screenshot shows, freshly captured. Pointer tools take either x, y or a `description` of
the element, which the grounding model locates on screen (`locate` finds without acting). For text on
screen, `click_text`, `locate_cursor` and `highlight_text_span` act on a phrase found by OCR,
precisely; `find_text` and `ocr` read it. `list_windows`, `focus_window` and `open_app` manage
applications. Every action returns a record of what was done; `action_history` lists them.
For file and data work the GUI does badly (fill a spreadsheet column, change a config key, rename
files), `code_agent` hands the task to the Coder, which writes and runs confined code and returns a
short account; `run_code` runs one confined python or bash block.
When you do not know how to do something in an application, `search_tutorial` has a browsing agent find a
how-to (numbered steps with pictures) on the web or in the offline docs; `search_docs` lists results
without a model.
For long tasks, `start_task` records every action as a trajectory step; `reflect` audits it
(On-track / Off-track / Completed / Infeasible), `check_loop` and `memory_audit` need no model."""


class SymphonyMCP(GuardedServer):
    """The server behind the call pipeline (tools/pipeline.py), listing tools with concise schemas and answering
    unreadable stdio lines."""

    def __init__(
        self, policy: PolicySettings, *args: Any, schema_rules: bool = False, max_message_bytes: int, **kwargs: Any
    ) -> None:
        super().__init__(policy, *args, **kwargs)
        self.schema_rules = schema_rules
        self.max_message_bytes = max_message_bytes

    async def list_tools(self) -> list[Tool]:
        """tools/list with concise schemas (tools/listing.py; sizes in benchmarks/results/tools_list_size.md)."""
        return [concise_tool(tool, self.schema_rules) for tool in await super().list_tools()]

    async def run_stdio_async(self) -> None:
        """The SDK's server loop on this server's stdio transport: lines capped in size, each one that is not
        a message answered with a JSON-RPC error, a pending read a stop signal can cancel (stdio_transport.py)."""
        lowlevel = lowlevel_server(self)
        async with stdio_transport(self.max_message_bytes) as (read_stream, write_stream):
            await lowlevel.run(read_stream, write_stream, lowlevel.create_initialization_options())


@dataclass
class SymphonyServer:
    mcp: GuardedServer
    screen: Screen
    desktop_actions: DesktopActions
    desktop_thread: DesktopThread
    ocr: OcrGrounder
    grounder: VisionGrounder
    models: ModelRegistry
    tasks: TaskManager
    code: LocalExecutor | RemoteExecutor | WaaExecutor | SshExecutor
    cores: Cores  # what every tool function is given: a tool registered later (register) takes it too

    def close(self) -> None:
        self.tasks.close()
        self.desktop_thread.close()


def build_server(settings: Settings) -> SymphonyServer:
    check_names(settings.policy)  # before anything is made; the command line checked them before anything started
    layout = [Rect(left=x, top=y, width=w, height=h) for x, y, w, h in map(parse_geometry, settings.display.monitors)]
    programs = ProgramAllowList(None if (allow := settings.policy.open_app_allow) is None else tuple(allow))
    desktop_factory, executor = _machine(settings, layout, programs)
    desktop_thread = DesktopThread(desktop_factory)
    desktop_screen = Screen(desktop_thread, settings.display, settings.screenshot)
    recorder = ActionRecorder(desktop_thread, ActionLog(settings.server.action_log_size))
    desktop_actions = DesktopActions(desktop_thread, recorder, settings.input)
    text_grounder = OcrGrounder(desktop_screen, desktop_actions, settings.ocr)
    models = ModelRegistry(settings.models)
    grounder = VisionGrounder(desktop_screen, models, settings.grounding)
    tasks = TaskManager(desktop_screen, recorder, models, settings.memory)
    coder = CoderService(
        desktop_screen,
        recorder,
        models,
        tasks,
        executor,
        settings.code,
        executor.default_workdir,
        unavailable=_remote_refusal(settings, "code_agent", REMOTE_CODER_REASON),
    )
    searcher = TutorialSearcher(desktop_screen, recorder, models, tasks, settings.search)
    tree_source = _remote_tree_source(settings)
    element_reader = ElementReader(
        desktop_screen,
        desktop_actions,
        process=tree_source,
        unavailable=None if tree_source else _remote_refusal(settings, "the elements tools", REMOTE_TREE_REASON),
    )

    @asynccontextmanager
    async def lifespan(_: MCPServer) -> AsyncIterator[None]:
        offered = isinstance(executor, LocalExecutor) and any(server.policy.refusal(n) is None for n in CODE_TOOLS)
        if offered and (weaker := await anyio.to_thread.run_sync(weaker_than_bwrap, settings.code)):
            log.warning("%s: %s; for bubblewrap: %s", " and ".join(CODE_TOOLS), weaker, bwrap_fix(settings.code))
        if settings.ocr.warm_up:
            await text_grounder.warm_up()
        try:
            yield
        finally:
            tasks.close()
            element_reader.close()
            await searcher.aclose()
            await models.aclose()

    server = SymphonyMCP(
        settings.policy,
        "symphony-mcp",
        title="symphony-mcp",
        version=__version__,
        instructions=INSTRUCTIONS,
        log_level=settings.log_level,
        lifespan=lifespan,
        middleware=[session_scope, clipped_resource_errors],
        schema_rules=settings.server.schema_rules,
        max_message_bytes=settings.server.max_message_bytes,
    )
    cores = Cores(
        settings=settings,
        screen=desktop_screen,
        actions=desktop_actions,
        elements=element_reader,
        element_actions=ElementActions(element_reader, desktop_actions),
        targets=TargetResolver(grounder),
        text=text_grounder,
        grounder=grounder,
        models=models,
        tasks=tasks,
        executor=executor,
        coder=coder,
        files=_file_transfer(settings, executor),
        searcher=searcher,
    )
    register(server, [definition for module in TOOL_MODULES for definition in module.DEFINITIONS], cores)
    check_registered(server.policy.tools)
    return SymphonyServer(
        mcp=server,
        screen=desktop_screen,
        desktop_actions=desktop_actions,
        desktop_thread=desktop_thread,
        ocr=text_grounder,
        grounder=grounder,
        models=models,
        tasks=tasks,
        code=executor,
        cores=cores,
    )


def _machine(
    settings: Settings, layout: list[Rect], programs: ProgramAllowList
) -> tuple[Callable[[], Desktop], LocalExecutor | RemoteExecutor | WaaExecutor | SshExecutor]:
    """The desktop the tools act on and the executor of the code tools: both on the same machine, always."""
    if settings.desktop.backend == "osworld":
        assert settings.desktop.url is not None  # DesktopSettings refuses the backend without it
        controller = controller_for(settings.desktop.url, settings.desktop.timeout_seconds)
        pacing = settings.input
        return (
            lambda: OsworldDesktop(controller, pacing.type_interval, pacing.click_interval, programs),
            RemoteExecutor(controller, settings.code),
        )
    if settings.desktop.backend == "waa":
        assert settings.desktop.url is not None  # DesktopSettings refuses the backend without it
        waa = shared_client(WaaController, settings.desktop.url, settings.desktop.timeout_seconds)
        pacing = settings.input
        return (
            lambda: WaaDesktop(waa, pacing.type_interval, pacing.click_interval, programs),
            WaaExecutor(waa, settings.code),
        )
    if settings.desktop.backend == "ssh":
        assert settings.desktop.url is not None  # DesktopSettings refuses the backend without it
        desktop = settings.desktop
        machine = SshMachine(
            settings.desktop.url,
            desktop.ssh_known_hosts,
            desktop.ssh_key_file,
            desktop.ssh_python,
            desktop.ssh_display,
            desktop.timeout_seconds,
        )
        pacing = settings.input
        return (
            lambda: SshDesktop(machine, pacing.type_interval, pacing.click_interval, programs, desktop.ssh_display),
            SshExecutor(machine, settings.code),
        )
    local = LocalExecutor(settings.code, settings.memory.trajectory_dir.expanduser() / CODE_WORKDIR)
    return lambda: LocalDesktop(settings.input, layout, programs), local


def _file_transfer(
    settings: Settings, executor: LocalExecutor | RemoteExecutor | WaaExecutor | SshExecutor
) -> FileTransfer:
    """upload_file and download_file on the machine the code tools run on, through the same connection."""
    machine: MachineFiles
    if isinstance(executor, RemoteExecutor):
        machine = OsworldFiles(executor.controller)
    elif isinstance(executor, SshExecutor):
        machine = SshFiles(executor.machine)
    elif isinstance(executor, WaaExecutor):
        machine = WaaFiles(executor.controller)
    else:
        machine = FolderFiles(executor.roots, "the code tools' work directory and writable paths")
    folder = settings.memory.trajectory_dir.expanduser().resolve() / TRANSFER_FOLDER
    where = settings.desktop.backend + (f" {settings.desktop.url}" if settings.desktop.backend != "local" else "")
    return FileTransfer(machine, FolderFiles([folder], "the server's transfer folder"), where)


def _remote_tree_source(settings: Settings) -> OsworldTreeSource | None:
    """The OSWorld VM's accessibility tree, read by its controller, or a WAA machine's UIA tree in the same XML
    (None elsewhere: this display's AT-SPI helper, or no tree on an SSH machine)."""
    desktop = settings.desktop
    if desktop.url is None or desktop.backend not in ("osworld", "waa"):
        return None
    if desktop.backend == "osworld":
        return OsworldTreeSource(controller_for(desktop.url, desktop.timeout_seconds).accessibility_tree)
    waa = shared_client(WaaController, desktop.url, desktop.timeout_seconds)
    return OsworldTreeSource(lambda: osworld_shaped(waa.accessibility_tree()), WAA_NO_ACTIONS)


def _remote_refusal(settings: Settings, what: str, reason: str) -> str | None:
    """Why `what` refuses on a remote backend (None on the local one, where it works)."""
    if settings.desktop.backend == "local":
        return None
    return f"{what} cannot act on the {settings.desktop.backend} machine at {settings.desktop.url}: {reason}"


async def session_scope(ctx: ServerRequestContext[Any, Any], call_next: CallNext) -> HandlerResult:
    """Tell the cores which client session a request belongs to: running tasks are per session.

    MCP 2026-07-28 requests carry no session: each is self-contained. A session is then the
    `Mcp-Session-Id` of HTTP clients that use one; everything else (the one client of a stdio
    server, stateless HTTP requests) shares the server's default scope.
    """
    headers = getattr(ctx.request, "headers", None)
    session_id = headers.get("mcp-session-id") if headers is not None else None
    current_session.set(f"http-{session_id}" if session_id else DEFAULT_SESSION)
    return await call_next(ctx)


async def clipped_resource_errors(ctx: ServerRequestContext[Any, Any], call_next: CallNext) -> HandlerResult:
    """The SDK's error for a failed resources/read repeats the URI whole, in its message and data: clipped here."""
    if ctx.method != "resources/read":
        return await call_next(ctx)
    try:
        return await call_next(ctx)
    except MCPError as exc:
        uri = (ctx.params or {}).get("uri")
        data = {"uri": clip(str(uri))} if uri is not None else exc.error.data
        raise MCPError(exc.code, clip_message(exc.message, MAX_ECHO + 100), data) from exc


def check_http_security(settings: ServerSettings) -> None:
    if not is_loopback(settings.host) and settings.token is None:
        raise SettingsError(
            f"refusing to listen on {settings.host}: binding beyond loopback requires a token "
            "(--token or SYMPHONY_SERVER__TOKEN)"
        )


def http_app(server: SymphonyServer, settings: ServerSettings) -> ASGIApp:
    """The streamable HTTP app with DNS-rebinding protection always on and the token guard if set."""
    check_http_security(settings)
    allowed_hosts = [f"{h}:*" for h in ("127.0.0.1", "localhost", "[::1]")]
    if not is_loopback(settings.host):
        allowed_hosts.append(f"{settings.host}:*")
    allowed_hosts += settings.allowed_hosts
    origins = [f"http://{h}" for h in allowed_hosts] + [f"https://{h}" for h in allowed_hosts]
    security = TransportSecuritySettings(
        enable_dns_rebinding_protection=True, allowed_hosts=allowed_hosts, allowed_origins=origins
    )
    app: ASGIApp = server.mcp.streamable_http_app(
        streamable_http_path=settings.path,
        transport_security=security,
        host=settings.host,
        max_request_body_size=settings.max_message_bytes,
    )
    if settings.token is not None:
        app = BearerTokenMiddleware(app, settings.token.get_secret_value())
    return app


def http_server(server: SymphonyServer, settings: ServerSettings, log_level: str) -> uvicorn.Server:
    import uvicorn

    class Server(uvicorn.Server):
        # run() owns the stop signals: uvicorn's handlers would re-raise the signal after its shutdown,
        # which ends the process before the tasks are closed and the display stopped.
        @contextlib.contextmanager
        def capture_signals(self) -> Iterator[None]:
            yield

    config = uvicorn.Config(
        http_app(server, settings),
        host=settings.host.strip("[]"),
        port=settings.port,
        log_level=log_level.lower(),
        timeout_graceful_shutdown=GRACEFUL_HTTP_SECONDS,
    )
    return Server(config)


def run(server: SymphonyServer, settings: Settings) -> str | None:
    """Serve until the client leaves (stdio: stdin closes) or a stop signal (stop_signals.py); then end running tasks
    as abandoned, saying why, and close. Returns the stopping signal's name, if one stopped it."""

    async def serve() -> str | None:
        def on_signal(name: str) -> None:
            server.tasks.close(f"the server stopped ({name})")

        if settings.server.transport == "http":
            http = http_server(server, settings.server, settings.log_level)
            return await serve_until_signalled(http.serve, lambda: setattr(http, "should_exit", True), on_signal)
        scope = anyio.CancelScope()

        async def serve_stdio() -> None:
            with scope:
                await server.mcp.run_stdio_async()

        return await serve_until_signalled(serve_stdio, scope.cancel, on_signal)

    try:
        return anyio.run(serve)
    finally:
        server.close()
