"""requirements.lock is the set the suite runs on (dev.py and .ci/run install exactly it): it must
agree with pyproject.toml, pin every package it names with hashes, and constraints.txt must carry
the same versions. A dependency added to pyproject.toml without `python3 dev.py lock` fails here
(and dev.py refuses to install), instead of passing on one machine and failing on the next."""
from __future__ import annotations

import importlib.util
import re
import tomllib
from pathlib import Path
from types import ModuleType

ROOT = Path(__file__).resolve().parent.parent


def _dev() -> ModuleType:
    spec = importlib.util.spec_from_file_location("gitliza_dev", ROOT / "dev.py")
    assert spec and spec.loader
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def _canon(name: str) -> str:
    return re.sub(r"[-_.]+", "-", name).lower()


def _entries(text: str) -> dict[str, list[str]]:
    """name -> the full lines (with continuations) of each pin of that name."""
    out: dict[str, list[str]] = {}
    for block in re.split(r"\n(?=\S)", text):
        if block.startswith("#") or "==" not in block:
            continue
        out.setdefault(_canon(block.split("==")[0]), []).append(block)
    return out


def test_the_lock_was_made_from_this_pyproject() -> None:
    dev = _dev()
    assert dev._lock_digest() == dev.deps_digest(), (
        "requirements.lock is stale: run `python3 dev.py lock` and commit it")


def test_every_dependency_is_pinned_with_hashes() -> None:
    lock = _entries((ROOT / "requirements.lock").read_text())
    project = tomllib.loads((ROOT / "pyproject.toml").read_text())
    names = list(project["project"]["dependencies"])
    for extra in project["project"]["optional-dependencies"].values():
        names += extra
    names += project["build-system"]["requires"]
    for requirement in names:
        name = _canon(re.split(r"[<>=!~\[; ]", requirement, maxsplit=1)[0])
        if name == _canon(project["project"]["name"]):
            continue  # an extra that pulls in others (test: mcp, web), pinned through them
        assert name in lock, f"{name} is not in requirements.lock"
    for name, blocks in lock.items():
        for block in blocks:
            assert re.search(r"==[^\s;]+", block), block
            assert "--hash=sha256:" in block, f"{name} is pinned without a hash"


def test_constraints_carry_the_locked_versions() -> None:
    lock = _entries((ROOT / "requirements.lock").read_text())
    constraints = _entries((ROOT / "constraints.txt").read_text())
    assert lock.keys() == constraints.keys()
    for name, blocks in lock.items():
        versions = [re.search(r"==([^\s;\\]+)", b).group(1) for b in blocks]  # type: ignore[union-attr]
        assert versions == [re.search(r"==([^\s;\\]+)", c).group(1)  # type: ignore[union-attr]
                            for c in constraints[name]], name
        assert all("--hash" not in c for c in constraints[name])
