"""OSWorld task JSONs: loading from a folder, and whether each can run where the tasks are run (else why not).

A task folder is OSWorld's `evaluation_examples/examples` (one sub-folder per domain) or one domain's
folder; the tasks are the ones OSWorld's task list names (test_all.json beside the examples folder, or one
chosen), and what else the folder holds is counted with why it is not listed (OSWorld's Windows set, tasks
not in its test set, `template.json` with no id, the Windows variants of Linux tasks `<id>-win.json`).
Every task listed that cannot run carries every reason, not only the first, written once here for both places a
task runs: this host's environments (`Host`, the `osworld` adapter) and remote machines with OSWorld's own image
(`Machines`, `osworld-vm`). Everywhere: a Windows task, no evaluator, a setup step the place does not run
(setup.LOCAL_STEPS, REMOTE_STEPS), a getter or metric desktop-env does not provide or that fails to import (metrics
run on this host); without the network (always here, `network=false` for machines): a download or cloud file that is
not in the copy of OSWorld's cache, a URL, the live web (named in LIVE_WEB where the JSON does not say so), a package
install when the package registries are not reachable. Only here, as OSWorld's image has them: what the image holds
that a task takes for granted (IMAGE_ASSUMPTIONS, keyed by domain and id: OSWorld reuses ids across domains), GNOME
(gsettings, GNOME Shell, the GNOME Terminal text getter), a Windows or proprietary app, an app, program or service
this machine lacks, the task account and sudo for it.
"""

from __future__ import annotations

import functools
import importlib.util
import json
import os
import re
import shutil
import subprocess
import urllib.error
import urllib.request
from collections import Counter
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any, ClassVar

from symphony_mcp.bench.osworld.account import TaskUser
from symphony_mcp.bench.osworld.commands import is_pyautogui
from symphony_mcp.bench.osworld.evaluate import INFEASIBLE, metrics_of
from symphony_mcp.bench.osworld.getters import available, load_getter
from symphony_mcp.bench.osworld.image import PULSEAUDIO, chrome_available, installed_schemas
from symphony_mcp.bench.osworld.metrics import MetricUnavailableError, load_metric
from symphony_mcp.bench.osworld.offline import CACHE_VARIABLE, CacheError, find, task_files
from symphony_mcp.bench.osworld.setup import LOCAL_STEPS, REMOTE_STEPS
from symphony_mcp.bench.types import BenchTask, TaskFilter

BENCHMARK = "osworld"
REMOTE_BENCHMARK = "osworld-vm"  # its own results folder: scores on OSWorld's VMs, beside the local adapter's
TASK_LIST = "test_all.json"  # OSWorld's list of its test set (evaluation_examples/)
NETWORK_STEPS = frozenset({"googledrive", "login", "proxy", "upload_file", "change_wallpaper"})
NETWORK_GETTERS = frozenset({"googledrive_file", "pdf_from_url", "info_from_website"})
URL = re.compile(r"https?://")
GNOME_PROGRAM = re.compile(r"\bgnome-")  # GNOME Shell or a GNOME app, which OSWorld's image has and this host not
# GNOME's settings (gsettings through dconf on the environment's session bus) and PulseAudio (its daemon with a null
# sink, image.PULSEAUDIO) run in every environment (image.py) when installed; a command naming a schema not installed
# here cannot.
SETTINGS = re.compile(r"\bgsettings\b|\bdconf\b|org\.gnome\.|/run/user/\d+/bus")
SCHEMA = re.compile(r"\borg\.gnome\.[A-Za-z0-9_.-]*[A-Za-z0-9]")

# Installs from Debian's archive or PyPI, which this machine may reach (Host.registries); snap's store it does not.
PACKAGE_INSTALL = re.compile(r"\b(apt-get|apt|pip3?)\s+(-\S+\s+)*install\b")
STORE_INSTALL = re.compile(r"\bsnap\s+(-\S+\s+)*install\b")
REGISTRIES = ("https://pypi.org/simple/pip/", "http://deb.debian.org/debian/dists/stable/Release")
# Tasks whose JSON does not say they need the live web but whose evaluation or inputs do (RESEARCH-NEXT §7).
LIVE_WEB = frozenset(
    {
        "68a25bd4-59c7-4f4d-975e-da0c8509c848",
        "c7c1e4c3-9e92-4eba-a4b8-689953975ea4",
        "d1acdb87-bb67-4f30-84aa-990e56a09c92",
        "deec51c9-3b1e-4b9e-993c-4776f20e8bb2",
        "a82b78bb-7fde-4cb3-94a4-035baf10bcf0",
        "36037439-2044-4b50-b9d1-875b5a332143",
        "b337d106-053f-4d37-8da0-7f9c4043a66b",
        "7ff48d5b-2df2-49da-b500-a5150ffc7f18",
        "48d05431-6cd5-4e76-82eb-12b60d823f7d",
        "f8369178-fafe-40c2-adc4-b9b08a125456",  # installs a GNOME theme "from gnome-look.org"
    }
)
SYSTEMD_PROGRAMS = re.compile(r"\b(timedatectl|loginctl|systemctl|hostnamectl|localectl)\b")


