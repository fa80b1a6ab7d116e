"""The locks in locks/ agree with pyproject.toml: a dependency added or narrowed there without running
scripts/lock.sh would make scripts/install.sh install something other than what the package asks for."""

from __future__ import annotations

import re
import tomllib
from pathlib import Path

import pytest
from packaging.requirements import Requirement
from packaging.utils import canonicalize_name

ROOT = Path(__file__).resolve().parent.parent
PROJECT = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]
PIN = re.compile(r"^([A-Za-z0-9][A-Za-z0-9._-]*)==(\S+) \\$", re.MULTILINE)


def pins(lock: str) -> dict[str, str]:
    """Name to version of every package a lock (a path under locks/, or from the root) pins."""
    path = ROOT / "locks" / lock if "/" not in lock else ROOT / lock
    text = path.read_text()
    found = {canonicalize_name(name): version for name, version in PIN.findall(text)}
    # Every pin carries hashes: pip's --require-hashes refuses the whole file otherwise.
    assert text.count("==") == len(found) and text.count("--hash=sha256:") >= len(found)
    return found


def requirements(*extras: str) -> list[Requirement]:
    wanted = [Requirement(line) for line in PROJECT["dependencies"]]
    for extra in extras:
        wanted += [Requirement(line) for line in PROJECT["optional-dependencies"][extra]]
    return [r for r in wanted if r.marker is None or r.marker.evaluate({"sys_platform": "linux"})]


@pytest.mark.parametrize(("lock", "extras"), [("server.txt", ()), ("dev.txt", ("dev", "easyocr", "osworld"))])
def test_lock_pins_every_dependency_within_its_range(lock: str, extras: tuple[str, ...]) -> None:
    pinned = pins(lock)
    for requirement in requirements(*extras):
        name = canonicalize_name(requirement.name)
        assert name in pinned, f"{name} is not in locks/{lock}: run scripts/lock.sh"
        assert requirement.specifier.contains(pinned[name], prereleases=True), (
            f"locks/{lock} pins {name}=={pinned[name]} outside {requirement.specifier}: run scripts/lock.sh"
        )


def test_dev_lock_keeps_the_server_versions() -> None:
    """What the wheel test installs (server.txt) is what the rest of the suite ran on (dev.txt)."""
    server, dev = pins("server.txt"), pins("dev.txt")
    assert {name: dev.get(name) for name in server} == server


def test_no_lock_carries_the_old_xlib() -> None:
    """python3-xlib 0.15 would overwrite python-xlib's Xlib package (locks/overrides.txt)."""
    for lock in ("server.txt", "dev.txt", "no-deps.txt"):
        assert "python3-xlib" not in pins(lock)
    assert "python-xlib" in pins("server.txt")


def test_torch_is_the_cpu_build() -> None:
    assert pins("dev.txt")["torch"].endswith("+cpu")
    assert not any(name.startswith("nvidia-") for name in pins("dev.txt"))


def requirement_lines(path: Path) -> list[str]:
    """The requirements of a pip requirements file, those of the files it includes with -r too."""
    lines = []
    for line in path.read_text().splitlines():
        line = line.split("#", 1)[0].strip()
        if line.startswith("-r "):
            lines += requirement_lines(path.parent / line.removeprefix("-r ").strip())
        elif line:
            lines.append(line)
    return lines


def test_client_matrix_lock_pins_its_requirements() -> None:
    pinned = pins("tests/clients/requirements.lock")
    lines = requirement_lines(ROOT / "tests/clients/requirements.txt")
    assert any("openai-agents" in line for line in lines)  # the included examples' list was read
    for line in lines:
        requirement = Requirement(line)
        assert pinned.get(canonicalize_name(requirement.name)) in requirement.specifier, line
