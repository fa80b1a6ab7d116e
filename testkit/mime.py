"""A user's XDG configuration and data in a folder of its own, read by xdg-mime as a real session's would be."""

from __future__ import annotations

from pathlib import Path

# Unset, so xdg-mime follows its generic rules (mimeapps.list, then the system's) and no desktop's own tool.
SESSION_VARIABLES = (
    "XDG_CURRENT_DESKTOP",
    "DESKTOP_SESSION",
    "KDE_FULL_SESSION",
    "GNOME_DESKTOP_SESSION_ID",
    "TERMINAL",
)


def make_mime_home(root: Path) -> dict[str, str]:
    """Lay out a home with one application of its own (`xmessage-file.desktop`); the variables that point at it."""
    applications = root / "data" / "applications"
    applications.mkdir(parents=True)
    (applications / "xmessage-file.desktop").write_text(
        "[Desktop Entry]\nType=Application\nName=Message file\nExec=xmessage -title OpenedByDefault -file %f\n"
        "NoDisplay=true\n"
    )
    return {"XDG_CONFIG_HOME": str(root / "config"), "XDG_DATA_HOME": str(root / "data")}


def set_default(home: Path, mime_type: str, entry_id: str) -> None:
    """Make `entry_id` the default application of `mime_type` in the home's mimeapps.list."""
    (home / "config").mkdir(exist_ok=True)
    (home / "config" / "mimeapps.list").write_text(f"[Default Applications]\n{mime_type}={entry_id}\n")