@functools.cache
def _default_video_player() -> str:
    """The desktop file a fresh home opens videos with (xdg-mime, without the caller's own choices)."""
    try:
        done = subprocess.run(
            ["xdg-mime", "query", "default", "video/mp4"],
            env={"PATH": os.environ.get("PATH", ""), "HOME": "/nonexistent"},
            capture_output=True, text=True, timeout=30,
        )  # fmt: skip
    except (OSError, subprocess.SubprocessError):
        return ""
    return done.stdout.strip()


# What OSWorld's VM image has installed that a task takes for granted ((domain, task id) -> (check, reason)): keyed by
# domain too, as OSWorld gives tasks of two domains one id (chrome's and thunderbird's 99146c54).
IMAGE_ASSUMPTIONS: dict[tuple[str, str], tuple[Callable[[], bool], str]] = {
    ("os", "94d95f96-9699-4208-98ba-3c3119edf9c2"): (
        lambda: False,
        "installs Spotify: a proprietary app, from the network",
    ),
    ("os", "ddc75b62-7311-4af8-bfb3-859558542b36"): (
        lambda: Path("/usr/share/doc/gnome-mahjongg").exists(),
        "uninstalls GNOME Mahjongg, which OSWorld's image has and this machine does not (doing nothing would pass)",
    ),
    ("multi_apps", "e1fc0df3-c8b9-4ee7-864c-d0b590d3aa56"): (
        lambda: False,
        "installs a LibreOffice extension from the network",
    ),
    ("os", "ae039631-2b12-4637-84f6-c67d51511be3"): (
        lambda: Path("/usr/share/applications/firefox.desktop").exists(),
        "needs Firefox as firefox.desktop (OSWorld's image has it; this machine does not)",
    ),
    ("multi_apps", "937087b6-f668-4ba6-9110-60682ee33441"): (
        lambda: _default_video_player() != "vlc.desktop",
        "checks that VLC becomes the default video player; OSWorld's image has Totem as the default, here VLC "
        "already is (doing nothing would pass)",
    ),
}
# The apps a task names in related_apps, and the program it needs for them (None: proprietary, not on Linux).
APP_PROGRAMS: dict[str, tuple[str | None, str]] = {
    "chrome": ("google-chrome", "Google Chrome (Debian's chromium presents it)"),
    "browser": ("google-chrome", "Google Chrome (Debian's chromium presents it)"),
    "gimp": ("gimp", "GIMP"),
    "vscode": ("code", "Visual Studio Code (proprietary build)"),
    "vs_code": ("code", "Visual Studio Code (proprietary build)"),
    "thunderbird": ("thunderbird", "Thunderbird"),
    "vlc": ("vlc", "VLC"),
    "ubuntu_media_player": ("totem", "the GNOME video player"),
    "libreoffice_calc": ("libreoffice", "LibreOffice"),
    "libreoffice calc": ("libreoffice", "LibreOffice"),
    "libreoffice_impress": ("libreoffice", "LibreOffice"),
    "libreoffice_writer": ("libreoffice", "LibreOffice"),
    "libreoffice": ("libreoffice", "LibreOffice"),
    "calc": ("libreoffice", "LibreOffice"),
    "writer": ("libreoffice", "LibreOffice"),
    "excel": (None, "Microsoft Excel (proprietary)"),
    "msoffice_excel": (None, "Microsoft Excel (proprietary)"),
    "word": (None, "Microsoft Word (proprietary)"),
    "ppt": (None, "Microsoft PowerPoint (proprietary)"),
    "powerpoint": (None, "Microsoft PowerPoint (proprietary)"),
    "picard": ("picard", "MusicBrainz Picard"),
}
APPLICATIONS = frozenset(program for program, _ in APP_PROGRAMS.values() if program)
GETTER_PROGRAMS = {"vm_terminal_output": ("gnome-terminal", "GNOME Terminal (its text is read through AT-SPI)")}
GETTER_NEEDS = {
    "vm_wallpaper": "needs GNOME's wallpaper setting",  # (its tasks also set it from a URL)
}


