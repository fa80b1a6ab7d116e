"""Settings: defaults < config file (TOML/JSON) < environment (SYMPHONY_*) < CLI flags.

Nested groups use a double underscore in the environment, e.g. SYMPHONY_SCREENSHOT__FORMAT=png. Each setting
is written once, here: its type says how text is parsed (a list: JSON or comma-separated, `ListSetting`; a
size: WIDTHxHEIGHT, `size_within`), and a `Flag` in its annotation gives it a command-line flag, whose help is
its description (`flag_settings`; cli.py builds the flags from it).
"""

from __future__ import annotations

import ipaddress
import json
import os
import re
from collections.abc import Callable, Iterator
from contextvars import ContextVar
from dataclasses import dataclass
from functools import cache
from pathlib import Path
from typing import Annotated, Any, Literal, TypeVar

from pydantic import (
    AfterValidator,
    BaseModel,
    BeforeValidator,
    Field,
    SecretStr,
    ValidationInfo,
    field_validator,
    model_validator,
)
from pydantic.fields import FieldInfo
from pydantic_settings import (
    BaseSettings,
    JsonConfigSettingsSource,
    NoDecode,
    PydanticBaseSettingsSource,
    SettingsConfigDict,
    TomlConfigSettingsSource,
)

from symphony_mcp.limits import MAX_CODE_SECONDS, MAX_TYPED_TEXT, MAX_WAIT_SECONDS

CONFIG_FILE_ENV = "SYMPHONY_CONFIG_FILE"
_config_file: ContextVar[Path | None] = ContextVar("symphony_config_file", default=None)

ImageFormat = Literal["jpeg", "png", "webp"]
Item = TypeVar("Item")


def comma_list(text: str) -> list[str]:
    """The items of a comma-separated list, stripped, blanks dropped: how lists are written in variables and flags."""
    return [item.strip() for item in text.split(",") if item.strip()]


def _listed(value: object) -> object:
    """A list given as text (an environment variable, a flag) is JSON when it starts with '[', else comma-separated."""
    if isinstance(value, str):
        return json.loads(value) if value.lstrip().startswith("[") else comma_list(value)
    return value


# A list setting: a list in a config file, JSON or comma-separated text in a variable or flag.
ListSetting = Annotated[list[Item], NoDecode, BeforeValidator(_listed)]

_SIZE = r"(\d+)x(\d+)"


def parse_size(text: str) -> tuple[int, int]:
    """(width, height) of WIDTHxHEIGHT text such as 1920x1080, or a ValueError saying the form."""
    match = re.fullmatch(_SIZE, text.strip().lower())
    if match is None:
        raise ValueError(f"must look like 1920x1080 (WIDTHxHEIGHT), got {text!r}")
    return int(match[1]), int(match[2])


def size_within(smallest: tuple[int, int], largest: tuple[int, int]) -> Callable[[str, ValidationInfo], str]:
    """The check of a WIDTHxHEIGHT setting whose sides lie within these bounds; it keeps the text, normalised."""

    def checked(value: str, info: ValidationInfo) -> str:
        try:
            width, height = parse_size(value)
        except ValueError:
            width = height = -1
        if not (smallest[0] <= width <= largest[0] and smallest[1] <= height <= largest[1]):
            raise ValueError(
                f"{info.field_name} must look like 1920x1080 (WIDTHxHEIGHT), between {smallest[0]}x{smallest[1]} "
                f"and {largest[0]}x{largest[1]}, got {value!r}"
            )
        return f"{width}x{height}"

    return checked


DisplaySize = Annotated[str, AfterValidator(size_within((64, 64), (16384, 16384)))]
ViewportSize = Annotated[str, AfterValidator(size_within((320, 240), (4096, 4096)))]


@dataclass(frozen=True)
class Flag:
    """In a setting's annotation: the setting has a command-line flag, `--NAME`, on these commands.

    NAME defaults to the field's name with dashes; `{group}` in it stands for the group's field name. On a
    group (a model role), it gives its commands to the group's flags that name none. The flag's help is the
    setting's description, with its default and environment variable.
    """

    commands: tuple[str, ...] = ()
    name: str | None = None
    metavar: str | None = None


SERVE_ONLY = ("serve",)
AGENT = ("run", "bench")  # the commands that run the orchestrator (and spawn servers)
SERVERS = ("serve", "run", "bench")  # the commands that start a server, or have one started


