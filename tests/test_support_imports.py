"""Test support lives in testkit/: no test module, benchmark or testkit module imports a test module or conftest.py,
so any test file can be deleted without breaking another (issue 21 item 7)."""

from __future__ import annotations

import ast
import re
from collections.abc import Iterator
from pathlib import Path

from testkit.paths import ROOT

CHECKED = ("tests", "benchmarks", "testkit")
# A module named in a string: an adapter spec ("tests.test_x:Class") or an importlib call.
MODULE_NAMED = re.compile(r"^tests(\.\w+)+(:\w+)?$")


def imported_modules(tree: ast.Module) -> Iterator[tuple[int, str]]:
    """Every module a file imports, at any depth (imports inside functions included), and module names in strings."""
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            yield from ((node.lineno, alias.name) for alias in node.names)
        elif isinstance(node, ast.ImportFrom):
            yield node.lineno, "." * node.level + (node.module or "")
        elif isinstance(node, ast.Constant) and isinstance(node.value, str) and MODULE_NAMED.match(node.value):
            yield node.lineno, node.value


def reaches_tests(source: str) -> bool:
    """Whether an imported name is a test module, conftest or the tests package (relative imports count)."""
    name = source.split(":")[0]
    return name.startswith(".") or name.split(".")[0] in ("tests", "conftest")


def offences(root: Path) -> list[str]:
    found = []
    for folder in CHECKED:
        for path in sorted((root / folder).rglob("*.py")):
            if ".venv" in path.parts:
                continue
            tree = ast.parse(path.read_text(encoding="utf-8"), str(path))
            relative = path.relative_to(root)
            found += [f"{relative}:{line}: {name}" for line, name in imported_modules(tree) if reaches_tests(name)]
    return found


def test_no_module_imports_a_test_module_or_conftest() -> None:
    assert offences(ROOT) == []


def test_the_check_sees_each_kind_of_import(tmp_path: Path) -> None:
    """The check itself: each way one module reaches another's helpers is caught, and testkit imports are not."""
    tests, conftest = "tests", "conftest"  # spelt apart, so a grep for such imports finds none in this file
    kinds = {
        "plain": f"from {tests}.test_transports import free_port\n",
        "conftest": f"from {tests}.{conftest} import wait_for\n",
        "bare_conftest": f"import {conftest}\n",
        "nested": f"def f():\n    from {tests}.test_grounding import red_centroid\n",
        "relative": "from .test_orchestrator import act\n",
        "adapter_spec": f'SPEC = "{tests}.test_bench_runner:FileTasks"\n',
    }
    (tmp_path / "tests").mkdir()
    for name, text in kinds.items():
        (tmp_path / "tests" / f"test_{name}.py").write_text(text)
    (tmp_path / "tests" / "test_fine.py").write_text("from testkit.waiting import wait_for\nNAME = 'tests'\n")
    found = offences(tmp_path)
    assert len(found) == len(kinds) and not any("test_fine" in line for line in found), found