@dataclass(frozen=True)
class Host:
    """This host's environments, where the `osworld` adapter runs tasks: what classification depends on, read once."""

    benchmark: ClassVar[str] = BENCHMARK
    where: ClassVar[str] = "locally"
    steps: ClassVar[frozenset[str]] = LOCAL_STEPS
    network: ClassVar[bool] = False  # files come from the copy of OSWorld's cache only; the live web is not reached

    user: TaskUser | None
    user_problem: str
    programs: Callable[[str], bool]
    systemd: bool
    pyautogui: bool
    cache: Path | None = None  # a copy of OSWorld's download cache (offline.py)
    registries: bool = False  # Debian's archive and PyPI answer: apt-get / pip install work in an environment
    schemas: Callable[[str], bool] = lambda schema: schema in installed_schemas()  # GSettings schemas, by id

    @classmethod
    def here(cls, user: TaskUser | str, cache: Path | None = None) -> Host:
        return cls(
            cache=cache,
            registries=registries_answer(),
            user=user if isinstance(user, TaskUser) else None,
            user_problem=user if isinstance(user, str) else "",
            programs=program_available,
            systemd=Path("/run/systemd/system").is_dir(),
            pyautogui=importlib.util.find_spec("pyautogui") is not None,
        )

    @property
    def sudo(self) -> bool:
        return self.user is not None and self.user.in_sudo_group and self.programs("sudo")


@dataclass(frozen=True)
class Machines:
    """Remote machines with OSWorld's own image (`osworld-vm`): what its apps, GNOME, sudo or systemd need is there, so
    only what differs from this host is said: the setup steps run there (REMOTE_STEPS), and the network, by which
    files the copy of OSWorld's cache lacks are fetched on this host as OSWorld's harness fetches them."""

    benchmark: ClassVar[str] = REMOTE_BENCHMARK
    where: ClassVar[str] = "on remote machines"
    steps: ClassVar[frozenset[str]] = REMOTE_STEPS

    cache: Path | None
    network: bool

    @property
    def registries(self) -> bool:
        return self.network


Place = Host | Machines  # where the tasks are run, as their classification sees it


@functools.cache
def registries_answer() -> bool:
    """Whether Debian's archive and PyPI answer here (asked once per process)."""
    return all(_answers(url) for url in REGISTRIES)


def _answers(url: str, timeout: float = 5.0) -> bool:
    """Whether a package registry answers (through the environment's proxy settings, as apt and pip do)."""
    try:
        with urllib.request.urlopen(urllib.request.Request(url, method="HEAD"), timeout=timeout):
            return True
    except (urllib.error.URLError, OSError, ValueError):
        return False


def program_available(name: str) -> bool:
    """Whether an environment can run the program: on PATH, and for an application, it starts (`--version` answers;
    with libreoffice-common alone /usr/bin/libreoffice exists and fails). `google-chrome` is presented inside each
    environment when Chromium is installed (image.py)."""
    if name == "google-chrome":
        return chrome_available()
    path = shutil.which(name)
    if path is None:
        return False
    return _starts(path) if name in APPLICATIONS else True


NOBODY = ("setpriv", "--reuid=65534", "--regid=65534", "--clear-groups", "--")  # VLC refuses to run as root


@functools.cache
def _starts(path: str, timeout: float = 60.0) -> bool:
    """Whether `path --version` answers, run as nobody when we are root (as the task user runs it, not as root)."""
    command = [*(NOBODY if os.geteuid() == 0 else ()), path, "--version"]
    try:
        done = subprocess.run(
            command, env={"PATH": os.environ.get("PATH", ""), "HOME": "/tmp"}, stdin=subprocess.DEVNULL,
            capture_output=True, timeout=timeout,
        )  # fmt: skip
    except (OSError, subprocess.SubprocessError):
        return False
    return done.returncode == 0


