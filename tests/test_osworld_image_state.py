"""OSWorld's tasks that read the state of its Ubuntu image or its accessibility tree (their JSONs unchanged, in
tests/data): GNOME's settings through gsettings and dconf on the environment's own session bus (including the bus
path the tasks name, /run/user/1000/bus), PulseAudio's null sink, the default video player; and the active tab's URL
read from the AT-SPI tree in OSWorld's XML (the in-VM server stand-in's /accessibility, Chromium named as the image's
Google Chrome), and Impress's Slide Pane, closed by its task's setup keys in the image's LibreOffice profile. Each is
reset in its sandbox and scored by OSWorld's own getters and metrics: left alone it scores 0 (the image's state, not
GNOME's or PulseAudio's defaults, would otherwise let doing nothing pass), and after what a capable agent does inside
the environment as the task user (its Coder's commands, or keys on the screen), 1.
"""

from __future__ import annotations

import shutil
from collections.abc import Iterator
from pathlib import Path

import pytest

from symphony_mcp.bench.osworld import OSWorldAdapter
from symphony_mcp.bench.osworld.getters import GetterContext, getter_env, load_getter
from symphony_mcp.bench.osworld.image import chrome_available, installed_schemas
from symphony_mcp.bench.osworld.metrics import load_metric
from symphony_mcp.bench.types import Environment, TaskFilter
from symphony_mcp.orchestrator.connection import SpawnServer
from testkit.osworld_host import TASKS, task_account
from testkit.osworld_scoring import idle_and_solved, score, task_run

MORE_TASKS = TASKS.parent / "osworld_image"
AUTOSAVE = "2cd43775-7085-45d8-89fa-9e35c0a915cf"  # impress: auto-save every 3 minutes
# LibreOffice writes its settings file when it quits: quit it, then add the setting as LibreOffice writes it.
SET_AUTOSAVE = """pkill -f 'soffice[.]bin'; while pgrep -f 'soffice[.]bin' >/dev/null; do sleep 0.2; done
python3 - ~/.config/libreoffice/4/user/registrymodifications.xcu <<'PY'
import sys
path = sys.argv[1]
item = ('<item oor:path="/org.openoffice.Office.Common/Save/Document"><prop oor:name="AutoSaveTimeIntervall" '
        'oor:op="fuse"><value>3</value></prop></item>')
text = open(path).read().replace("</oor:items>", item + "</oor:items>")
open(path, "w").write(text)
PY
"""
PASSWORDS_PAGE = "12086550-11c0-466b-b367-1d9e75b3910e"  # chrome: open the page of saved passwords
# What an agent does on the screen: the address bar, the page's address, Enter (xdotool on the environment's display).
OPEN_PASSWORDS = (
    "xdotool key ctrl+l && sleep 0.5 && xdotool type --delay 20 chrome://password-manager/passwords "
    "&& xdotool key Return"
)

DELETE_ON_CLOSE = "99146c54-4f37-4ab8-9327-5f3291665e1e"  # chrome: delete browsing data when it closes
# The change Chrome's settings page makes for "Delete data sites have saved to your device when you close all windows"
# (chrome://settings/content/siteData; measured: that click writes exactly this), made with Chrome closed, as it writes
# its Preferences back when it exits (its processes are named chrome, image.py).
SET_DELETE_ON_CLOSE = """pkill -x chrome; while pgrep -x chrome >/dev/null; do sleep 0.2; done
python3 - ~/.config/google-chrome/Default/Preferences <<'PY'
import json, sys
prefs = json.load(open(sys.argv[1]))
prefs.setdefault("profile", {}).setdefault("default_content_setting_values", {})["cookies"] = 4
json.dump(prefs, open(sys.argv[1], "w"))
PY
"""
SLIDE_PANE = "ef9d12bd-bcee-4ba0-a40e-918400f43ddf"  # impress: its setup closes the Slide Pane; get it back
# Impress's window is up (a search may meet a window that goes away meanwhile: asked again).
IMPRESS_WINDOW = (
    "for _ in $(seq 120); do xdotool search --onlyvisible --name 'LibreOffice Impress' >/dev/null 2>&1 && break; "
    "sleep 0.5; done"
)
# What a user does to get the pane back: View > Slide Pane, through the menus' mnemonics (View, Slide ~Pane).
REOPEN_SLIDE_PANE = (
    f"{IMPRESS_WINDOW} && xdotool search --onlyvisible --name 'LibreOffice Impress' windowactivate --sync "
    "&& xdotool key alt+v && sleep 1 && xdotool key p && sleep 2"
)

