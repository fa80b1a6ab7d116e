"""Files OSWorld downloads, taken from a copy of OSWorld's own cache instead of the network.

OSWorld's harness keeps what it downloads in `cache/<task_id>/`: a setup `download` step's file as
`<uuid5(NAMESPACE_URL, url)>_<basename of its VM path>`, a `cloud_file` getter's gold file as `<dest>`. A
copy of that folder (from a run with the network, or filled by hand) makes those tasks run offline: the
adapter looks a file up by the same names (OSWORLD_CACHE, or the adapter's `cache` argument) and never
fetches anything. A task whose files are not all there is listed as needing the network.
"""

from __future__ import annotations

import os
import shutil
import uuid
from pathlib import Path

from symphony_mcp.bench.osworld.account import TaskUser

CACHE_VARIABLE = "OSWORLD_CACHE"


def download_copy(cache: Path | None, task_id: str, url: str, path: str) -> Path | None:
    """Where OSWorld's cache keeps a download step's file, if it is there."""
    if cache is None:
        return None
    found = cache / task_id / f"{uuid.uuid5(uuid.NAMESPACE_URL, url)}_{os.path.basename(path)}"
    return found if found.is_file() else None


def cloud_copy(cache: Path | None, task_id: str, dest: str) -> Path | None:
    """Where OSWorld's cache keeps a cloud_file getter's file, if it is there."""
    if cache is None:
        return None
    found = cache / task_id / dest
    return found if found.is_file() else None


def place(user: TaskUser, source: Path, path: str) -> Path:
    """Put a file where the task's VM path says, owned by the task user, as OSWorld's /setup/upload does
    (`~` and variables expanded, a relative path from the user's home, missing folders made)."""
    expanded = os.path.expandvars(user.expand(path))
    target = Path(expanded) if os.path.isabs(expanded) else user.home / expanded
    missing = [p for p in reversed(target.parents) if not p.exists()]
    target.parent.mkdir(parents=True, exist_ok=True)
    shutil.copyfile(source, target)
    if os.geteuid() == 0:
        for made in [*missing, target]:
            os.chown(made, user.uid, user.gid)
    return target