@dataclass(frozen=True)
class TaskSet:
    """The tasks a task list names (OSWorld's test_all.json, or the one chosen), and what else the folder holds."""

    tasks: list[dict[str, Any]]
    task_list: Path | None  # None: no task list found, every task JSON in the folder is listed
    left_out: dict[str, int]  # why a JSON found is not listed -> how many

    def notes(self) -> list[str]:
        """What the listing covers and what it leaves out, in words."""
        named = f"the tasks {self.task_list.name} names" if self.task_list else "every task JSON found (no task list)"
        lines = [f"{len(self.tasks)} tasks listed: {named}"]
        lines += [f"not listed: {count} {why}" for why, count in self.left_out.items()]
        return lines


def find_task_list(folder: Path) -> Path | None:
    """OSWorld's task list for a task folder: test_all.json beside the examples folder (evaluation_examples/),
    in it, or above a domain's folder."""
    for place in (folder, folder.parent, folder.parent.parent):
        if (place / TASK_LIST).is_file():
            return place / TASK_LIST
    return None


def load_task_set(folder: Path, task_list: Path | None = None) -> TaskSet:
    """The tasks of `folder` (the examples folder or one domain's) that the task list names (`task_list`, else
    the one find_task_list finds; without one, all), each with its domain, sorted; with what was left out."""
    if not folder.is_dir():
        raise FileNotFoundError(f"no OSWorld task folder at {folder} (give the examples folder or a domain's)")
    task_list = task_list or find_task_list(folder)
    named = _named(task_list) if task_list else None
    tasks: list[dict[str, Any]] = []
    left_out: Counter[str] = Counter()
    for path in sorted(folder.rglob("*.json")):
        if task_list is not None and path.resolve() == task_list.resolve():
            continue
        try:
            data = json.loads(path.read_text(encoding="utf-8"))
        except (OSError, json.JSONDecodeError) as exc:
            raise ValueError(f"{path}: not a task JSON: {exc}") from exc
        if not isinstance(data, dict) or "instruction" not in data:
            continue  # other task lists (test_small.json)
        if not data.get("id"):
            left_out["template (template.json: no id)"] += 1
            continue
        if path.stem.endswith("-win"):
            left_out["Windows variants of Linux tasks (<id>-win.json, same id: OSWorld's Windows set)"] += 1
            continue
        domain = path.parent.name if path.parent != folder else str(data.get("snapshot") or folder.name)
        if path.parent.parent != folder and path.parent != folder:
            domain = f"{path.parent.parent.name}/{domain}"  # Windows/excel ...
        if named is not None and task_list is not None and (domain, data["id"]) not in named:
            why = (
                f"Windows tasks (OSWorld's Windows set, not in {task_list.name})"
                if domain.startswith("Windows")
                else f"{domain} tasks that {task_list.name} does not name (not in OSWorld's test set)"
            )
            left_out[why] += 1
            continue
        tasks.append({**data, "_domain": domain, "_path": str(path)})
    if named is not None and task_list is not None:
        found = {(t["_domain"], t["id"]) for t in tasks}
        in_folder = {d for d, _ in named if (folder / d).is_dir() or folder.name == d}
        missing = sum(1 for key in named if key[0] in in_folder and key not in found)
        if missing:
            left_out[f"tasks {task_list.name} names that have no JSON in {folder}"] = missing
    return TaskSet(sorted(tasks, key=lambda t: (t["_domain"], t["id"])), task_list, dict(left_out))


def _named(task_list: Path) -> set[tuple[str, str]]:
    try:
        data = json.loads(task_list.read_text(encoding="utf-8"))
    except (OSError, json.JSONDecodeError) as exc:
        raise ValueError(f"{task_list}: not an OSWorld task list: {exc}") from exc
    if not isinstance(data, dict) or not all(isinstance(ids, list) for ids in data.values()):
        raise ValueError(f"{task_list}: not an OSWorld task list ({{domain: [task id, ...]}})")
    return {(domain, str(task_id)) for domain, ids in data.items() for task_id in ids}


def load_tasks(folder: Path) -> list[dict[str, Any]]:
    """The task set's tasks (load_task_set)."""
    return load_task_set(folder).tasks


def select(
    tasks: list[dict[str, Any]], selection: TaskFilter, default_domains: tuple[str, ...]
) -> list[dict[str, Any]]:
    """The tasks a selection takes: ids, domains, all, or the default domains."""
    if selection.task_ids:
        wanted = set(selection.task_ids)
        return [t for t in tasks if t["id"] in wanted]
    if selection.domains or not selection.everything:
        domains = set(selection.domains or default_domains)
        return [t for t in tasks if t["_domain"] in domains]
    return tasks


