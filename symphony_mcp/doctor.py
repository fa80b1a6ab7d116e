"""`symphony-mcp doctor`: what this machine has and lacks for each capability, each with the command that fixes it.

One check per capability (CHECKS), each a bounded probe; they run in parallel, so the whole takes about as long as
the slowest. A check fails when the default server (or something the settings turn on) cannot work without it, and
warns when a capability is weaker or absent but the server still runs; `doctor` exits non-zero on any failure.
On a remote desktop backend (osworld, waa, ssh) the machine the tools act on is checked instead (REMOTE_CHECK), and the
checks of this host's display, window manager, accessibility tree, code confinement and live view are skipped,
each saying why.
"""

from __future__ import annotations

import importlib.util
import json
import os
import shutil
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from dataclasses import asdict, dataclass
from typing import Literal

import httpx

from symphony_mcp.bench.osworld.account import find_task_user
from symphony_mcp.code.confine import bwrap_fix, choose, weaker_than_bwrap
from symphony_mcp.config import MODEL_ROLES, ModelRole, Settings
from symphony_mcp.desktop.accessibility import ACCESSIBILITY_FIX, BUS_LAUNCHER
from symphony_mcp.desktop.live_view import VIEW_FIX, missing_parts
from symphony_mcp.desktop.remote.osworld_controller import OsworldController
from symphony_mcp.desktop.remote.ssh_machine import AgentStartError, HostKeyRefusedError, SshMachine
from symphony_mcp.desktop.remote.waa_controller import WaaController
from symphony_mcp.desktop.virtual_display import (
    WINDOW_MANAGER_FIX,
    XVFB_FIX,
    has_window_manager,
    needs_virtual_display,
)
from symphony_mcp.elements.atspi_process import BINDINGS_FIX, AtspiProcess
from symphony_mcp.errors import PolicyError, SymphonyError
from symphony_mcp.models.endpoints import ResolvedEndpoint, is_configured, resolve_endpoint, setting_name

Status = Literal["ok", "warn", "fail", "skip"]
MODEL_PROBE_SECONDS = 3.0  # one GET of /models per endpoint: an endpoint slower than this is as good as down here
# one request to the remote machine (the controller retries a read 3 times; SSH's connect has its own 15 s bound)
REMOTE_PROBE_SECONDS = 5.0
_INPUT_PROGRAMS = ("xdotool", "wmctrl", "xprop")  # the OSWorld backend's input, windows and active window
_MISSING_PROGRAMS = 'for p in "$@"; do command -v -- "$p" >/dev/null || echo "$p"; done'


@dataclass(frozen=True)
class Verdict:
    status: Status
    detail: str
    fix: str = ""  # the exact command or setting; empty when nothing is to be done
    subject: str = ""  # which one, when a check judges several (the model roles)


@dataclass(frozen=True)
class Finding:
    capability: str
    status: Status
    detail: str
    fix: str

    def line(self) -> str:
        fix = f" -> fix: {self.fix}" if self.fix else ""
        return f"{self.status.upper():<4}  {self.capability}: {self.detail}{fix}"


@dataclass(frozen=True)
class Check:
    capability: str
    probe: Callable[[Settings], Verdict | list[Verdict]]


def _display(settings: Settings) -> Verdict:
    if needs_virtual_display(settings.display):
        if xvfb := shutil.which("Xvfb"):
            return Verdict("ok", f"no display given: the server starts its own Xvfb ({xvfb})")
        return Verdict("fail", "no display given and Xvfb is not on PATH", f"{XVFB_FIX}, or set DISPLAY")
    name = settings.display.display or os.environ.get("DISPLAY")
    if name is None:
        return Verdict("fail", "no DISPLAY and display.virtual=never", "SYMPHONY_DISPLAY__VIRTUAL=auto")
    try:
        has_window_manager(name)
    except SymphonyError as exc:
        return Verdict("fail", str(exc), f"start the X server of {name}, or unset DISPLAY so the server starts Xvfb")
    return Verdict("ok", f"using display {name}")


