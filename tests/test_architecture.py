"""The layers of docs/architecture.md, checked on the code: every import in gitliza/ (at the top of a
module, inside a function, or under TYPE_CHECKING) goes to its own package or to one the map says it
may import, and no modules import each other in a circle. The map is read from the table in
docs/architecture.md, so the page and this check cannot drift apart."""
from __future__ import annotations

import ast
import functools
import re
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
MAP = ROOT / "docs" / "architecture.md"
_ROW = re.compile(r"^\|\s*`([\w.]+)`\s*\|[^|]*\|([^|]*)\|\s*$")


def read_map(text: str) -> dict[str, set[str]]:
    """The layer table: `unit` | what it holds | what it may import (`unit`s, or "nothing")."""
    return {m.group(1): set(re.findall(r"`([\w.]+)`", m.group(2)))
            for m in map(_ROW.match, text.splitlines()) if m}


def modules(pkg: Path) -> dict[str, Path]:
    """Every module of the package at `pkg`, by dotted name."""
    out = {}
    for path in sorted(pkg.rglob("*.py")):
        parts = list(path.relative_to(pkg.parent).with_suffix("").parts)
        out[".".join(parts[:-1] if parts[-1] == "__init__" else parts)] = path
    return out


def imports(name: str, path: Path, known: dict[str, Path]) -> list[tuple[int, str]]:
    """(line, module) for every import of a module of `known` in `path`, wherever it stands."""
    found = []
    for node in ast.walk(ast.parse(path.read_text("utf-8"))):
        if isinstance(node, ast.Import):
            targets = [a.name for a in node.names]
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:
                here = name.split(".") if path.name == "__init__.py" else name.split(".")[:-1]
                base = ".".join(here[:len(here) - node.level + 1] + ([base] if base else []))
            targets = [f"{base}.{a.name}" if f"{base}.{a.name}" in known else base
                       for a in node.names]
        else:
            continue
        for t in targets:
            while t and t not in known:  # `import a.b.c` of a module a.b: an attribute c
                t = t.rpartition(".")[0]
            if t and t != name:
                found.append((node.lineno, t))
    return found


@functools.cache
def graph(pkg: Path) -> dict[str, list[tuple[int, str]]]:
    """Each module of `pkg` and the imports it makes of the others."""
    known = modules(pkg)
    return {name: imports(name, path, known) for name, path in known.items()}


def unit(module: str) -> str:
    """The row of the map a module belongs to: its subpackage, or a top-level module's name; the
    package face (gitliza/__init__.py: the version) goes with errors, the module every layer shares."""
    parts = module.split(".")
    return "errors" if len(parts) == 1 else parts[1]


def violations(pkg: Path, allowed: dict[str, set[str]]) -> list[str]:
    known = modules(pkg)
    out = []
    for name, found in graph(pkg).items():
        where = known[name].relative_to(pkg.parent)
        a = unit(name)
        if a not in allowed:
            out.append(f"{where}: {a} is not in the map")
            continue
        out.extend(f"{where}:{line} imports {target}: {a} may not import {unit(target)}"
                   for line, target in found if unit(target) not in allowed[a] | {a})
    return out


def circles(pkg: Path) -> list[list[str]]:
    """The strongly connected groups of two or more modules (Tarjan), each sorted."""
    edges = {n: sorted({t for _, t in found}) for n, found in graph(pkg).items()}
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    out: list[list[str]] = []

    def visit(v: str) -> None:
        index[v] = low[v] = len(index)
        stack.append(v)
        for w in edges[v]:
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in stack:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            group = []
            while not group or group[-1] != v:
                group.append(stack.pop())
            if len(group) > 1:
                out.append(sorted(group))
    for v in edges:
        if v not in index:
            visit(v)
    return out


def test_the_map_is_a_stack_of_layers() -> None:
    allowed = read_map(MAP.read_text("utf-8"))
    assert {"errors", "core", "git", "services", "cli"} <= set(allowed), allowed
    for a, targets in allowed.items():
        assert targets <= set(allowed), (a, targets - set(allowed))
    # No two rows may import each other, however indirectly: the map itself has no circle.
    seen: dict[str, set[str]] = {}

    def below(a: str, path: tuple[str, ...] = ()) -> set[str]:
        assert a not in path, f"the map has a circle: {' -> '.join(path + (a,))}"
        if a not in seen:
            seen[a] = set().union(*([allowed[a]] + [below(b, path + (a,)) for b in allowed[a]]))
        return seen[a]
    for a in allowed:
        below(a)


def test_every_package_of_gitliza_is_in_the_map() -> None:
    allowed = read_map(MAP.read_text("utf-8"))
    units = {unit(m) for m in modules(ROOT / "gitliza")}
    assert units == set(allowed), (units ^ set(allowed))


def test_no_module_imports_from_a_layer_above_it() -> None:
    assert violations(ROOT / "gitliza", read_map(MAP.read_text("utf-8"))) == []


def test_no_import_circles() -> None:
    assert circles(ROOT / "gitliza") == []


