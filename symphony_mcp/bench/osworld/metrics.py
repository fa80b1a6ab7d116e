"""OSWorld's own metric and getter functions, from the `desktop-env` package, imported one module at a time.

`desktop_env/evaluators/metrics/__init__.py` (and getters/__init__.py: Playwright, pandas...) imports every module
eagerly, and some need torch, easyocr, librosa, cv2... (measured: importing `desktop_env.evaluators.metrics.general`
the usual way fails on the first missing one, `bs4`). The modules import each other by their absolute names
(`from desktop_env.evaluators.metrics.utils import ...`), so loading one file under a private name is not
enough. Instead the package `desktop_env.evaluators.metrics` (or `.getters`) is registered as a plain package
object whose search path is its folder, without running its `__init__`; then `import ...metrics.general` loads
general.py and utils.py only (about 0.3 s) and never torch. Which module defines a function is read from
that `__init__` as text (its `from .module import (names)` lines), never by running it.

Metrics print (an MCP stdio pipe must never get prints): callers run them under `quiet()`.
"""

from __future__ import annotations

import ast
import contextlib
import importlib
import importlib.util
import re
import sys
import types
from collections.abc import Callable, Iterator
from functools import cache
from pathlib import Path
from typing import Any

EVALUATORS = "desktop_env.evaluators"
METRICS, GETTERS = "metrics", "getters"  # its two packages: metric functions, and getters `get_<type>(env, config)`
TORCHVISION_OPS = re.compile(r"operator torchvision::\w+ does not exist")
INSTALL_HINT = "install the OSWorld extra: pip install 'symphony-mcp[osworld]' and pip install --no-deps desktop-env"


class MetricUnavailableError(Exception):
    """The metric or getter cannot be used here (desktop-env missing, unknown name, a dependency not installed, or its
    module failing at import time)."""


@cache
def evaluators_folder() -> Path:
    try:
        spec = importlib.util.find_spec(EVALUATORS)
    except ModuleNotFoundError:  # no desktop_env at all: find_spec raises for a missing parent package
        spec = None
    if spec is None or not spec.submodule_search_locations:
        raise MetricUnavailableError(f"desktop-env is not installed: {INSTALL_HINT}")
    return Path(next(iter(spec.submodule_search_locations)))


@cache
def function_modules(part: str) -> dict[str, str]:
    """Function name -> the module (file stem) of `part` (METRICS, GETTERS) that defines it, from its __init__ text."""
    tree = ast.parse((evaluators_folder() / part / "__init__.py").read_text(encoding="utf-8"))
    found: dict[str, str] = {}
    for node in tree.body:
        if isinstance(node, ast.ImportFrom) and node.level == 1 and node.module:
            for alias in node.names:
                found[alias.asname or alias.name] = node.module
    return found


def load_metric(name: str) -> Callable[..., Any]:
    """The metric function `name`, importing only its module (and what that module imports)."""
    return load_function(METRICS, name)


def load_function(part: str, name: str) -> Callable[..., Any]:
    """OSWorld's function `name` of `part` (METRICS, GETTERS), importing only its module."""
    stem = function_modules(part).get(name)
    if stem is None:
        raise MetricUnavailableError(f"OSWorld has no {part[:-1]} function {name!r}")
    module = _load_module(part, stem)
    function = getattr(module, name, None)
    if not callable(function):
        raise MetricUnavailableError(f"{module.__name__} has no function {name!r}")
    return function


@cache
def _load_module(part: str, stem: str) -> types.ModuleType:
    _register_package(part)
    try:
        try:
            with quiet():  # some print at import time (pymupdf's `fitz` deprecation notice)
                return importlib.import_module(f"{EVALUATORS}.{part}.{stem}")
        except RuntimeError as exc:  # docs.py imports easyocr, which imports PyPI's CUDA torchvision beside CPU torch
            if not TORCHVISION_OPS.search(str(exc)):
                raise
            _import_torchvision()
            with quiet():
                return importlib.import_module(f"{EVALUATORS}.{part}.{stem}")
    except ImportError as exc:
        raise MetricUnavailableError(
            f"OSWorld's {part[:-1]} module {stem} needs {exc.name or exc}: {INSTALL_HINT}"
        ) from exc
    except Exception as exc:  # any import-time failure, e.g. a CUDA torchvision beside CPU torch (RuntimeError)
        raise MetricUnavailableError(
            f"OSWorld's {part[:-1]} module {stem} fails to import here: {type(exc).__name__}: {exc}"
        ) from exc


def _import_torchvision() -> None:
    """torchvision imported the way the EasyOCR engine does (its op schemas defined), or why it cannot be."""
    from symphony_mcp.vision.ocr.easyocr_engine import EasyOcrUnavailableError, import_torchvision

    try:
        import_torchvision(importlib.import_module("torch"))
    except EasyOcrUnavailableError as exc:
        raise MetricUnavailableError(f"torchvision cannot be imported beside this torch: {exc}") from exc


def _register_package(part: str) -> None:
    name = f"{EVALUATORS}.{part}"
    if sys.modules.get(name) is not None:
        return
    importlib.import_module(EVALUATORS)  # its __init__ is comments only
    package = types.ModuleType(name, f"OSWorld's {part}, without their eager __init__ (symphony_mcp.bench)")
    package.__path__ = [str(evaluators_folder() / part)]
    package.__package__ = name
    sys.modules[name] = package


@contextlib.contextmanager
def quiet() -> Iterator[None]:
    """Third-party prints go to stderr, never to stdout (which may be an MCP stdio pipe)."""
    with contextlib.redirect_stdout(sys.stderr):
        yield
