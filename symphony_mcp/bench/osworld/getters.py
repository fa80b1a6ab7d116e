"""OSWorld's own result and expected getters (`get_<type>(env, config)`, desktop-env), run unchanged on a stand-in env.

OSWorld's getters read what they need from its `DesktopEnv`: `env.controller` (its `PythonController`, which posts
to the in-VM server), `env.vm_ip` with `env.server_port` (some post to the server themselves), `env.chromium_port`
(Chrome's DevTools, which the tasks' setup forwards with socat), `env.vlc_port` (VLC's HTTP interface),
`env.cache_dir`, `env.vm_platform` and `env.current_use_proxy`. `GetterEnv` has exactly those, with OSWorld's own
`PythonController` pointed at our stand-in of the in-VM server (vm_server.py), which does the work inside the
environment's sandbox as the task user. Only a getter's module is imported (metrics.load_function).

`cloud_file` is OSWorld's getter too: it downloads a gold file only when the cache holds no file of that name, so
the offline copy of OSWorld's cache (offline.py) is put in the task's cache first; a gold file that copy lacks is a
FileNotFoundError (the network is never used).
"""

from __future__ import annotations

import contextlib
import shutil
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from symphony_mcp.bench.osworld.metrics import GETTERS, function_modules, load_function
from symphony_mcp.bench.osworld.offline import cloud_copy
from symphony_mcp.bench.osworld.sandbox import Sandbox
from symphony_mcp.bench.osworld.vm_server import VmServer

# The stand-in server answers at once and the same way every time: OSWorld's controller need not wait 5 s between tries.
RETRY_SECONDS = 0.2


@dataclass
class GetterEnv:
    """The attributes of OSWorld's `DesktopEnv` that its getters read."""

    vm_ip: str
    server_port: int
    cache_dir: str
    controller: Any  # desktop_env.controllers.python.PythonController
    chromium_port: int
    vlc_port: int
    vm_platform: str = "Linux"
    current_use_proxy: bool = False
    http_server: str = field(init=False)

    def __post_init__(self) -> None:
        self.http_server = f"http://{self.vm_ip}:{self.server_port}"


@dataclass(frozen=True)
class GetterContext:
    """What a task's getters run against: its environment, its cache folder, the offline copy of OSWorld's cache."""

    sandbox: Sandbox | None  # None on a remote machine (its getters reach its own controller: remote.py)
    cache_dir: Path
    screen_size: tuple[int, int]
    task_id: str = ""
    offline: Path | None = None
    fetch_missing: bool = False  # a gold file that copy lacks is fetched by OSWorld's getter (remote, network on)


def available(kind: str) -> bool:
    """Whether OSWorld has a getter of this type (without importing it)."""
    return f"get_{kind}" in function_modules(GETTERS)


def load_getter(kind: str) -> Callable[[Any, dict[str, Any]], Any]:
    """OSWorld's `get_<kind>`, importing only its module (MetricUnavailableError when it cannot be used here)."""
    return load_function(GETTERS, f"get_{kind}")


@contextlib.contextmanager
def getter_env(context: GetterContext) -> Iterator[GetterEnv]:
    """A stand-in `env` whose server answers from the environment's sandbox while the block runs."""
    from desktop_env.controllers.python import PythonController  # desktop-env is optional (the osworld extra)

    context.cache_dir.mkdir(parents=True, exist_ok=True)
    assert context.sandbox is not None, "a local environment's getters need its sandbox"
    network = context.sandbox.network
    assert network is not None, "the sandbox is not ready"
    # The server runs here on the host's end of the environment's link and answers at vm_ip:5000 through a relay
    # inside, where OSWorld's getters post (some build the URL themselves) and beside Chrome's and VLC's ports.
    with VmServer(context.sandbox, context.screen_size, network.host_ip) as server:
        relay = context.sandbox.expose(network.server_port, server.port)
        try:
            controller = PythonController(network.vm_ip, network.server_port)
            controller.retry_interval = RETRY_SECONDS
            yield GetterEnv(
                network.vm_ip,
                network.server_port,
                str(context.cache_dir),
                controller,
                chromium_port=network.chromium_port,
                vlc_port=network.vlc_port,
            )
        finally:
            relay.kill()
            relay.wait()


def get(env: GetterEnv, context: GetterContext, config: dict[str, Any]) -> Any:
    """The value of one getter config ({type, ...}), by OSWorld's getter of that type."""
    if config["type"] == "cloud_file":
        _place_gold_files(context, config)
    return load_getter(config["type"])(env, config)


def _place_gold_files(context: GetterContext, config: dict[str, Any]) -> None:
    multi = config.get("multi", False)
    urls, names = (list(config["path"]), list(config["dest"])) if multi else ([config["path"]], [config["dest"]])
    for url, name in zip(urls, names, strict=True):
        source = cloud_copy(context.offline, context.task_id, name, url)
        if source is None and context.fetch_missing:
            continue
        if source is None:
            raise FileNotFoundError(f"no offline copy of {url} as {name} (OSWorld's cache)")
        shutil.copyfile(source, context.cache_dir / name)