class ScreenshotSettings(BaseModel):
    """How frames are encoded for the caller. Defaults keep a 1080p frame well under host limits."""

    format: Annotated[ImageFormat, Flag(SERVE_ONLY, "image-format")] = Field("jpeg", description="screenshot format")
    quality: Annotated[int, Flag(SERVE_ONLY)] = Field(80, ge=1, le=100, description="JPEG/WebP quality 1..100")
    max_width: Annotated[int, Flag(SERVE_ONLY)] = Field(
        1280, ge=64, le=8192, description="downscale screenshots to at most this width"
    )
    max_height: Annotated[int, Flag(SERVE_ONLY)] = Field(
        800, ge=64, le=8192, description="downscale screenshots to at most this height"
    )
    max_bytes: Annotated[int, Flag(SERVE_ONLY)] = Field(
        1_000_000,
        ge=20_000,
        description="lower quality, then size, until a screenshot fits (hosts reject ~1 MB)",
    )
    draw_cursor: bool = Field(False, description="draw a marker at the pointer by default")


class DisplaySettings(BaseModel):
    """Which screen to use, and whether to start a virtual one."""

    display: Annotated[str | None, Flag(SERVE_ONLY)] = Field(None, description="X display to use (default: $DISPLAY)")
    virtual: Annotated[Literal["auto", "always", "never"], Flag(SERVE_ONLY, "virtual-display")] = Field(
        "auto", description="start an Xvfb: only without a display (auto), always, or never"
    )
    resolution: Annotated[DisplaySize, Flag(("serve", "bench"))] = Field(
        "1920x1080", description="virtual display size WIDTHxHEIGHT (bench: each environment's)"
    )
    window_manager: Annotated[str | None, Flag(SERVE_ONLY)] = Field(
        "openbox", description="window manager started on a virtual display ('' for none)"
    )
    monitor: Annotated[int, Flag(SERVE_ONLY)] = Field(
        1, ge=0, description="default monitor for screenshots (mss index: 1 = first monitor, 0 = all monitors)"
    )
    monitors: ListSetting[str] = Field(
        default_factory=list,
        description="monitor layout WxH+X+Y per monitor, instead of what the display reports (e.g. one wide "
        "virtual screen that shows two physical monitors)",
    )

    @field_validator("monitors")
    @classmethod
    def _check_monitors(cls, value: list[str]) -> list[str]:
        for geometry in value:
            parse_geometry(geometry)
        return value

    @property
    def size(self) -> tuple[int, int]:
        return parse_size(self.resolution)


class DesktopSettings(BaseModel):
    """Which machine the tools act on: this one's display, or a remote machine through its controller."""

    backend: Annotated[Literal["local", "osworld", "waa", "ssh"], Flag(SERVE_ONLY, "desktop-backend")] = Field(
        "local",
        description="local: this machine's display; osworld: an OSWorld VM through its controller (desktop.url); "
        "waa: a WindowsAgentArena machine through its server (desktop.url, port 5000); "
        "ssh: a macOS (or X11) machine over SSH (desktop.url ssh://user@host:port); every tool and the code tools "
        "act there",
    )
    url: Annotated[str | None, Flag(SERVE_ONLY, "desktop-url", "URL")] = Field(
        None,
        description="the remote machine: its controller, e.g. http://192.168.122.10:5000 (OSWorld's and WAA's "
        "port 5000), or ssh://user@host:port for the ssh backend",
    )
    timeout_seconds: float = Field(
        30, gt=0, le=600, description="longest wait for the controller to answer a read (screenshot, cursor, files)"
    )
    ssh_key_file: Path | None = Field(
        None, description="ssh: the private key to log in with (none: the keys of ~/.ssh and the ssh agent)"
    )
    ssh_known_hosts: Path = Field(
        Path("~/.ssh/known_hosts"),
        description="ssh: the known_hosts file the machine's host key is checked against; a key it lacks or that "
        "differs is refused (add the key with ssh-keyscan after checking its fingerprint)",
    )
    ssh_python: str = Field("python3", description="ssh: the machine's Python, which runs the uploaded agent")
    ssh_display: str = Field(":0", description="ssh: the X display of an X11 machine (a Mac ignores it)")

    @model_validator(mode="after")
    def _url_for_remote(self) -> DesktopSettings:
        if self.backend in ("osworld", "waa") and not (self.url or "").startswith(("http://", "https://")):
            raise ValueError(
                f"desktop.backend {self.backend!r} needs desktop.url, the controller's http:// URL "
                "(SYMPHONY_DESKTOP__URL or --desktop-url), e.g. http://192.168.122.10:5000"
            )
        if self.backend == "ssh" and not re.fullmatch(r"ssh://[^@/\s]+@[^@/\s]+", self.url or ""):
            raise ValueError(
                "desktop.backend 'ssh' needs desktop.url as ssh://user@host[:port] (SYMPHONY_DESKTOP__URL or "
                f"--desktop-url), e.g. ssh://admin@mac-mini.local:22; got {self.url!r}"
            )
        return self