def _window_manager(settings: Settings) -> Verdict:
    if needs_virtual_display(settings.display):
        manager = settings.display.window_manager
        if not manager:
            return Verdict(
                "warn", "none on the virtual display: windows cannot be listed or focused", WINDOW_MANAGER_FIX
            )
        if shutil.which(manager) is None:
            return Verdict(
                "fail",
                f"{manager} is not on PATH: windows cannot be listed or focused, MiniWoB++ cannot run",
                WINDOW_MANAGER_FIX if manager == "openbox" else f"install {manager}, or {WINDOW_MANAGER_FIX}",
            )
        return Verdict("ok", f"{manager} (started on the virtual display)")
    name = settings.display.display or os.environ.get("DISPLAY")
    if name is None:
        return Verdict("warn", "cannot tell: no display (see display)")
    try:
        present = has_window_manager(name)
    except SymphonyError:
        return Verdict("warn", "cannot tell: the display cannot be opened (see display)")
    if present:
        return Verdict("ok", f"one runs on {name}")
    return Verdict(
        "warn",
        f"none runs on {name}: windows cannot be listed or focused",
        f"DISPLAY={name} openbox & ({WINDOW_MANAGER_FIX})",
    )


def _ocr(settings: Settings) -> Verdict:
    if settings.ocr.engine == "easyocr":
        if importlib.util.find_spec("easyocr") is None:
            return Verdict(
                "fail", "ocr.engine is easyocr but easyocr is not installed",
                "pip install 'symphony-mcp[easyocr]' from the lock (README: Installing from the lock), or "
                "SYMPHONY_OCR__ENGINE=tesseract",
            )  # fmt: skip
        return Verdict("ok", "EasyOCR is installed")
    from symphony_mcp.vision.ocr.tesseract_engine import find_tessdata

    if importlib.util.find_spec("tesserocr") is None:
        return Verdict("fail", "tesserocr is not installed", "pip install tesserocr (a dependency of symphony-mcp)")
    language = settings.ocr.language
    try:
        folder = find_tessdata(language)
    except SymphonyError:
        return Verdict(
            "fail",
            f"no Tesseract data for ocr.language={language!r}: find_text and ocr cannot read the screen",
            f"apt-get install -y tesseract-ocr-{language}",
        )
    return Verdict("ok", f"Tesseract with {language!r} data in {folder}")


def _code(settings: Settings) -> Verdict:
    weaker = weaker_than_bwrap(settings.code)
    if weaker is None:
        return Verdict("ok", "run_code is confined by bubblewrap")
    try:
        choose(settings.code)
    except PolicyError:
        return Verdict("fail", f"run_code refuses to run: {weaker}", bwrap_fix(settings.code))
    return Verdict("warn", weaker, bwrap_fix(settings.code))


def _chromium(settings: Settings) -> Verdict:
    from symphony_mcp.search.chromium import chromium_executable  # with Playwright: only for this probe

    try:
        return Verdict("ok", chromium_executable(settings.search))
    except SymphonyError as exc:
        fix = "apt-get install -y chromium"
        if settings.search.browser is not None:
            fix = f"point SYMPHONY_SEARCH__BROWSER at a Chromium, or unset it after {fix}"
        return Verdict("warn", f"{exc} (search_tutorial and MiniWoB++ need it)", fix)


def _accessibility(settings: Settings) -> Verdict:
    """The elements tools need the AT-SPI bindings under the system Python, and on a virtual display the bus."""
    reader = AtspiProcess()
    try:
        reader.start()
    except SymphonyError as exc:
        return Verdict("warn", f"elements and find_element cannot read the accessibility tree: {exc}", BINDINGS_FIX)
    finally:
        reader.close()
    if shutil.which("dbus-daemon") is None or not BUS_LAUNCHER.exists():
        return Verdict("warn", "the virtual display cannot start the accessibility bus", ACCESSIBILITY_FIX)
    return Verdict("ok", f"AT-SPI bindings load under {reader.python}; the accessibility bus can be started")