TEXT_SCALING = "3ce045a0-877b-42aa-8d2c-b4a863336ab8"
SCREEN_LOCK = "a4d98375-215b-4a4d-aee9-3d4370fccc41"
NO_DIMMING = "bedcedc4-4d72-425e-ad62-21960b11fe0d"
FAVORITES = "ec4e3f68-9ea4-4c18-a5c9-69f89d1178b3"  # its setup and getter name /run/user/1000/bus
DO_NOT_DISTURB = "f9be0997-4b7c-45c5-b05c-4612b44a6118"
MAX_VOLUME = "28cc3b7e-b194-4bc9-8353-d04c0f4d56d2"
VLC_DEFAULT = "937087b6-f668-4ba6-9110-60682ee33441"
TERMINAL_SIZE = "13584542-872b-42d8-b299-866967b5c3ef"  # its check opens a terminal with Ctrl+Alt+T, types stty size
DEFAULT_PROFILE = (  # GNOME Terminal's built-in default profile
    "org.gnome.Terminal.Legacy.Profile:/org/gnome/terminal/legacy/profiles:/:b1dcc9dd-5262-4d8d-a863-c897e6d979b9/"
)
VLC_VIDEO_TYPES = "grep '^MimeType=' /usr/share/applications/vlc.desktop | cut -d= -f2 | tr ';' '\\n' | grep '^video/'"
SOLUTIONS = {  # task id -> what the agent's code runs in the environment
    TEXT_SCALING: "gsettings set org.gnome.desktop.interface text-scaling-factor 1.25",
    SCREEN_LOCK: "gsettings set org.gnome.desktop.screensaver lock-enabled true",
    NO_DIMMING: "gsettings set org.gnome.desktop.session idle-delay 0",
    FAVORITES: "gsettings set org.gnome.shell favorite-apps \"['google-chrome.desktop', 'thunderbird.desktop']\"",
    DO_NOT_DISTURB: "gsettings set org.gnome.desktop.notifications show-banners false",
    MAX_VOLUME: "pactl set-sink-volume @DEFAULT_SINK@ 100%",
    VLC_DEFAULT: f"xdg-mime default vlc.desktop $({VLC_VIDEO_TYPES})",
    TERMINAL_SIZE: f"gsettings set {DEFAULT_PROFILE} default-size-columns 132 "
    f"&& gsettings set {DEFAULT_PROFILE} default-size-rows 43",
}

pytestmark = [
    pytest.mark.anyio,
    pytest.mark.skipif(
        not (
            {"org.gnome.desktop.interface", "org.gnome.shell"} <= installed_schemas()
            and shutil.which("pulseaudio")
            and shutil.which("pactl")
            and shutil.which("totem")
            and shutil.which("vlc")
            and shutil.which("xdotool")
            and shutil.which("gnome-terminal")
            and chrome_available()
        ),
        reason="needs GNOME's schemas with dconf, PulseAudio, Totem, VLC, GNOME Terminal, xdotool and Chromium "
        "(scripts/install.sh --dev installs them)",
    ),
]


@pytest.fixture(scope="module")
def task_user() -> Iterator[str]:
    with task_account() as name:
        yield name


@pytest.mark.timeout(600)
async def test_image_state_tasks_score_0_left_alone_and_1_solved(task_user: str, tmp_path: Path) -> None:
    adapters = [OSWorldAdapter(TASKS), OSWorldAdapter(MORE_TASKS)]  # os tasks; the default video player's
    tasks = {t.task_id: (a, t) for a in adapters for t in a.list_tasks(TaskFilter(task_ids=tuple(SOLUTIONS)))}
    assert {t: task.skip_reason for t, (_, task) in tasks.items()} == dict.fromkeys(SOLUTIONS), "all runnable"
    environment = Environment("env-0", "", tmp_path, SpawnServer())
    try:
        idle = {t: await score(tasks[t][0], environment, tasks[t][1], None) for t in SOLUTIONS}
        solved = {t: await score(tasks[t][0], environment, tasks[t][1], SOLUTIONS[t]) for t in SOLUTIONS}
    finally:
        for adapter in adapters:
            await adapter.close()
    assert all(verdict.startswith("0 ") for verdict in idle.values()), idle
    assert all(verdict.startswith("1 ") for verdict in solved.values()), solved
    # What was read is the image's state, then the agent's change (OSWorld's getters ran inside the environment).
    assert "org.gnome.Totem.desktop" in idle[VLC_DEFAULT] and "vlc.desktop" in solved[VLC_DEFAULT]
    assert "43 132" in solved[TERMINAL_SIZE]  # the terminal's text, read through the accessibility tree
    assert "'false\\n'" in idle[SCREEN_LOCK] and "'40\\n'" in idle[MAX_VOLUME], (idle[SCREEN_LOCK], idle[MAX_VOLUME])