class ViewSettings(BaseModel):
    """A live view of the server's display in a browser (x11vnc + noVNC): off unless asked, loopback unless told."""

    enabled: Annotated[bool, Flag(("serve", "bench"), "view")] = Field(
        False,
        description="watch the display in a browser (view-only; the URL is logged; README: Watch the display); "
        "bench: one per environment",
    )
    host: str = Field("127.0.0.1", description="the viewer's bind address; anything but loopback needs a password")
    port: int = Field(0, ge=0, le=65535, description="the viewer's port; 0: any free one (bench: port + environment)")
    password: SecretStr | None = Field(
        None, description="the VNC password (6-8 characters, VNC's limit); default: a new random one at each start"
    )
    interactive: bool = Field(False, description="let the viewer's mouse and keyboard act (default: view-only)")

    @model_validator(mode="after")
    def _password_beyond_loopback(self) -> ViewSettings:
        if self.enabled and not is_loopback(self.host) and self.password is None:
            raise ValueError(
                f"the live view binds to {self.host}, beyond loopback, only with a password of your choice: set "
                "SYMPHONY_VIEW__PASSWORD (6-8 characters), or keep view.host on 127.0.0.1 and tunnel to it"
            )
        return self


def is_loopback(host: str) -> bool:
    """Whether a bind address reaches this machine only."""
    if host == "localhost":
        return True
    try:
        return ipaddress.ip_address(host.strip("[]")).is_loopback
    except ValueError:
        return False


def parse_geometry(geometry: str) -> tuple[int, int, int, int]:
    """(left, top, width, height) of an X-style geometry WxH+X+Y, or a ValueError saying the form."""
    match = re.fullmatch(_SIZE + r"\+(\d+)\+(\d+)", geometry.strip().lower())
    if match is None or int(match[1]) < 1 or int(match[2]) < 1:
        raise ValueError(f"a monitor must look like 1920x1080+0+0 (WIDTHxHEIGHT+LEFT+TOP), got {geometry!r}")
    width, height, left, top = (int(g) for g in match.groups())
    return left, top, width, height


class InputSettings(BaseModel):
    """Pacing and limits of synthetic input."""

    settle_seconds: float = Field(
        0.05, ge=0, le=5, description="pause after each action so the app reacts before the next"
    )
    type_interval: float = Field(0.0, ge=0, le=1, description="seconds between typed characters")
    click_interval: float = Field(
        0.08,
        ge=0,
        le=0.2,
        description="seconds between the clicks of a double or triple click; back-to-back clicks can reach "
        "the window manager while it holds the pointer for click-to-focus, and openbox then drops them",
    )
    max_text_length: int = Field(
        10_000,
        ge=1,
        le=MAX_TYPED_TEXT,
        description=f"longest text one type_text call accepts (at most {MAX_TYPED_TEXT})",
    )
    max_wait_seconds: float = Field(
        60, gt=0, le=MAX_WAIT_SECONDS, description=f"longest wait one call accepts (at most {MAX_WAIT_SECONDS:g} s)"
    )


class OcrSettings(BaseModel):
    """Text recognition for the OCR and text-grounded tools."""

    engine: Literal["tesseract", "easyocr"] = Field(
        "tesseract", description="OCR engine; easyocr needs the extra (see benchmarks/ocr_grounding for the choice)"
    )
    language: str = Field("eng", description="Tesseract language data to use")
    min_score: float = Field(80, ge=0, le=100, description="lowest fuzzy score (0..100) that counts as a match")
    warm_up: bool = Field(False, description="load the engine when the server starts instead of on first use")


ModelRole = Literal["orchestrator", "grounder", "memoryer", "searcher", "coder"]
MODEL_ROLES: tuple[ModelRole, ...] = ("orchestrator", "grounder", "memoryer", "searcher", "coder")
GroundingFamilyName = Literal[
    "ui-tars-1.5", "ui-tars-1.0", "qwen2.5-vl", "qwen3-vl", "gta1", "opencua", "scalecua", "pixels"
]


