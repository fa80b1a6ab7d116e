"""What OSWorld's VM image holds that its tasks take for granted, put into a fresh environment before a task's setup.

- Google Chrome, as Debian's Chromium: `google-chrome` on PATH (where Google's package puts it) running the browser
  from `/opt/google/chrome/chrome` (a link to Chromium's binary, so its processes are named `chrome` and a task's
  `pkill chrome` ends them), with its profile where OSWorld's getters read it (`~/.config/google-chrome`). The tasks
  start it with `--remote-debugging-port=1337` and forward OSWorld's DevTools port 9222 there with socat. Features
  newer than the image's Chrome that write into what OSWorld's getters read are off (CHROME_FLAGS).
- A Chrome profile that has run once (a first run in the background: `Default/Preferences` exists, as in the image,
  where a task's setup edits it with jq), for tasks that use Chrome.
- VLC's settings as in the image, for tasks that use VLC: its HTTP interface on (OSWorld's getters ask it on port
  8080 with the password `password`) and the privacy question answered, in the vlcrc VLC writes by default.

- GNOME's settings as the image's user has them (gsettings through dconf, on the environment's session bus): the
  screen lock off (`lock-enabled` false; GNOME's default is true, so a task asking to turn it on would pass by doing
  nothing).
- GNOME's shortcut for a terminal (Ctrl+Alt+T opens GNOME Terminal; tasks press it), bound in the environment's
  window manager.
- A LibreOffice profile that has run once (its settings file, registrymodifications.xcu, exists as in the image),
  with Tip of the Day off, for tasks that use LibreOffice or read that file: at start Impress then shows one dialog,
  its template chooser, which a task's setup closes with one Esc (ef9d12bd's keys, timed for the image, assume it;
  a first-run profile adds Tip of the Day after it, which took the rest of those keys, measured).
- PulseAudio running as the task user, its sink (the null sink PulseAudio makes when there is no sound card) below
  full volume (a task asks to turn a too-quiet volume up to 100%; OSWorld's snapshot's exact level is not published),
  for tasks that use it.

All of it is written inside the environment's sandbox (as its root for the programs, as the task user for the home),
so it goes with the environment at reset.
"""

from __future__ import annotations

import functools
import logging
import re
import shutil
import subprocess
from pathlib import Path
from typing import Any

from symphony_mcp.bench.osworld.network import VLC_PORT
from symphony_mcp.bench.osworld.sandbox import Sandbox
from symphony_mcp.errors import SymphonyError

log = logging.getLogger(__name__)
CHROMIUM = Path("/usr/lib/chromium/chromium")  # Debian's binary (/usr/bin/chromium is a shell wrapper around it)
CHROME_BINARY = "/opt/google/chrome/chrome"
CHROME_COMMAND = "/usr/bin/google-chrome"
CHROME_PROFILE = ".config/google-chrome"  # in the task user's home
# Local Network Access came to Chrome long after OSWorld's image was made; with it on, Chromium writes a migration mark
# into `profile.default_content_setting_values` of every profile, where OSWorld's getter `data_delete_automacally`
# takes any entry for "delete data on close" (measured: Chromium 156 writes {"has_migrated_local_network_access": true}
# there at its first start with the feature, nothing without it; the settings page's "delete data when you close all
# windows" writes {"cookies": 4}).
CHROME_FLAGS = " ".join(
    (
        "--no-first-run",
        "--no-default-browser-check",
        "--password-store=basic",
        "--disable-features=LocalNetworkAccessChecks",
    )
)
# Applications' names in the accessibility tree -> the image's (Chromium is presented as Google Chrome).
PRESENTED_APPLICATIONS = {"Chromium": "Google Chrome"}
VLC_PASSWORD = "password"  # what OSWorld's get_vlc_playing_info sends
# vlcrc lines as VLC writes them by default -> as OSWorld's image has them.
VLC_SETTINGS = {
    "#extraintf=": "extraintf=http",
    f"#http-port={VLC_PORT}": f"http-port={VLC_PORT}",
    "#http-password=": f"http-password={VLC_PASSWORD}",
    "#qt-privacy-ask=1": "qt-privacy-ask=0",
}
# GNOME settings of OSWorld's image that differ from GNOME's defaults: (schema, key, value).
GNOME_SETTINGS = (("org.gnome.desktop.screensaver", "lock-enabled", "false"),)
SINK_VOLUME = "40%"
LIBREOFFICE_SETTINGS = "registrymodifications.xcu"  # what LibreOffice's first run writes in its profile
LIBREOFFICE_PROFILE = ".config/libreoffice/4/user"  # in the task user's home
# Settings of the image's LibreOffice that differ from a first run's, as LibreOffice writes them: (path, name, value).
LIBREOFFICE_IMAGE_SETTINGS = (("/org.openoffice.Office.Common/Misc", "ShowTipOfTheDay", "false"),)
WINDOW_MANAGER_DEFAULTS = Path("/etc/xdg/openbox/rc.xml")  # openbox's, which a user's own copy replaces
TERMINAL_SHORTCUT = '<keybind key="C-A-t"><action name="Execute"><command>gnome-terminal</command></action></keybind>'
PULSEAUDIO = re.compile(r"\bpactl\b|\bpulseaudio\b")
FIRST_RUN_SECONDS = 60.0
CHROME_APPS = frozenset({"chrome", "browser", "google-chrome"})
VLC_APPS = frozenset({"vlc"})
LIBREOFFICE = re.compile(r"\blibreoffice|\bsoffice\b", re.IGNORECASE)