def _models(settings: Settings) -> list[Verdict]:
    configured = [role for role in MODEL_ROLES if is_configured(settings.models, role)]
    missing = [role for role in MODEL_ROLES if role not in configured]
    verdicts = []
    if missing:
        example = "DEFAULT" if not configured else missing[0].upper()
        verdicts.append(
            Verdict(
                "warn",
                f"not configured for {', '.join(missing)}: the tools that need them say so when called",
                f"SYMPHONY_MODELS__{example}__BASE_URL=http://HOST:PORT/v1 SYMPHONY_MODELS__{example}__MODEL=NAME",
                "unconfigured",
            )
        )
    with ThreadPoolExecutor(max_workers=max(1, len(configured))) as pool:
        verdicts += pool.map(lambda role: _model(settings, role), configured)
    return verdicts


def _model(settings: Settings, role: ModelRole) -> Verdict:
    try:
        endpoint = resolve_endpoint(settings.models, role)
    except SymphonyError as exc:
        return Verdict("fail", str(exc), setting_name(role, "api_key"), role)
    return _reachable(endpoint)


def _reachable(endpoint: ResolvedEndpoint) -> Verdict:
    """GET /models, bounded: reachable, the key accepted, and the model listed when the endpoint lists models."""
    url = endpoint.base_url.rstrip("/") + "/models"
    headers = {"Authorization": f"Bearer {endpoint.api_key}"} if endpoint.api_key else {}
    role, where = endpoint.role, endpoint.describe()
    try:
        answer = httpx.get(url, headers=headers, timeout=MODEL_PROBE_SECONDS)
    except httpx.HTTPError as exc:
        fix = f"start the model server, or set {setting_name(role, 'base_url')}"
        return Verdict("fail", f"{where} is unreachable: {type(exc).__name__} {exc}".strip(), fix, role)
    if answer.status_code in (401, 403):
        fix = f"set {setting_name(role, 'api_key')} (or {setting_name(role, 'api_key_env')})"
        return Verdict("fail", f"{where} refused the API key (HTTP {answer.status_code})", fix, role)
    if answer.status_code >= 400:
        return Verdict("warn", f"{where} answers, but GET /models gave HTTP {answer.status_code}", "", role)
    try:
        listed = {str(model.get("id")) for model in answer.json().get("data", [])}
    except (ValueError, AttributeError):
        listed = set()
    if listed and endpoint.model not in listed:
        some = ", ".join(sorted(listed)[:5])
        return Verdict("warn", f"{where} does not list {endpoint.model!r} (it lists {some})",
                       f"set {setting_name(role, 'model')} to one it serves", role)  # fmt: skip
    return Verdict("ok", f"{where} answers", "", role)


def _live_view(settings: Settings) -> Verdict:
    if missing := missing_parts():
        status: Status = "fail" if settings.view.enabled else "warn"
        return Verdict(status, f"serve --view needs {', '.join(missing)}", VIEW_FIX)
    return Verdict("ok", "x11vnc, websockify and noVNC are installed (serve --view)")


def _osworld_account(settings: Settings) -> Verdict:
    found = find_task_user("user", "password")
    if isinstance(found, str):
        return Verdict(
            "warn", f"bench osworld cannot run its tasks: {found}", "symphony-mcp osworld-user create (as root)"
        )
    return Verdict("ok", f"the task account 'user' ({found.home}) is ready")


def _remote_machine(settings: Settings) -> list[Verdict]:
    desktop = settings.desktop
    assert desktop.url is not None  # DesktopSettings refuses a remote backend without it
    if desktop.backend == "osworld":
        return _osworld_machine(desktop.url)
    if desktop.backend == "waa":
        return _waa_machine(desktop.url)
    return _ssh_machine(settings)


