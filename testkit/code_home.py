"""A home and a server environment holding what code run for the caller must not see or change: a private key, the
user's shell profile, API tokens."""

from __future__ import annotations

from pathlib import Path

SECRET = "s3cret-token-value"
SECRET_VARIABLES = ("SYMPHONY_MODELS__CODER__API_KEY", "OPENAI_API_KEY", "GITHUB_TOKEN")


def make_home(root: Path) -> Path:
    """`root`/home with an SSH key and a .bashrc of the user's own."""
    home = root / "home"
    (home / ".ssh").mkdir(parents=True)
    (home / ".ssh" / "id_ed25519").write_text("PRIVATE KEY\n")
    (home / ".bashrc").write_text("# the user's own\n")
    return home