class ModelEndpoint(BaseModel):
    """One role's OpenAI-compatible endpoint. Unset fields fall back to the `default` role, then built-ins."""

    base_url: Annotated[str | None, Flag(name="{group}-url")] = Field(
        None, description="model endpoint, e.g. http://localhost:8000/v1 (vLLM) or https://api.openai.com/v1"
    )
    model: Annotated[str | None, Flag(name="{group}-model")] = Field(None, description="model name the endpoint serves")
    api_key: SecretStr | None = Field(None, description="API key sent as a bearer token")
    api_key_env: str | None = Field(None, description="name of an environment variable holding the API key")
    temperature: float | None = Field(None, ge=0, le=2, description="built-in: 0.1 for the orchestrator, else 0")
    max_tokens: int | None = Field(None, ge=1, description="answer length limit (built-in: 1024; grounder 256)")
    timeout: float | None = Field(None, gt=0, le=3600, description="seconds per request (built-in: 120)")
    max_retries: int | None = Field(None, ge=0, le=10, description="retries on 429/5xx/timeouts (built-in: 3)")
    backoff_seconds: float | None = Field(
        None, ge=0, le=60, description="first retry delay, doubled per retry with jitter (built-in: 0.5)"
    )
    image_format: ImageFormat | None = Field(None, description="images sent as (built-in: jpeg)")
    image_quality: int | None = Field(None, ge=1, le=100, description="JPEG/WebP quality (built-in: 90)")
    image_max_side: int | None = Field(None, ge=64, le=16384, description="longest image side (built-in: 3840)")
    image_max_bytes: int | None = Field(
        None, ge=20_000, description="shrink images to at most this many bytes (built-in: 5000000)"
    )
    extra_body: dict[str, Any] | None = Field(None, description='extra request fields, e.g. {"top_k": 1} for vLLM')


class ModelsSettings(BaseModel):
    """Model endpoints per agent role; `default` fills whatever a role leaves unset."""

    default: ModelEndpoint = Field(default_factory=ModelEndpoint)
    orchestrator: Annotated[ModelEndpoint, Flag(AGENT)] = Field(default_factory=ModelEndpoint)
    grounder: Annotated[ModelEndpoint, Flag(SERVERS)] = Field(default_factory=ModelEndpoint)
    memoryer: Annotated[ModelEndpoint, Flag(AGENT)] = Field(default_factory=ModelEndpoint)
    searcher: ModelEndpoint = Field(default_factory=ModelEndpoint)
    coder: ModelEndpoint = Field(default_factory=ModelEndpoint)


class GroundingSettings(BaseModel):
    """How descriptions become points: which grounding model family's prompt and coordinates to use."""

    family: Annotated[GroundingFamilyName, Flag(SERVERS, "grounding-family")] = Field(
        "ui-tars-1.5", description="the grounding model's prompt and answer format (see the README table)"
    )
    coordinates: Literal["auto", "pixels", "relative-1000", "unit"] = Field(
        "auto", description="override the family's coordinate convention"
    )
    max_pixels: int | None = Field(
        None, ge=3136, description="override the family's image pixel budget (smart-resize families)"
    )
    refine: bool = Field(
        False, description="look again at a zoomed crop around the first guess (one more model call per target)"
    )
    refine_zoom: float = Field(
        2.0, ge=1.5, le=8, description="the crop of the second look is 1/zoom of the screen's width and height"
    )


def _default_trajectory_dir() -> Path:
    state = os.environ.get("XDG_STATE_HOME") or str(Path.home() / ".local" / "state")
    return Path(state) / "symphony-mcp" / "trajectories"


class MemorySettings(BaseModel):
    """Trajectory recording, loop detection and the Reflection-Memory Agent's long-term memory."""

    trajectory_dir: Annotated[Path, Flag(SERVE_ONLY)] = Field(
        default_factory=_default_trajectory_dir, description="where task trajectories are written"
    )
    loop_window: int = Field(3, ge=1, le=20, description="steps in the window compared for loop detection")
    loop_max_hamming: int = Field(1, ge=0, le=16, description="largest pHash Hamming distance of matching screens")
    loop_min_ssim: float = Field(0.99, ge=0, le=1, description="smallest SSIM of matching screens")
    loop_point_tolerance: float = Field(
        0.02, ge=0, le=1, description="matching action points lie within this fraction of the screen diagonal"
    )
    loop_query_similarity: float = Field(
        85, ge=0, le=100, description="matching text queries score at least this (0..100, fuzzy)"
    )
    image_budget: int = Field(8, ge=1, le=64, description="screenshots kept in long-term memory (first + milestones)")