def to_bench_task(data: dict[str, Any], place: Place) -> BenchTask:
    """The task as the place's adapter lists it: its benchmark, and why it cannot run there, if so."""
    try:
        reason = skip_reason(data, place)
    except (AttributeError, KeyError, TypeError, ValueError) as exc:  # a JSON this adapter cannot read
        reason = f"the task JSON is not in the format this adapter reads: {type(exc).__name__}: {exc}"
    return BenchTask(
        benchmark=place.benchmark,
        domain=data["_domain"],
        task_id=data["id"],
        instruction=data["instruction"],
        skip_reason=reason,
        infeasible=isinstance(evaluator := data.get("evaluator"), dict) and evaluator.get("func") == INFEASIBLE,
        data=data,
    )


def skip_reason(task: dict[str, Any], place: Place) -> str | None:
    """Every reason the task cannot run there (each once, in the order found, joined by '; '), or None."""
    reasons = list(dict.fromkeys(_reasons(task, place)))
    return "; ".join(reasons) if reasons else None


def _reasons(task: dict[str, Any], place: Place) -> Iterator[str]:
    """The reasons of every place; those about what OSWorld's image holds only where the host stands in for it."""
    host = _stand_in(place)
    if task["_domain"].startswith("Windows"):
        yield "a Windows task: needs OSWorld's Windows VMs and Microsoft Office (this adapter runs its Ubuntu tasks)"
        return
    evaluator = task.get("evaluator") or {}
    func = evaluator.get("func")
    if not func:
        yield "the benchmark gives this task no evaluator (func is empty)"
        return
    assumption = IMAGE_ASSUMPTIONS.get((task["_domain"], task["id"]))
    if host is not None and assumption is not None and not assumption[0]():
        yield assumption[1]
    if not place.network and task["id"] in LIVE_WEB:
        yield "needs the live web (its evaluation or inputs come from live sites, though its JSON does not say so)"
    if not place.network and URL.search(str(task.get("instruction", ""))):
        yield "needs the network (the instruction names a URL)"
    if host is not None:
        yield from _app_reasons(task, host)
    steps = [*task.get("config", []), *evaluator.get("postconfig", [])]
    yield from _step_reasons(steps, place)
    yield from _cache_reasons(task, place)
    infeasible = func == INFEASIBLE
    if not infeasible:
        yield from _evaluator_reasons(evaluator, place)
    commands = [c for c in _commands(steps) if not is_pyautogui(c)]
    if not infeasible:
        commands += list(_getter_commands(evaluator))
    yield from _command_reasons(commands, place)
    if host is None:
        return
    if host.user is None:
        yield host.user_problem
    elif not infeasible and not host.sudo and any(re.search(r"\bsudo\b", _text(c)) for c in commands):
        yield (
            "runs sudo as the task user: install sudo and create the account with "
            "`symphony-mcp osworld-user create` (it puts the user in group sudo)"
        )


def _stand_in(place: Place) -> Host | None:
    """This host, where its environments stand in for OSWorld's image; None on machines with the image itself."""
    return place if isinstance(place, Host) else None


def _app_reasons(task: dict[str, Any], host: Host) -> Iterator[str]:
    for app in task.get("related_apps", []):
        program, name = APP_PROGRAMS.get(str(app).lower(), ("", ""))
        if program is None:
            yield f"needs {name}"
        elif program and not host.programs(program):
            yield f"needs {name}, which is not installed here"


def _cache_reasons(task: dict[str, Any], place: Place) -> Iterator[str]:
    for file in task_files(task):
        if file.kind == "cloud_file" and task.get("evaluator", {}).get("func") == INFEASIBLE:
            continue
        try:
            found = find(place.cache, file)
        except CacheError as exc:
            yield f"its cached file {file.name} is damaged: {exc}"
            continue
        if found is None and not place.network:
            step = "a download step" if file.kind == "download" else "a cloud_file getter"
            yield f"needs the network ({step}; offline: OSWorld's cache in {CACHE_VARIABLE})"


