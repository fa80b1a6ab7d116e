"""OSWorld's download cache made offline, as its harness leaves it in cache/<task_id>/, for two bundled os tasks
that download files (tests/data/osworld): what the adapter's offline copy (bench/osworld/offline.py) reads."""

from __future__ import annotations

import json
import os
import uuid
from pathlib import Path

from PIL import Image

TRASH = "5ea617a3-0e86-4ba6-aab2-dac9aa2e8d57"  # download a poster, `gio trash` it; restore it (exact_match)


PHOTOS = "23393935-50c7-4a86-aeea-2b78fd089c5c"  # downloads in photos/...; copy the .jpg (check_moved_jpgs)


def offline_cache(folder: Path, *task_files: Path) -> Path:
    """What OSWorld's harness leaves in cache/<task_id>/ after downloading a task's files, made here: small
    images of each downloaded file's type under OSWorld's names (offline.download_copy)."""
    for task_file in task_files:
        task = json.loads(task_file.read_text())
        for step in task["config"]:
            for file in step["parameters"].get("files", []) if step["type"] == "download" else []:
                name = f"{uuid.uuid5(uuid.NAMESPACE_URL, file['url'])}_{os.path.basename(file['path'])}"
                (folder / task["id"]).mkdir(parents=True, exist_ok=True)
                Image.new("RGB", (32, 24), "orange").save(folder / task["id"] / name)  # format from the name
    return folder