def _waa_machine(url: str) -> list[Verdict]:
    """The WAA server answers /probe, /platform and /screen_size, and runs Python in its process (pyautogui there
    is the backend's pointer and keys). One request at a time, as with OSWorld's controller."""
    controller = WaaController(url, REMOTE_PROBE_SECONDS)
    try:
        controller.probe()
        platform, (width, height) = controller.platform(), controller.screen_size()
    except (SymphonyError, ValueError, KeyError) as exc:
        fix = "start the VM and WAA's server (vm/setup/server/main.py on port 5000), or set SYMPHONY_DESKTOP__URL"
        controller.close()
        return [
            Verdict(
                "fail", f"the WAA server does not answer /probe, /platform and /screen_size: {exc}", fix, "controller"
            ),
            Verdict("skip", "cannot tell: the server does not answer", "", "programs"),
        ]
    answers = Verdict("ok", f"{controller.url} answers: {platform}, screen {width}x{height}", "", "controller")
    try:
        controller.ask("import pyautogui\nanswer = pyautogui.size()", "reading the screen through pyautogui")
    except SymphonyError as exc:
        fix = "restart WAA's server; its /execute_windows runs the backend's pointer and keys with pyautogui"
        return [answers, Verdict("fail", f"the server cannot run the backend's input: {exc}", fix, "programs")]
    finally:
        controller.close()
    return [answers, Verdict("ok", "the server runs pyautogui in its process (/execute_windows)", "", "programs")]


def _osworld_machine(url: str) -> list[Verdict]:
    """The controller answers /platform and /screen_size, and the VM has the programs the backend runs there.
    One after the other: parallel requests wedge OSWorld's controller."""
    controller = OsworldController(url, REMOTE_PROBE_SECONDS)
    try:
        return _osworld_probes(controller)
    finally:
        controller.close()


def _osworld_probes(controller: OsworldController) -> list[Verdict]:
    try:
        platform, (width, height) = controller.platform(), controller.screen_size()
    except (SymphonyError, ValueError, KeyError) as exc:
        fix = "start the VM and its controller (OSWorld's desktop_env/server/main.py), or set SYMPHONY_DESKTOP__URL"
        return [
            Verdict("fail", f"the controller does not answer /platform and /screen_size: {exc}", fix, "controller"),
            Verdict("skip", "cannot tell: the controller does not answer", "", "programs"),
        ]
    answers = Verdict("ok", f"{controller.url} answers: {platform}, screen {width}x{height}", "", "controller")
    try:
        missing = controller.check(["sh", "-c", _MISSING_PROGRAMS, "sh", *_INPUT_PROGRAMS], "looking for programs")
    except SymphonyError as exc:
        return [
            answers,
            Verdict("fail", f"cannot run a command on the VM: {exc}", "restart the VM's controller", "programs"),
        ]
    if missing.split():
        detail = f"the VM lacks {', '.join(missing.split())}: the backend sends input and lists windows with them"
        return [
            answers,
            Verdict("fail", detail, "on the VM: sudo apt-get install -y xdotool wmctrl x11-utils", "programs"),
        ]
    return [answers, Verdict("ok", f"{', '.join(_INPUT_PROGRAMS)} are on the VM", "", "programs")]