class OrchestratorSettings(BaseModel):
    """The bundled OS-Symphony client (`symphony-mcp run`)."""

    max_steps: Annotated[int, Flag(AGENT)] = Field(
        15, ge=1, le=500, description="action budget per task; the last step may only be done/fail"
    )
    task_timeout_seconds: Annotated[float | None, Flag(AGENT, "task-timeout", "SECONDS")] = Field(
        None, gt=0, le=86_400, description="wall time of a whole task; past it the run ends as Error (None: no bound)"
    )
    max_images: int = Field(8, ge=1, le=64, description="screenshots in the planner's short-term history")
    keep_first_image: bool = Field(True, description="keep the task's first screenshot in the history")
    reflection: Annotated[bool, Flag(AGENT)] = Field(
        True, description="run the Reflection-Memory Agent's audit before each plan"
    )
    enabled_tools: Annotated[ListSetting[str] | None, Flag(AGENT)] = Field(
        None, description="tools the planner may call, comma-separated (default: every action tool the server offers)"
    )
    format_retries: int = Field(3, ge=0, le=10, description="re-asks of a malformed or invalid planner answer")
    function_calling: Annotated[bool, Flag(AGENT)] = Field(
        False, description="ask for the action as a native tool call (endpoints that support `tools`) instead of code"
    )
    verify_attempts: int = Field(3, ge=1, le=20, description="'done' answers the checker may reject before Fail")
    checker_timeout: float = Field(120, gt=0, description="seconds a checker command may run")
    results_dir: Annotated[Path, Flag(AGENT, "results")] = Field(
        Path("results"), description="results directory: one folder per task (bench: <results>/<benchmark>/...)"
    )
    reset: Annotated[bool, Flag(AGENT)] = Field(False, description="close the windows the task opened when it ends")
    dual_grounding: Annotated[bool, Flag(AGENT)] = Field(
        False,
        description="OSCAR's dual grounding: each step's prompt carries the screenshot with the accessibility "
        "tree's elements boxed and numbered and their list, and actions may name an element by its number "
        "(click(element=12)); the grounding model, if any, still locates what the tree does not show",
    )
    max_elements: int = Field(
        150, ge=1, le=1000, description="elements listed to the planner per step under dual grounding"
    )


class ServerSettings(BaseModel):
    """Transport and its security."""

    transport: Annotated[Literal["stdio", "http"], Flag(SERVE_ONLY)] = Field(
        "stdio", description="stdio, or streamable HTTP"
    )
    host: Annotated[str, Flag(SERVE_ONLY)] = Field(
        "127.0.0.1", description="HTTP bind address; anything but loopback needs a token"
    )
    port: Annotated[int, Flag(SERVE_ONLY)] = Field(8765, ge=0, le=65535, description="HTTP port")
    path: Annotated[str, Flag(SERVE_ONLY)] = Field("/mcp", description="HTTP endpoint path")
    token: Annotated[SecretStr | None, Flag(SERVE_ONLY)] = Field(
        None, description="bearer token required on every HTTP request (required off loopback)"
    )
    allowed_hosts: Annotated[ListSetting[str], Flag(SERVE_ONLY, "allowed-host")] = Field(
        default_factory=list,
        description="extra Host header values accepted (DNS-rebinding protection); repeatable or comma-separated",
    )
    action_log_size: int = Field(10_000, ge=1, description="action records kept in memory per server")
    max_message_bytes: int = Field(
        4 * 1024 * 1024,
        ge=64 * 1024,
        le=1024**3,
        description="bytes one message may have (a stdio line, an HTTP body); a longer one is refused unread "
        "with an error naming this limit (the largest tool arguments, 100,000 characters of text escaped as "
        "JSON, take ~1.2 MB)",
    )
    schema_rules: Annotated[bool, Flag(SERVE_ONLY)] = Field(
        False,
        description="state in input schemas, as a root `not`, the argument combinations a tool refuses (for "
        "validators and fuzzers); off by default: Claude Code drops tools whose schema has a root `not`, and "
        "OpenAI strict mode refuses it",
    )

    @field_validator("token")
    @classmethod
    def _check_token(cls, value: SecretStr | None) -> SecretStr | None:
        secret = None if value is None else value.get_secret_value()
        if secret is not None and (not secret.strip() or secret != secret.strip()):
            # HTTP strips header values, so the server would refuse every request.
            raise ValueError(
                "the token is blank or starts or ends with whitespace, which no HTTP request can carry: give a "
                "real secret (e.g. the output of `openssl rand -hex 32`), or no token on loopback"
            )
        return value