def test_the_checks_catch_a_layer_violation_and_a_circle(tmp_path: Path) -> None:
    pkg = tmp_path / "gitliza"
    for rel, text in {
        "__init__.py": "", "errors.py": "",
        "core/__init__.py": "", "core/a.py": "from gitliza.core import b\n",
        "core/b.py": "def f():\n    from gitliza.core.a import x  # a lazy dodge\n",
        "git/__init__.py": "", "git/store.py": "import gitliza.core.a\nfrom gitliza.errors import E\n",
        "services/__init__.py": "", "services/s.py": "from ..git import store\n",
        "core/up.py": "from typing import TYPE_CHECKING\nif TYPE_CHECKING:\n"
                      "    from gitliza.services.s import S\n",
    }.items():
        (pkg / rel).parent.mkdir(parents=True, exist_ok=True)
        (pkg / rel).write_text(text)
    allowed = read_map("| `errors` | x | nothing |\n| `core` | x | `errors` |\n"
                       "| `git` | x | `core` `errors` |\n| `services` | x | `git` `core` |\n")
    assert violations(pkg, allowed) == [
        "gitliza/core/up.py:3 imports gitliza.services.s: core may not import services"]
    assert circles(pkg) == [["gitliza.core.a", "gitliza.core.b"]]


def size_limit(text: str) -> int:
    """The module size limit docs/architecture.md states ("in **N lines** at most"): one number,
    read here, so that the page and the check cannot disagree."""
    found = re.findall(r"one job in \*\*(\d+) lines\*\* at most", text)
    assert len(found) == 1, found
    return int(found[0])


_EXEMPT = re.compile(r"^\|\s*`(gitliza/[\w/]+\.py)`\s*\|\s*(\d+)\s*\|", re.M)


def exemptions(text: str) -> tuple[dict[str, int], int, int, int]:
    """The page's exempt modules with their ceilings, the highest ceiling allowed, and how many
    ceilings may be above which number ("No ceiling is above **700 lines**, and at most **4** are
    above 450")."""
    bounds = re.findall(r"No ceiling is above \*\*(\d+) lines\*\*, and at most \*\*(\d+)\*\* are\s+"
                        r"above (\d+)", text)
    assert len(bounds) == 1, bounds
    top, count, over = map(int, bounds[0])
    return {m.group(1): int(m.group(2)) for m in _EXEMPT.finditer(text)}, top, count, over


def long_module_problems(root: Path, text: str) -> list[str]:
    limit = size_limit(text)
    listed, top, count, over = exemptions(text)
    out = [f"{path}: a ceiling of {n} lines is above {top}" for path, n in listed.items() if n > top]
    if sum(n > over for n in listed.values()) > count:
        out.append(f"more than {count} ceilings above {over}: {sorted(listed)}")
    found = modules(root / "gitliza").values()
    out += [f"{path}: listed but no such module"
            for path in sorted(listed.keys() - {str(p.relative_to(root)) for p in found})]
    for path in found:
        rel, text_ = str(path.relative_to(root)), path.read_text("utf-8")
        lines = text_.count("\n")
        ceiling = listed.get(rel)
        if ceiling is None and lines > limit:
            out.append(f"{rel}: {lines} lines, over {limit} and not listed")
        elif ceiling is not None and lines > ceiling:
            out.append(f"{rel}: {lines} lines, over its ceiling of {ceiling}")
        elif ceiling is not None and lines <= limit:
            out.append(f"{rel}: {lines} lines, no longer over {limit}: its line is stale")
        elif ceiling is not None and "Not split" not in (ast.get_docstring(ast.parse(text_)) or ""):
            out.append(f"{rel}: listed, but its docstring does not say why it is not split")
    return out


def test_a_long_module_is_listed_with_its_own_ceiling() -> None:
    """One job per module, the page's limit at most; a longer one is in the page's table with its
    own ceiling (none above the page's top, few above its second bound) and says why in its
    docstring ("Not split: ...")."""
    assert long_module_problems(ROOT, MAP.read_text("utf-8")) == []


