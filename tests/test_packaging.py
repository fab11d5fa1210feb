"""`pip install '.[test]'` then `pytest` works: every third-party module the tests import (at the top,
inside a test, or through `pytest.importorskip`) comes with gitliza's dependencies and its `test`
extra, followed through the extras it names (`gitliza[mcp,web]`) and the requirements of each
installed distribution. A test that imports a package no extra pulls in fails here, not at a
newcomer's collection."""
from __future__ import annotations

import ast
import re
import sys
import tomllib
from importlib import metadata
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
# The repository's own modules (a test may put benchmarks/ on its path) and one a test writes.
OURS = {"gitliza", "tests", "benchmarks", "conftest", "newcli"} | {
    p.stem for d in ("tests", "benchmarks") for p in (ROOT / d).rglob("*.py")}


def _canon(name: str) -> str:
    return re.sub(r"[-_.]+", "-", name).lower()


def _name(requirement: str) -> tuple[str, set[str]]:
    m = re.match(r"\s*([A-Za-z0-9_.-]+)\s*(?:\[([^\]]*)\])?", requirement)
    assert m, requirement
    return _canon(m.group(1)), {e.strip() for e in (m.group(2) or "").split(",") if e.strip()}


def extra_closure() -> set[str]:
    """The distributions `pip install '.[test]'` brings (gitliza's own extras followed; the rest
    through the installed distributions' metadata)."""
    project = tomllib.loads((ROOT / "pyproject.toml").read_text("utf-8"))["project"]
    extras, me = project["optional-dependencies"], _canon(project["name"])
    todo, seen_extras = list(project["dependencies"]) + list(extras["test"]), {"test"}
    out: set[str] = set()
    while todo:
        name, wanted = _name(todo.pop())
        if name == me:
            for e in wanted - seen_extras:
                seen_extras.add(e)
                todo += extras[e]
            continue
        if name in out:
            continue
        out.add(name)
        try:
            requires = metadata.requires(name) or []
        except metadata.PackageNotFoundError:
            continue
        todo += [r.split(";")[0] for r in requires if "extra ==" not in r]
    assert {"mcp", "starlette", "httpx", "pytest"} <= out, out
    return out


def _imported(path: Path) -> set[str]:
    found = set()
    for node in ast.walk(ast.parse(path.read_text("utf-8"))):
        if isinstance(node, ast.Import):
            found |= {a.name.split(".")[0] for a in node.names}
        elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
            found.add(node.module.split(".")[0])
        elif (isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute)
              and node.func.attr in ("importorskip", "import_module") and node.args
              and isinstance(node.args[0], ast.Constant) and isinstance(node.args[0].value, str)):
            found.add(node.args[0].value.split(".")[0])
    return found


def test_every_module_the_tests_import_comes_with_the_test_extra() -> None:
    closure = extra_closure()
    owners = metadata.packages_distributions()
    missing = []
    for path in sorted((ROOT / "tests").rglob("*.py")):
        for module in sorted(_imported(path) - OURS - set(sys.stdlib_module_names)):
            dists = {_canon(d) for d in owners.get(module, [])}
            if not dists & closure:
                missing.append(f"{path.relative_to(ROOT)}: {module} ({', '.join(dists) or '?'})")
    assert missing == [], missing