def chrome_available() -> bool:
    """Whether `google-chrome` can be presented here (Chromium is installed)."""
    return CHROMIUM.is_file()


@functools.cache
def installed_schemas() -> frozenset[str]:
    """The GSettings schemas an environment's gsettings can read and write (none without gsettings or dconf's
    backend, whose writes the environment's session bus carries to its dconf service)."""
    if shutil.which("gsettings") is None or not gnome_settings_backend():
        return frozenset()
    try:
        done = subprocess.run(["gsettings", "list-schemas"], capture_output=True, text=True, timeout=30)
    except (OSError, subprocess.SubprocessError):
        return frozenset()
    return frozenset(done.stdout.split()) if done.returncode == 0 else frozenset()


def gnome_settings_backend() -> bool:
    """Whether dconf's GSettings backend and its service are installed (else gsettings keeps writes in memory)."""
    modules = Path("/usr/lib").glob("*/gio/modules/libdconfsettings.so")
    return any(modules) and Path("/usr/libexec/dconf-service").exists()


class ImageStateError(SymphonyError):
    """State the image holds, that a task's verdict depends on, could not be put in place."""


def prepare(sandbox: Sandbox, task: dict[str, Any]) -> None:
    """Put the image's programs and the state of the apps the task uses into a fresh environment."""
    uses = {str(app).lower() for app in task.get("related_apps", [])}
    text = str(task.get("config", ""))
    if chrome_available():
        _install_chrome(sandbox)
        if uses & CHROME_APPS or "google-chrome" in text:
            _first_chrome_run(sandbox)
    if uses & VLC_APPS or "vlc" in text:
        _vlc_settings(sandbox)
    if installed_schemas():
        _gnome_settings(sandbox)
    if shutil.which("gnome-terminal") and WINDOW_MANAGER_DEFAULTS.is_file():
        _terminal_shortcut(sandbox)
        if "vm_terminal_output" in str(task.get("evaluator", "")):
            _terminal_server(sandbox)
    if (LIBREOFFICE.search(f"{' '.join(uses)} {text}") or LIBREOFFICE_SETTINGS in str(task)) and shutil.which(
        "soffice"
    ):
        _libreoffice_profile(sandbox)
    if PULSEAUDIO.search(f"{text} {task.get('evaluator', '')}") and shutil.which("pulseaudio"):
        _pulseaudio(sandbox)


def _install_chrome(sandbox: Sandbox) -> None:
    wrapper = f'#!/bin/sh\nexec {CHROME_BINARY} --user-data-dir="$HOME/{CHROME_PROFILE}" {CHROME_FLAGS} "$@"\n'
    script = (
        f'mkdir -p "$(dirname {CHROME_BINARY})" && ln -sf {CHROMIUM} {CHROME_BINARY} '
        f"&& cat > {CHROME_COMMAND} && chmod 755 {CHROME_COMMAND}"
    )
    _run(sandbox, ["sh", "-c", script], as_root=True, data=wrapper.encode())


def _first_chrome_run(sandbox: Sandbox) -> None:
    """Chrome started once and closed, so the profile holds what a used browser's does."""
    _run(sandbox, [CHROME_COMMAND, "--headless=new", "--dump-dom", "about:blank"], timeout=FIRST_RUN_SECONDS)