def _step_reasons(steps: list[dict[str, Any]], place: Place) -> Iterator[str]:
    host = _stand_in(place)
    for step in steps:
        kind = step.get("type")
        if kind == "download":
            continue
        if kind in NETWORK_STEPS and not place.network:
            yield f"needs the network (a {kind} step)"
        elif (
            kind == "chrome_open_tabs"
            and not place.network
            and any(URL.match(str(u)) for u in step.get("parameters", {}).get("urls_to_open", []))
        ):
            yield "needs the live web (its setup opens live sites in Chrome)"
        elif kind not in place.steps:
            yield f"setup step {kind!r} is not run {place.where} by this adapter"
        if host is None:
            continue
        parameters = step.get("parameters", {})
        command = parameters.get("command")
        if kind in ("execute", "command") and is_pyautogui(command) and not host.pyautogui:
            yield "setup drives the GUI with pyautogui: install symphony-mcp[osworld]"
        if kind == "launch" and command:
            program = (command.split() if isinstance(command, str) else command)[0]
            if not parameters.get("shell") and not host.programs(program):
                yield f"launches {program}, which is not installed here"


def _evaluator_reasons(evaluator: dict[str, Any], place: Place) -> Iterator[str]:
    host = _stand_in(place)
    try:
        metrics = metrics_of(evaluator)
    except (ValueError, TypeError) as exc:
        yield f"the evaluator is malformed: {exc}"
        return
    for metric in metrics:
        for getter in (metric.result, metric.expected):
            if getter is None:
                continue
            kind = str(getter.get("type"))
            if kind == "cloud_file":
                continue  # its gold file: _cache_reasons
            if kind in NETWORK_GETTERS and not place.network:
                yield f"needs the network (the {kind} getter)"
            elif host is not None and kind in GETTER_NEEDS:
                yield GETTER_NEEDS[kind]
            elif host is not None and kind in GETTER_PROGRAMS and not host.programs(GETTER_PROGRAMS[kind][0]):
                yield f"needs {GETTER_PROGRAMS[kind][1]}, which is not installed here"
            elif not available(kind):
                yield f"OSWorld has no getter {kind!r}"
            else:
                try:
                    load_getter(kind)
                except MetricUnavailableError as exc:
                    yield str(exc)
        try:
            load_metric(metric.func)
        except MetricUnavailableError as exc:
            yield str(exc)


def _command_reasons(commands: list[str | list[str]], place: Place) -> Iterator[str]:
    host = _stand_in(place)
    for command in commands:
        text = _text(command)
        if host is not None and GNOME_PROGRAM.search(text):
            yield "needs GNOME (GNOME Shell or a GNOME app)"
        if not place.network and URL.search(text):
            yield "needs the network (a URL in a command)"
        if host is not None and SETTINGS.search(text):
            yield from _settings_reasons(text, host)
        if (
            host is not None
            and PULSEAUDIO.search(text)
            and not (host.programs("pulseaudio") and host.programs("pactl"))
        ):
            yield "needs PulseAudio (pulseaudio and pactl: apt-get install pulseaudio pulseaudio-utils)"
        if PACKAGE_INSTALL.search(text) and not place.registries:
            yield "needs the network (installs packages; Debian's archive or PyPI does not answer here)"
        if STORE_INSTALL.search(text) and not place.network:
            yield "needs the network (installs a snap from the Snap Store)"
        if host is not None and SYSTEMD_PROGRAMS.search(text) and not host.systemd:
            yield "needs systemd (timedatectl, loginctl...), which is not running here"
        if host is not None and isinstance(command, list) and command and not host.programs(command[0]):
            yield f"runs {command[0]}, which is not installed here"


def _settings_reasons(text: str, host: Host) -> Iterator[str]:
    """Why GNOME settings the command reads or writes are not available here (a schema not installed)."""
    if not host.schemas("org.gnome.desktop.interface"):
        yield (
            "needs GNOME's settings (gsettings with dconf: "
            "apt-get install gsettings-desktop-schemas dconf-gsettings-backend)"
        )
        return
    for schema in dict.fromkeys(SCHEMA.findall(text)):
        if not host.schemas(schema):
            yield f"needs GNOME's settings schema {schema}, which is not installed here"


def _text(command: str | list[str]) -> str:
    return command if isinstance(command, str) else " ".join(command)


def _commands(steps: list[dict[str, Any]]) -> Iterator[str | list[str]]:
    for step in steps:
        parameters = step.get("parameters", {})
        if parameters.get("command"):
            yield parameters["command"]
        check = (parameters.get("verification") or {}).get("command_success")
        if check:
            yield check


def _getter_commands(evaluator: dict[str, Any]) -> Iterator[str | list[str]]:
    for metric in metrics_of(evaluator):
        for getter in (metric.result, metric.expected):
            if getter and getter.get("command"):
                yield getter["command"]
