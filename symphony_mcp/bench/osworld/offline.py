"""Files OSWorld downloads, taken from a copy of OSWorld's own cache instead of the network.

OSWorld's harness keeps what it downloads in `cache/<task_id>/`: a setup `download` step's file as
`<uuid5(NAMESPACE_URL, url)>_<basename of its VM path>`, a `cloud_file` getter's gold file as `<dest>`. A
copy of that folder (from a run with the network, or filled by hand) makes those tasks run offline: the
adapter looks a file up by the same names (OSWORLD_CACHE, or the adapter's `cache` argument) and never
fetches anything. A task whose files are not all there is listed as needing the network.
"""

from __future__ import annotations

import os
import uuid
from pathlib import Path

from symphony_mcp.bench.osworld.sandbox import Sandbox

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


def place(sandbox: Sandbox, source: Path, path: str) -> str:
    """Put a file where the task's VM path says, inside the environment as the task user, as OSWorld's
    /setup/upload does (`~` and variables expanded, a relative path from the user's home, missing folders made)."""
    user = sandbox.user
    expanded = os.path.expandvars(user.expand(path))
    target = expanded if os.path.isabs(expanded) else str(user.home / expanded)
    sandbox.write_file(target, source.read_bytes())
    return target