def _vlc_settings(sandbox: Sandbox) -> None:
    """VLC writes its default vlcrc (--reset-config), then the image's settings replace those defaults."""
    edits = " ".join(f"-e 's|^{default}$|{setting}|'" for default, setting in VLC_SETTINGS.items())
    script = f"vlc -I dummy --reset-config vlc://quit && sed -i {edits} ~/.config/vlc/vlcrc"
    _run(sandbox, ["sh", "-c", script], timeout=FIRST_RUN_SECONDS)


def _gnome_settings(sandbox: Sandbox) -> None:
    script = " && ".join(f"gsettings set {schema} {key} {value}" for schema, key, value in GNOME_SETTINGS)
    _must(sandbox, ["sh", "-c", script], "GNOME's settings")


def _libreoffice_profile(sandbox: Sandbox) -> None:
    """LibreOffice run once (it writes its settings file), then the image's settings added as LibreOffice adds them."""
    _must(sandbox, ["soffice", "--headless", "--terminate_after_init"], "LibreOffice's first run")
    items = "".join(
        f'<item oor:path="{path}"><prop oor:name="{name}" oor:op="fuse"><value>{value}</value></prop></item>'
        for path, name, value in LIBREOFFICE_IMAGE_SETTINGS
    )
    settings = str(sandbox.user.home / LIBREOFFICE_PROFILE / LIBREOFFICE_SETTINGS)
    _must(sandbox, ["sed", "-i", f"s|</oor:items>|{items}</oor:items>|", settings], "LibreOffice's settings")


def _terminal_shortcut(sandbox: Sandbox) -> None:
    """openbox's settings with GNOME's terminal shortcut, in the user's copy; openbox reads it again at once."""
    settings = WINDOW_MANAGER_DEFAULTS.read_text(encoding="utf-8").replace(
        "<keyboard>", f"<keyboard>{TERMINAL_SHORTCUT}", 1
    )
    sandbox.write_file(str(sandbox.user.home / ".config/openbox/rc.xml"), settings.encode())
    _must(sandbox, ["openbox", "--reconfigure"], "the terminal shortcut")


def _terminal_server(sandbox: Sandbox) -> None:
    """GNOME Terminal's server up before the task presses its shortcut (D-Bus starts it on the first call, which
    takes seconds on a loaded machine; keys typed meanwhile would be lost, as they are not on OSWorld's VM)."""
    ping = ["gdbus", "call", "--session", "--dest", "org.gnome.Terminal", "--object-path", "/org/gnome/Terminal"]
    _must(sandbox, [*ping, "--method", "org.freedesktop.DBus.Peer.Ping"], "GNOME Terminal's server")


def _pulseaudio(sandbox: Sandbox) -> None:
    """The daemon started as the image's session starts it (staying up when idle), its sink turned down."""
    script = f"pulseaudio --start --exit-idle-time=-1 && pactl set-sink-volume @DEFAULT_SINK@ {SINK_VOLUME}"
    _must(sandbox, ["sh", "-c", script], "PulseAudio")


def _must(sandbox: Sandbox, argv: list[str], what: str) -> None:
    """Run a step whose failure would let doing nothing pass a task: it raises instead of warning."""
    try:
        done = subprocess.run(
            sandbox.command(argv), env=sandbox.env(), stdin=subprocess.DEVNULL, capture_output=True, timeout=30
        )
    except subprocess.TimeoutExpired as exc:
        raise ImageStateError(f"image state: {what} did not finish within 30 s") from exc
    if done.returncode != 0:
        errors = done.stderr.decode(errors="replace").strip()[-500:]
        raise ImageStateError(f"image state: {what} could not be set: {errors}")


def _run(sandbox: Sandbox, argv: list[str], *, as_root: bool = False, data: bytes = b"", timeout: float = 30.0) -> None:
    try:
        done = subprocess.run(
            sandbox.command(argv, as_root=as_root), env=sandbox.env(), input=data, capture_output=True, timeout=timeout
        )
    except subprocess.TimeoutExpired:
        log.warning("image state: %s did not finish within %g s", argv[0], timeout)
        return
    if done.returncode != 0:
        log.warning("image state: %s failed: %s", argv[0], done.stderr.decode(errors="replace").strip()[-500:])