class PolicySettings(BaseModel):
    """What clients may do on this desktop (README "Policies"): which tools are offered and what open_app starts.

    Tool groups come from the tools themselves: the module a tool lives in (actions, windows, screen, ocr,
    grounding, memory) and its annotations (read-only, destructive, open-world), so a new tool joins its
    groups without any setting changing.
    """

    enabled_tools: Annotated[ListSetting[str] | None, Flag(SERVE_ONLY)] = Field(
        None, description="offer only these tools (and those of enabled_groups); default: every tool"
    )
    enabled_groups: Annotated[ListSetting[str] | None, Flag(SERVE_ONLY)] = Field(
        None,
        description="offer only the tools of these groups (and enabled_tools), e.g. read-only,ocr; default: every tool",
    )
    disabled_tools: Annotated[ListSetting[str], Flag(SERVE_ONLY)] = Field(
        default_factory=list, description="tools turned off; wins over enabled_*"
    )
    disabled_groups: Annotated[ListSetting[str], Flag(SERVE_ONLY)] = Field(
        default_factory=list, description="groups turned off, e.g. destructive; wins over enabled_*"
    )
    read_only: Annotated[bool, Flag(SERVE_ONLY)] = Field(
        False, description="offer only tools annotated read-only: look, never act"
    )
    open_app_allow: Annotated[ListSetting[str] | None, Flag(SERVE_ONLY)] = Field(
        None,
        description="what open_app may start: program names (resolved on PATH) or absolute program paths, and "
        "directories whose files it may open with their default application (whose program, and terminal for a "
        "terminal app, must be allowed too); default: anything",
    )

    confirm_tools: Annotated[ListSetting[str], Flag(SERVE_ONLY)] = Field(
        default_factory=list, description="tools whose every call the user must confirm (MCP elicitation)"
    )
    confirm_groups: Annotated[ListSetting[str], Flag(SERVE_ONLY)] = Field(
        default_factory=list, description="groups whose every call the user must confirm, e.g. destructive"
    )
    timeout_seconds: Annotated[float, Flag(SERVE_ONLY, metavar="SECONDS")] = Field(
        120, gt=0, le=86_400, description="time bound of every tool call"
    )
    timeouts: dict[str, Annotated[float, Field(gt=0, le=86_400)]] = Field(
        default_factory=dict, description="time bounds of single tools, e.g. {reflect = 600}"
    )
    audit: Annotated[bool, Flag(SERVE_ONLY)] = Field(True, description="write every tool call to the audit log")
    audit_file: Annotated[Path, Flag(SERVE_ONLY, metavar="PATH")] = Field(
        default_factory=lambda: _default_trajectory_dir().parent / "audit.jsonl", description="the audit log (JSONL)"
    )
    audit_max_bytes: int = Field(10_000_000, ge=10_000, description="start a new audit file beyond this size")
    audit_files: int = Field(3, ge=1, le=100, description="audit files kept: the current one and older ones .1, .2")


CodeLanguage = Literal["python", "bash"]
CODE_LANGUAGES: tuple[CodeLanguage, ...] = ("python", "bash")


class CodeSettings(BaseModel):
    """Confined code execution (run_code, code_agent): which languages, what the code may see, write and use.

    Code runs under bubblewrap (else `unshare` namespaces) with a read-only system, a private /tmp, only the
    work directory and `writable_paths` writable, no network and no display unless allowed here, a scrubbed
    environment and resource limits.
    """

    languages: ListSetting[CodeLanguage] = Field(
        default_factory=lambda: list(CODE_LANGUAGES), description="languages the code tools run (empty: none)"
    )
    workdir: Path | None = Field(
        None, description="run_code's default work directory, kept between calls (default: <trajectory_dir>/_code)"
    )
    writable_paths: ListSetting[Path] = Field(
        default_factory=list, description="directories code may also read and write, e.g. ['~/Documents']"
    )
    network: bool = Field(False, description="let code use the network (default: no network at all)")
    display: bool = Field(False, description="pass DISPLAY (and the X socket) so code can drive GUI tools")
    backend: Literal["auto", "bwrap", "unshare", "none"] = Field(
        "auto",
        description="confinement: auto = bubblewrap, else unshare namespaces; none = the server's own rights, "
        "for a server that runs inside a sandbox already (an OSWorld environment, where code may do what it can in "
        "OSWorld's VM)",
    )
    allow_unconfined: bool = Field(
        False, description="run code with the server user's full rights when no confinement works (else refuse)"
    )
    max_timeout_seconds: float = Field(
        100,
        gt=0,
        le=MAX_CODE_SECONDS,
        description="longest timeout one run may ask for (keep it below policy.timeout_seconds, which ends the call)",
    )
    agent_block_timeout_seconds: float = Field(
        60,
        gt=0,
        le=MAX_CODE_SECONDS,
        description="timeout of each block the code_agent's model writes (at most max_timeout_seconds)",
    )
    cpu_seconds: int = Field(300, ge=1, le=86_400, description="CPU time limit per process (RLIMIT_CPU)")
    memory_mb: int = Field(2048, ge=64, le=1_048_576, description="address-space limit per process (RLIMIT_AS)")
    run_memory_mb: int = Field(
        2048,
        ge=64,
        le=1_048_576,
        description="memory (swap and the private /tmp included) of all of one run's processes together; a memory "
        "cgroup, where the server can make one (root); past it the kernel kills the run",
    )
    tmp_mb: int = Field(
        512, ge=1, le=1_048_576, description="size of the run's private /tmp (RAM-backed, within run_memory_mb)"
    )
    file_size_mb: int = Field(1024, ge=1, le=1_048_576, description="largest file code may write (RLIMIT_FSIZE)")
    disk_mb: int = Field(
        4096,
        ge=1,
        le=1_048_576,
        description="most the default work directory may hold, all runs' files together, and most one run may write "
        "to the writable paths; a run past either is killed (watched every 0.1 s: it can add what it writes in that "
        "time)",
    )
    processes: int = Field(
        256,
        ge=4,
        le=65_536,
        description="processes and threads one run may have together (a pids cgroup where possible, RLIMIT_NPROC)",
    )
    open_files: int = Field(1024, ge=16, le=1_048_576, description="open files per process (RLIMIT_NOFILE)")
    output_bytes: int = Field(
        100_000, ge=1_000, le=10_000_000, description="stdout and stderr kept per run, each; the rest is dropped"
    )

    @field_validator("writable_paths", "workdir")
    @classmethod
    def _expand(cls, value: object) -> object:
        if isinstance(value, list):
            return [Path(p).expanduser() for p in value]
        return value.expanduser() if isinstance(value, Path) else value


