"""Which OSWorld tasks a run on remote machines (OSWorld's own Ubuntu VMs) can take, and why not the others.

The machines are OSWorld's image, so what its apps, GNOME, sudo or systemd need is there: the whole task set is
listed runnable except a task whose setup step this adapter does not run on a machine (setup.REMOTE_STEPS:
Google Drive, logins, proxies, a downloaded browsing history), whose getter or metric OSWorld lacks or cannot
import here (metrics run on this host), or, when the user says there is no network (network=false), one whose files are
not in the copy of OSWorld's cache or that needs the live web. With the network, files the copy lacks are
fetched on this host as OSWorld's harness fetches them (inputs uploaded to the machine, gold files by its getter).
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from symphony_mcp.bench.osworld.evaluate import INFEASIBLE, metrics_of
from symphony_mcp.bench.osworld.getters import available, load_getter
from symphony_mcp.bench.osworld.metrics import MetricUnavailableError, load_metric
from symphony_mcp.bench.osworld.offline import CACHE_VARIABLE, CacheError, find, task_files
from symphony_mcp.bench.osworld.setup import REMOTE_STEPS
from symphony_mcp.bench.osworld.tasks import LIVE_WEB, NETWORK_GETTERS, NETWORK_STEPS, URL
from symphony_mcp.bench.types import BenchTask

REMOTE_BENCHMARK = "osworld-vm"  # its own results folder: scores on OSWorld's VMs, beside the local adapter's


@dataclass(frozen=True)
class Machines:
    """What classification depends on: the copy of OSWorld's cache, and whether the web may be used."""

    cache: Path | None
    network: bool


def to_remote_task(data: dict[str, Any], machines: Machines) -> BenchTask:
    """The task as the VM adapter lists it: its benchmark name, and why the machines cannot run it, if so."""
    try:
        reason = remote_skip_reason(data, machines)
    except (AttributeError, KeyError, TypeError, ValueError) as exc:  # a JSON this adapter cannot read
        reason = f"the task JSON is not in the format this adapter reads: {type(exc).__name__}: {exc}"
    evaluator = data.get("evaluator")
    return BenchTask(
        benchmark=REMOTE_BENCHMARK,
        domain=data["_domain"],
        task_id=data["id"],
        instruction=data["instruction"],
        skip_reason=reason,
        infeasible=isinstance(evaluator, dict) and evaluator.get("func") == INFEASIBLE,
        data=data,
    )


def remote_skip_reason(task: dict[str, Any], machines: Machines) -> str | None:
    """Every reason the task cannot run on the machines (each once, in the order found), or None."""
    reasons = list(dict.fromkeys(_reasons(task, machines)))
    return "; ".join(reasons) if reasons else None


def _reasons(task: dict[str, Any], machines: Machines) -> Iterator[str]:
    if task["_domain"].startswith("Windows"):
        yield "a Windows task: needs OSWorld's Windows VMs (this adapter drives its Ubuntu ones)"
        return
    evaluator = task.get("evaluator") or {}
    if not evaluator.get("func"):
        yield "the benchmark gives this task no evaluator (func is empty)"
        return
    steps = [*task.get("config", []), *evaluator.get("postconfig", [])]
    for step in steps:
        kind = step.get("type")
        if kind not in REMOTE_STEPS:
            yield f"setup step {kind!r} is not run on remote machines by this adapter"
    if not machines.network:
        yield from _web_reasons(task, steps, evaluator)
    yield from _file_reasons(task, machines)
    if evaluator.get("func") != INFEASIBLE:
        yield from _evaluator_reasons(evaluator)


def _web_reasons(task: dict[str, Any], steps: list[dict[str, Any]], evaluator: dict[str, Any]) -> Iterator[str]:
    why = "needs the live web (network=false)"
    if task["id"] in LIVE_WEB or URL.search(str(task.get("instruction", ""))):
        yield why
    if any(step.get("type") in NETWORK_STEPS for step in steps):
        yield why
    if any(URL.search(str((step.get("parameters") or {}).get("command", ""))) for step in steps):
        yield why
    for metric in _metrics(evaluator):
        for getter in (metric.result, metric.expected):
            if getter and getter.get("type") in NETWORK_GETTERS:
                yield why


def _file_reasons(task: dict[str, Any], machines: Machines) -> Iterator[str]:
    infeasible = (task.get("evaluator") or {}).get("func") == INFEASIBLE
    for file in task_files(task):
        if file.kind == "cloud_file" and infeasible:
            continue
        try:
            found = find(machines.cache, file)
        except CacheError as exc:
            yield f"its cached file {file.name} is damaged: {exc}"
            continue
        if found is not None or machines.network:
            continue
        what = "its gold file" if file.kind == "cloud_file" else "its input file"
        yield f"{what} {file.name} is not in the copy of OSWorld's cache ({CACHE_VARIABLE}) and network=false"


def _metrics(evaluator: dict[str, Any]) -> list[Any]:
    try:
        return metrics_of(evaluator)
    except (ValueError, TypeError):
        return []


def _evaluator_reasons(evaluator: dict[str, Any]) -> Iterator[str]:
    try:
        metrics = metrics_of(evaluator)
    except (ValueError, TypeError) as exc:
        yield f"the evaluator is malformed: {exc}"
        return
    for metric in metrics:
        for getter in (metric.result, metric.expected):
            kind = str(getter.get("type")) if getter else ""
            if not kind or kind == "cloud_file":
                continue
            if not available(kind):
                yield f"OSWorld has no getter {kind!r}"
                continue
            try:
                load_getter(kind)
            except MetricUnavailableError as exc:
                yield str(exc)
        try:
            load_metric(metric.func)
        except MetricUnavailableError as exc:
            yield str(exc)