@pytest.mark.timeout(300)
async def test_the_active_tab_is_read_from_the_accessibility_tree(task_user: str, tmp_path: Path) -> None:
    """OSWorld's get_active_url_from_accessTree, unchanged, finds Chrome's address bar in the environment's tree."""
    # The browser's window is up (a search may meet a window that goes away meanwhile: asked again).
    address_bar = (
        "for _ in $(seq 120); do xdotool search --onlyvisible --class chrom >/dev/null 2>&1 && break; sleep 0.5; done"
    )
    solution = f"{address_bar} && sleep 2 && {OPEN_PASSWORDS} && sleep 2"
    idle, solved = await idle_and_solved(MORE_TASKS, PASSWORDS_PAGE, tmp_path, address_bar, solution)
    assert idle.startswith("0 is_expected_active_tab('chrome://"), idle  # the new tab page, read from the tree
    assert solved == "1 is_expected_active_tab('chrome://password-manager/passwords') = 1", solved


@pytest.mark.timeout(300)
async def test_libreoffices_settings_file_is_there_as_in_the_image(task_user: str, tmp_path: Path) -> None:
    """A fresh environment's LibreOffice profile has run once, so OSWorld's auto-save check reads its settings file;
    and its /accessibility serves Impress's whole tree."""
    async with task_run(MORE_TASKS, AUTOSAVE, tmp_path) as run:
        idle = await run.score(IMPRESS_WINDOW)
        # The environment's /accessibility serves Impress's whole tree, as OSWorld's server does: its first walk of a
        # fresh Impress took longer than the 10 s elements' observation allows (measured), and the slide pane, which
        # OSWorld's check_left_panel looks for, lies near its end.
        with getter_env(GetterContext(run.sandbox, tmp_path / "cache", (1920, 1080))) as env:
            tree = load_getter("accessibility_tree")(env, {})
        solved = await run.score(SET_AUTOSAVE)
    assert idle.startswith("0 check_auto_saving_time("), idle
    assert solved.startswith("1 check_auto_saving_time("), solved
    assert "walk cut" not in tree and load_metric("check_left_panel")(tree) == 1.0, tree[-300:]


@pytest.mark.timeout(300)
async def test_impress_setup_closes_the_slide_pane_and_view_menu_reopens_it(task_user: str, tmp_path: Path) -> None:
    """ef9d12bd's setup keys (Esc for the one start-up dialog, F10, View, 11th item) close the Slide Pane here as in
    the image, whose LibreOffice profile has Tip of the Day off; OSWorld's check_left_panel then reads the tree."""
    idle, solved = await idle_and_solved(MORE_TASKS, SLIDE_PANE, tmp_path, IMPRESS_WINDOW, REOPEN_SLIDE_PANE)
    assert idle.startswith("0 check_left_panel("), idle[:200]
    assert solved.startswith("1 check_left_panel("), solved[:200]


@pytest.mark.timeout(300)
async def test_chrome_deletes_data_on_close_only_once_told(task_user: str, tmp_path: Path) -> None:
    """The image's Chrome profile holds no content setting (Chromium's Local Network Access mark is off, CHROME_FLAGS),
    so OSWorld's data_delete_automacally reads 'false' left alone and 'true' after the settings page's change."""
    idle, solved = await idle_and_solved(MORE_TASKS, DELETE_ON_CLOSE, tmp_path, None, SET_DELETE_ON_CLOSE)
    assert idle == "0 exact_match('false') = 0", idle
    assert solved == "1 exact_match('true') = 1", solved