SearchEngine = Literal["duckduckgo", "searxng", "template", "local"]


def _default_docs_index() -> Path:
    data = os.environ.get("XDG_DATA_HOME") or str(Path.home() / ".local" / "share")
    return Path(data) / "symphony-mcp" / "docs.sqlite"


class SearchSettings(BaseModel):
    """Tutorial search (search_tutorial, search_docs): where searches start, what the browser may reach, budgets.

    The searcher browses in a fresh, isolated headless Chromium per search. Offline, `engine = "local"` serves
    an index built by `symphony-mcp docs index PATH...` on 127.0.0.1.
    """

    engine: SearchEngine = Field(
        "duckduckgo",
        description="where searches start: duckduckgo (HTML endpoint), searxng (searxng_url), template "
        "(url_template) or local (the offline docs index)",
    )
    duckduckgo_url: str = Field("https://html.duckduckgo.com/html/", description="DuckDuckGo's HTML endpoint")
    searxng_url: str | None = Field(None, description="a SearXNG instance, e.g. http://127.0.0.1:8888")
    searxng_format: Literal["json", "html"] = Field(
        "json", description="how search_docs reads SearXNG: its JSON API (must be enabled there) or its HTML page"
    )
    url_template: str | None = Field(
        None, description="any results page, {query} replaced by the URL-encoded query, e.g. https://x.org/?q={query}"
    )
    docs_index: Annotated[Path, Flag(("docs",), "index", "FILE")] = Field(
        default_factory=_default_docs_index, description="the index file"
    )
    browser: Path | None = Field(
        None, description="the Chromium executable (default: chromium, chromium-browser or google-chrome on PATH)"
    )
    headful: bool = Field(False, description="show the searcher's browser on the server's display, for watching")
    viewport: ViewportSize = Field("1280x800", description="the browser's viewport, WIDTHxHEIGHT")
    budget: int = Field(20, ge=2, le=50, description="browsing steps per search (the last one only concludes)")
    step_timeout_seconds: float = Field(30, gt=0, le=600, description="bound of one page action or load")
    search_timeout_seconds: float = Field(600, gt=0, le=3600, description="bound of one whole search")
    allow_urls: ListSetting[str] = Field(
        default_factory=list, description="glob patterns; when any is given, only matching URLs may be opened"
    )
    deny_urls: ListSetting[str] = Field(default_factory=list, description="glob patterns of URLs never opened")
    private_hosts: ListSetting[str] = Field(
        default_factory=list,
        description="hosts (host or host:port) on loopback or private addresses the browser may reach, e.g. an "
        "intranet wiki; the configured engine's host and the local docs server are always allowed",
    )
    allow_unconfined_network: bool = Field(
        False,
        description="when user namespaces do not work here (unshare), run the searcher's browser without its own "
        "network namespace: only its proxy flags then keep it on the URL policy's proxy, which a browser bug or "
        "WebRTC could get around; by default the search refuses to start",
    )
    max_elements: int = Field(80, ge=5, le=500, description="interactive elements listed (and marked) per step")
    max_images: int = Field(4, ge=0, le=10, description="pictures a tutorial returns at most")
    image_max_side: int = Field(1024, ge=128, le=4096, description="longest side of each returned picture")

    @property
    def viewport_size(self) -> tuple[int, int]:
        return parse_size(self.viewport)