def test_the_ceiling_check_catches_growth_staleness_and_a_loose_table(tmp_path: Path) -> None:
    pkg = tmp_path / "gitliza"
    pkg.mkdir()
    body = "x = 1\n"
    (pkg / "__init__.py").write_text("")
    (pkg / "big.py").write_text('"""Not split: one idea."""\n' + body * 30)
    (pkg / "grown.py").write_text('"""Not split: one idea."""\n' + body * 30)
    (pkg / "shrunk.py").write_text('"""Not split: one idea."""\n' + body * 5)
    (pkg / "silent.py").write_text('"""One idea."""\n' + body * 30)
    (pkg / "unlisted.py").write_text(body * 30)
    page = ("one job in **10 lines** at most. No ceiling is above **40 lines**, and at most "
            "**1** are\nabove 20.\n\n| exempt module | at most | why |\n|---|---|---|\n"
            "| `gitliza/big.py` | 35 | x |\n| `gitliza/grown.py` | 25 | x |\n"
            "| `gitliza/shrunk.py` | 15 | x |\n| `gitliza/silent.py` | 45 | x |\n"
            "| `gitliza/gone.py` | 15 | x |\n")
    assert long_module_problems(tmp_path, page) == [
        "gitliza/silent.py: a ceiling of 45 lines is above 40",
        "more than 1 ceilings above 20: ['gitliza/big.py', 'gitliza/gone.py', 'gitliza/grown.py', "
        "'gitliza/shrunk.py', 'gitliza/silent.py']",
        "gitliza/gone.py: listed but no such module",
        "gitliza/grown.py: 31 lines, over its ceiling of 25",
        "gitliza/shrunk.py: 6 lines, no longer over 10: its line is stale",
        "gitliza/silent.py: listed, but its docstring does not say why it is not split",
        "gitliza/unlisted.py: 30 lines, over 10 and not listed"]


def test_the_page_names_every_module() -> None:
    """docs/architecture.md is the map a newcomer reads: every module of gitliza/ is named there,
    in the tree (its name, with or without .py) or as `path/name.py` in the text (the op modules,
    described with the core; cli/commands/*.py as a group)."""
    text = MAP.read_text("utf-8")
    start = text.index("```\ngitliza/")
    tree = text[start:text.index("```", start + 4)]
    missing = []
    for name, path in modules(ROOT / "gitliza").items():
        stem = path.stem
        if stem == "__init__" or path.parent.name == "commands":
            continue
        if not (re.search(rf"(?<![\w/]){re.escape(stem)}(\.py)?(?![\w])", tree)
                or re.search(rf"`(\w+/)*{re.escape(stem)}\.py`", text)):
            missing.append(str(path.relative_to(ROOT)))
    assert missing == []


CORE_LOOSE_LIMIT = 20  # modules at the root of gitliza/core/; the rest live in its rooms


def name_clashes(pkg: Path) -> list[str]:
    """The modules of core/ (its rooms included) named like a module or package of another layer:
    `usage` in core/ and in team/ made every reader ask which one. Two kinds of name are the
    vocabulary of their folder and are left out: the op modules (core/ops/, one per op subject, read
    as `ops.review`) and the command modules (cli/commands/, one per `git liza` command)."""
    def name(path: Path) -> str:
        return path.parent.name if path.name == "__init__.py" else path.stem
    core: dict[str, Path] = {}
    other: dict[str, list[Path]] = {}
    for path in modules(pkg).values():
        rel = path.relative_to(pkg).parts
        if len(rel) < 2 or path == pkg / "core" / "__init__.py":
            continue
        if rel[0] == "core" and rel[1] != "ops":
            core[name(path)] = path
        elif rel[0] != "core" and rel[:2] != ("cli", "commands"):
            other.setdefault(name(path), []).append(path)
    def rel(path: Path) -> str:
        return str(path.relative_to(pkg.parent))
    return sorted(f"{rel(core[n])} and {', '.join(map(rel, other[n]))}"
                  for n in core.keys() & other.keys())


def test_core_has_rooms_and_no_name_of_another_layer() -> None:
    core = ROOT / "gitliza" / "core"
    loose = sorted(p.name for p in core.glob("*.py") if p.name != "__init__.py")
    assert len(loose) <= CORE_LOOSE_LIMIT, loose
    assert name_clashes(ROOT / "gitliza") == []


def test_the_clash_check_catches_a_core_module_named_like_a_team_one(tmp_path: Path) -> None:
    pkg = tmp_path / "gitliza"
    for rel in ("core/__init__.py", "core/agents/__init__.py", "core/agents/usage.py",
                "core/ops/__init__.py", "core/ops/work.py", "team/__init__.py", "team/usage.py",
                "team/work.py", "cli/__init__.py", "cli/commands/__init__.py",
                "cli/commands/agents.py"):
        (pkg / rel).parent.mkdir(parents=True, exist_ok=True)
        (pkg / rel).write_text("")
    assert name_clashes(pkg) == ["gitliza/core/agents/usage.py and gitliza/team/usage.py"]


TYPER_HOME = "gitliza/cli/app/"  # the command table: the one folder that imports typer (or click)


def test_only_the_command_table_imports_typer() -> None:
    """typer costs ~25 ms a start (docs/performance.md): the fast path runs commands without it,
    which holds only while the command table's folder is the one place that imports it."""
    found = []
    for path in modules(ROOT / "gitliza").values():
        rel = str(path.relative_to(ROOT))
        for node in ast.walk(ast.parse(path.read_text("utf-8"))):
            names = ([a.name for a in node.names] if isinstance(node, ast.Import)
                     else [node.module or ""] if isinstance(node, ast.ImportFrom) and not node.level
                     else [])
            typer = any(n.split(".")[0] in ("typer", "click") for n in names)
            if typer and not rel.startswith(TYPER_HOME):
                found.append(f"{rel}:{node.lineno}")
    assert found == []
