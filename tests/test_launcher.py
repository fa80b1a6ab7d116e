"""What `open_app` starts for a name, a command line or a file (desktop/launcher.py, desktop/applications.py)."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from symphony_mcp.desktop.launcher import plan_launch
from symphony_mcp.errors import InvalidInputError
from testkit.mime import set_default


def test_launch_plans_resolve_programs_once(mime_home: Path) -> None:
    xterm = shutil.which("xterm")
    plan = plan_launch("xterm -T hello")
    assert plan.argv == [xterm, "-T", "hello"] and plan.programs == (xterm,) and plan.kind == "command"
    with pytest.raises(InvalidInputError, match="give an application name"):
        plan_launch("   ")
    with pytest.raises(InvalidInputError, match="cannot parse"):
        plan_launch('xterm "unclosed')


def test_a_file_opens_with_its_default_application_as_xdg_open_would(
    mime_home: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    document = tmp_path / "my notes.txt"
    document.write_text("hi")
    set_default(mime_home, "text/plain", "xmessage-file.desktop")
    plan = plan_launch(str(document))
    assert plan.kind == "file" and plan.file == document
    assert plan.argv == [shutil.which("xmessage"), "-title", "OpenedByDefault", "-file", str(document)]
    assert plan.opened_with == "xmessage-file.desktop (Message file), the default application for text/plain"

    set_default(mime_home, "text/plain", "vim.desktop")  # Exec=vim %F, Terminal=true
    plan = plan_launch(str(document))
    terminal = shutil.which("x-terminal-emulator")
    assert plan.argv == [terminal, "-e", shutil.which("vim"), str(document)]
    assert plan.programs == (terminal, shutil.which("vim"))
    assert plan.opened_with is not None
    assert plan.opened_with.endswith("a terminal application run in x-terminal-emulator")
    monkeypatch.setenv("TERMINAL", "xterm")  # xdg-open's $TERMINAL: used with -e
    assert plan_launch(str(document)).argv[:2] == [shutil.which("xterm"), "-e"]

    image = tmp_path / "blank.bin"
    image.write_bytes(bytes([0x89, 0x13, 0x77, 0x01]) * 256)  # no format's magic (0..255 read as a TGA image: GIMP's)
    with pytest.raises(InvalidInputError, match=r"no application is set to open \S+ files such as .*xdg-mime default"):
        plan_launch(str(image))


def test_installed_applications_are_found_by_name_with_their_field_codes_expanded(mime_home: Path) -> None:
    applications = mime_home / "data" / "applications"
    (applications / "sub").mkdir()
    (applications / "sub" / "probe.desktop").write_text(
        "[Desktop Entry]\nType=Application\nName=Probe Viewer\nIcon=probe\n"
        'Exec=xmessage "%c" %i -name "probe name" 100%% %U\n'
    )
    plan = plan_launch("probe viewer")
    assert plan.kind == "desktop-entry"
    assert plan.argv == [shutil.which("xmessage"), "Probe Viewer", "--icon", "probe", "-name", "probe name", "100%"]