class Settings(BaseSettings):
    """All settings of one server process."""

    model_config = SettingsConfigDict(
        env_prefix="SYMPHONY_", env_nested_delimiter="__", extra="forbid", nested_model_default_partial_update=True
    )

    server: ServerSettings = Field(default_factory=ServerSettings)
    display: DisplaySettings = Field(default_factory=DisplaySettings)
    desktop: DesktopSettings = Field(default_factory=DesktopSettings)
    screenshot: ScreenshotSettings = Field(default_factory=ScreenshotSettings)
    input: InputSettings = Field(default_factory=InputSettings)
    ocr: OcrSettings = Field(default_factory=OcrSettings)
    models: ModelsSettings = Field(default_factory=ModelsSettings)
    grounding: GroundingSettings = Field(default_factory=GroundingSettings)
    memory: MemorySettings = Field(default_factory=MemorySettings)
    orchestrator: OrchestratorSettings = Field(default_factory=OrchestratorSettings)
    policy: PolicySettings = Field(default_factory=PolicySettings)
    code: CodeSettings = Field(default_factory=CodeSettings)
    search: SearchSettings = Field(default_factory=SearchSettings)
    view: ViewSettings = Field(default_factory=ViewSettings)
    log_level: Annotated[Literal["DEBUG", "INFO", "WARNING", "ERROR"], Flag(SERVERS)] = Field(
        "INFO", description="log detail, to stderr (run and bench: WARNING unless given)"
    )

    @model_validator(mode="after")
    def _view_is_of_this_display(self) -> Settings:
        if self.view.enabled and self.desktop.backend != "local":
            raise ValueError(
                f"the live view (--view) shows this host's display, and desktop.backend {self.desktop.backend!r} "
                "drives another machine: watch that machine with its own viewer (an OSWorld VM: its noVNC, port 8006)"
            )
        return self

    @classmethod
    def settings_customise_sources(
        cls,
        settings_cls: type[BaseSettings],
        init_settings: PydanticBaseSettingsSource,
        env_settings: PydanticBaseSettingsSource,
        dotenv_settings: PydanticBaseSettingsSource,
        file_secret_settings: PydanticBaseSettingsSource,
    ) -> tuple[PydanticBaseSettingsSource, ...]:
        sources: list[PydanticBaseSettingsSource] = [init_settings, env_settings]
        config_file = _config_file.get() or os.environ.get(CONFIG_FILE_ENV)
        if config_file:
            sources.append(_file_source(settings_cls, Path(config_file)))
        return tuple(sources)


@dataclass(frozen=True)
class FlagSetting:
    """A setting's command-line flag, as `flag_settings` finds it on the Settings model."""

    path: tuple[str, ...]  # group, [role,] field
    flag: str  # e.g. --max-width
    commands: tuple[str, ...]
    field: FieldInfo
    metavar: str | None

    @property
    def dest(self) -> str:
        return "__".join(self.path)

    @property
    def variable(self) -> str:
        return "SYMPHONY_" + self.dest.upper()

    @property
    def help(self) -> str:
        """The setting's description, its default and its environment variable."""
        default = self.field.get_default(call_default_factory=True)
        if isinstance(default, bool):
            default = "on" if default else "off"
        where = f"default {default}, or {self.variable}" if default not in (None, "", []) else f"or {self.variable}"
        return f"{self.field.description} ({where})"


def flag_settings(
    group: type[BaseModel] = Settings, path: tuple[str, ...] = (), commands: tuple[str, ...] = ()
) -> Iterator[FlagSetting]:
    """Every setting with a `Flag` in its annotation that some command takes, groups walked in order."""
    for name, field in group.model_fields.items():
        flag = next((item for item in field.metadata if isinstance(item, Flag)), None)
        kind = field.annotation
        if isinstance(kind, type) and issubclass(kind, BaseModel):
            yield from flag_settings(kind, (*path, name), flag.commands if flag else ())
        elif flag is not None and (flag.commands or commands):
            flag_name = (flag.name or name.replace("_", "-")).format(group=path[-1] if path else "")
            yield FlagSetting((*path, name), f"--{flag_name}", flag.commands or commands, field, flag.metavar)


@cache  # every tool call names its time bound's setting; walking the settings tree took 0.3 ms CPU each time
def setting_label(*path: str) -> str:
    """How a person sets a setting, for messages: its config path, its environment variable, its flag if any."""
    variable = "SYMPHONY_" + "__".join(path).upper()
    flags = [setting.flag for setting in flag_settings() if setting.path == path]
    return f"{'.'.join(path)} ({', '.join([variable, *flags[:1]])})"


def _file_source(settings_cls: type[BaseSettings], path: Path) -> PydanticBaseSettingsSource:
    if not path.is_file():
        raise ValueError(f"config file {path} does not exist ({CONFIG_FILE_ENV} or --config)")
    if path.suffix == ".toml":
        return TomlConfigSettingsSource(settings_cls, toml_file=path)
    if path.suffix == ".json":
        return JsonConfigSettingsSource(settings_cls, json_file=path)
    raise ValueError(f"config file {path} must end in .toml or .json")


def load_settings(config_file: Path | None = None, **overrides: object) -> Settings:
    """Build settings; `overrides` are nested dicts from CLI flags and win over everything.

    `config_file` (else $SYMPHONY_CONFIG_FILE) is read below the environment.
    """
    token = _config_file.set(config_file)
    try:
        return Settings(**overrides)  # type: ignore[arg-type]
    finally:
        _config_file.reset(token)