def _ssh_machine(settings: Settings) -> list[Verdict]:
    """Log in with the host key checked against known_hosts, then start the agent (the machine's python3 with its
    input module: python-xlib on X11, pyautogui on macOS), which reports the platform and the screen."""
    desktop = settings.desktop
    assert desktop.url is not None
    machine = SshMachine(
        desktop.url,
        desktop.ssh_known_hosts,
        desktop.ssh_key_file,
        desktop.ssh_python,
        desktop.ssh_display,
        REMOTE_PROBE_SECONDS,
    )
    logged_in = Verdict("ok", f"logged in to {machine.target}, its host key matching {desktop.ssh_known_hosts}",
                        "", "connection")  # fmt: skip
    not_logged_in = Verdict("skip", "cannot tell: not logged in", "", "agent")
    try:
        hello = machine.hello()
    except HostKeyRefusedError as exc:
        keyscan = f"ssh-keyscan -p {machine.target.port} {machine.target.host}"
        fix = f"compare `{keyscan}` with the machine's own key, then put its line in {desktop.ssh_known_hosts}"
        return [Verdict("fail", str(exc), fix, "connection"), not_logged_in]
    except AgentStartError as exc:
        fix = (
            "on the machine: install python3 and python3-xlib (X11; SYMPHONY_DESKTOP__SSH_DISPLAY names its display) "
            "or pip3 install pyautogui (macOS), or point SYMPHONY_DESKTOP__SSH_PYTHON at a Python that has them"
        )
        return [logged_in, Verdict("fail", str(exc), fix, "agent")]
    except SymphonyError as exc:
        fix = "start sshd on the machine, check SYMPHONY_DESKTOP__URL and SYMPHONY_DESKTOP__SSH_KEY_FILE"
        return [Verdict("fail", str(exc), fix, "connection"), not_logged_in]
    finally:
        machine.close()
    width, height = hello.screen
    runs = f"{desktop.ssh_python} runs the agent: {hello.platform}, screen {width}x{height}"
    return [logged_in, Verdict("ok", runs, "", "agent")]


CHECKS = (
    Check("display", _display),
    Check("window manager", _window_manager),
    Check("OCR", _ocr),
    Check("code confinement", _code),
    Check("Chromium", _chromium),
    Check("accessibility", _accessibility),
    Check("models", _models),
    Check("live view", _live_view),
    Check("OSWorld account", _osworld_account),
)


REMOTE_CHECK = Check("remote machine", _remote_machine)
# The checks that judge this host's display and what runs on it: on a remote backend they do not apply, and why.
LOCAL_ONLY = {
    "display": "the tools act on the remote machine's screen, not a display of this host",
    "window manager": "windows are the remote machine's (ssh: not listed)",
    "accessibility": "the elements tools do not read this host's accessibility tree on a remote backend",
    "code confinement": "run_code runs on the remote machine, where bubblewrap of this host does not confine it",
    "live view": "serve --view shows a display of this host, not the remote machine",
}


def checks_for(settings: Settings) -> tuple[Check, ...]:
    """CHECKS on the local backend; on a remote one, the remote machine's check first and the local-only skipped."""
    if settings.desktop.backend == "local":
        return CHECKS
    return (REMOTE_CHECK, *(_skipped(check) if check.capability in LOCAL_ONLY else check for check in CHECKS))


def _skipped(check: Check) -> Check:
    reason = f"skipped on the {{backend}} backend: {LOCAL_ONLY[check.capability]}"
    return Check(check.capability, lambda settings: Verdict("skip", reason.format(backend=settings.desktop.backend)))


def diagnose(settings: Settings, checks: tuple[Check, ...] | None = None) -> list[Finding]:
    """Every check's findings, in the checks' order; the probes run at once."""
    checks = checks_for(settings) if checks is None else checks
    with ThreadPoolExecutor(max_workers=len(checks)) as pool:
        results = list(pool.map(lambda check: check.probe(settings), checks))
    findings = []
    for check, result in zip(checks, results, strict=True):
        for verdict in result if isinstance(result, list) else [result]:
            capability = f"{check.capability} ({verdict.subject})" if verdict.subject else check.capability
            findings.append(Finding(capability, verdict.status, verdict.detail, verdict.fix))
    return findings


def report(findings: list[Finding], as_json: bool) -> tuple[str, bool]:
    """The text to print, and whether anything failed (the command then exits with its 'unavailable' status)."""
    failed = any(finding.status == "fail" for finding in findings)
    if as_json:
        return json.dumps({"ok": not failed, "findings": [asdict(f) for f in findings]}, indent=2), failed
    return "\n".join(finding.line() for finding in findings), failed
