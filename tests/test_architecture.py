"""The layers of docs/architecture.md, checked on the code: every import in gitliza/ (at the top of a
module, inside a function, or under TYPE_CHECKING) goes to its own package or to one the map says it
may import, and no modules import each other in a circle. The map is read from the table in
docs/architecture.md, so the page and this check cannot drift apart.

Circles are counted as the imports run: an import inside a function counts (it runs when the
function does), one under `if TYPE_CHECKING:` does not (it never runs), and importing `a.b.c` runs
`a/b/__init__.py` too (unless the importer lives in `a.b`, whose face has run already). The rooms of
services/ (each sub-folder, each loose module) stack on the floors of the page's floor table.

`python3 tests/test_architecture.py` prints the measures: circles among modules, among the rooms of
services/, each room's band of module floors, the imports inside functions.
"""
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


def _typing_only(node: ast.AST) -> bool:
    """`if TYPE_CHECKING:` (or `typing.TYPE_CHECKING`): a block that never runs."""
    return isinstance(node, ast.If) and (
        isinstance(node.test, ast.Name) and node.test.id == "TYPE_CHECKING"
        or isinstance(node.test, ast.Attribute) and node.test.attr == "TYPE_CHECKING")


def _import_nodes(tree: ast.AST, run_time: bool) -> list[ast.Import | ast.ImportFrom]:
    """Every import statement of `tree`, wherever it stands; with `run_time`, not those under
    `if TYPE_CHECKING:` (its `else:` runs)."""
    out: list[ast.Import | ast.ImportFrom] = []
    todo = [tree]
    while todo:
        node = todo.pop()
        if isinstance(node, (ast.Import, ast.ImportFrom)):
            out.append(node)
        if run_time and _typing_only(node):
            assert isinstance(node, ast.If)
            todo.extend(node.orelse)
            continue
        todo.extend(ast.iter_child_nodes(node))
    return sorted(out, key=lambda n: (n.lineno, n.col_offset))


def imports(name: str, path: Path, known: dict[str, Path], *,
            run_time: bool = False) -> list[tuple[int, str]]:
    """(line, module) for every import of a module of `known` in `path`, wherever it stands (with
    `run_time`, not under TYPE_CHECKING)."""
    found = []
    for node in _import_nodes(ast.parse(path.read_text("utf-8")), run_time):
        if isinstance(node, ast.Import):
            targets = [a.name for a in node.names]
        else:
            base = node.module or ""
            if node.level:
                here = name.split(".") if path.name == "__init__.py" else name.split(".")[:-1]
                base = ".".join(here[:len(here) - node.level + 1] + ([base] if base else []))
            targets = [f"{base}.{a.name}" if f"{base}.{a.name}" in known else base
                       for a in node.names]
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


def _packages(module: str) -> list[str]:
    """The packages above `module`, nearest first: a.b.c -> a.b, a."""
    parts = module.split(".")
    return [".".join(parts[:i]) for i in range(len(parts) - 1, 0, -1)]


@functools.cache
def run_graph(pkg: Path) -> dict[str, dict[str, int]]:
    """What importing each module runs of the others, with the first line that makes it so: each
    module it imports (TYPE_CHECKING aside) and their packages' faces (their `__init__.py`), those
    of the importer's own packages aside (they have started to run before it)."""
    known = modules(pkg)
    out: dict[str, dict[str, int]] = {}
    for name, path in known.items():
        mine = set(_packages(name))
        edges: dict[str, int] = {}
        for line, target in imports(name, path, known, run_time=True):
            for t in [target] + [p for p in _packages(target) if p not in mine]:
                if t != name and t in known:
                    edges.setdefault(t, line)
        out[name] = edges
    return out


def strongly_connected(edges: dict[str, list[str]]) -> list[list[str]]:
    """The strongly connected groups of two or more nodes (Tarjan, iterative), each sorted."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on: set[str] = set()
    out: list[list[str]] = []
    for root in edges:
        if root in index:
            continue
        work = [(root, iter(edges[root]))]
        index[root] = low[root] = len(index)
        stack.append(root)
        on.add(root)
        while work:
            v, rest = work[-1]
            w = next(rest, None)
            if w is not None:
                if w not in index:
                    index[w] = low[w] = len(index)
                    stack.append(w)
                    on.add(w)
                    work.append((w, iter(edges.get(w, []))))
                elif w in on:
                    low[v] = min(low[v], index[w])
                continue
            work.pop()
            if work:
                low[work[-1][0]] = min(low[work[-1][0]], low[v])
            if low[v] == index[v]:
                group = []
                while not group or group[-1] != v:
                    group.append(stack.pop())
                    on.discard(group[-1])
                if len(group) > 1:
                    out.append(sorted(group))
    return sorted(out)


def circles(pkg: Path) -> list[list[str]]:
    """The modules that import each other in a circle, as the imports run (run_graph)."""
    return strongly_connected({n: sorted(e) for n, e in run_graph(pkg).items()})


def room(module: str, known: dict[str, Path]) -> str | None:
    """The room of services/ a module is in: its sub-folder (`sync/`) or, loose, itself
    (`api.py`); None outside services/ (and for the face of services/ itself)."""
    parts = module.split(".")
    if len(parts) < 3 or parts[1] != "services":
        return None
    folder = known[".".join(parts[:3])].name == "__init__.py"
    return parts[2] + ("/" if folder else ".py")


def room_graph(pkg: Path) -> dict[str, dict[str, tuple[str, int, str]]]:
    """The rooms of services/ and the rooms each imports (as the imports run), with one import
    that makes it so: (module, line, module imported)."""
    known = modules(pkg)
    out: dict[str, dict[str, tuple[str, int, str]]] = {}
    for name, edges in run_graph(pkg).items():
        a = room(name, known)
        if a is None:
            continue
        out.setdefault(a, {})
        for t, line in edges.items():
            b = room(t, known)
            if b is not None and b != a:
                out[a].setdefault(b, (name, line, t))
    return out


def room_circles(pkg: Path) -> list[list[str]]:
    return strongly_connected({a: sorted(e) for a, e in room_graph(pkg).items()})


_FLOOR = re.compile(r"^\|\s*(\d+)\s*\|([^|]*)\|")


def read_floors(text: str) -> dict[str, int]:
    """The floor table of services/ on the page (rows `| N | `room` `room` ... | why |` under
    "### The floors of services/"): each room and its floor, 1 the lowest."""
    start = text.index("### The floors of services/")
    end = text.find("\n#", start + 4)
    floors: dict[str, int] = {}
    for m in map(_FLOOR.match, text[start:end if end > 0 else None].splitlines()):
        if m:
            for r in re.findall(r"`([\w./]+)`", m.group(2)):
                assert r not in floors, f"{r} is on two floors of the page"
                floors[r] = int(m.group(1))
    return floors


def floor_violations(pkg: Path, floors: dict[str, int]) -> list[str]:
    """Each room imports only rooms on lower floors than its own (the page's table)."""
    out = []
    for a, edges in sorted(room_graph(pkg).items()):
        if a not in floors:
            out.append(f"services/{a} is on no floor of the page")
            continue
        for b, (mod, line, target) in sorted(edges.items()):
            if b in floors and floors[b] >= floors[a]:
                out.append(f"services/{a} (floor {floors[a]}) imports services/{b} (floor "
                           f"{floors[b]}): {mod}:{line} imports {target}")
    out.extend(f"the page's floor table names services/{r}, which is no room"
               for r in sorted(set(floors) - set(room_graph(pkg))))
    return out


def module_floors(pkg: Path) -> dict[str, int]:
    """Each module of services/ on its floor: 1 when it imports no other module of services/ (as
    the imports run), else one above the highest it imports. Defined when there is no circle."""
    known = modules(pkg)
    edges = {n: [t for t in e if room(t, known)] for n, e in run_graph(pkg).items()
             if room(n, known)}
    floor: dict[str, int] = {}

    def of(n: str, seen: tuple[str, ...] = ()) -> int:
        if n not in floor:
            if n in seen:
                return 0
            floor[n] = 1 + max((of(t, seen + (n,)) for t in edges[n]), default=0)
        return floor[n]
    for n in edges:
        of(n)
    return floor


def imports_in_functions(pkg: Path) -> tuple[int, int]:
    """How many import statements stand inside a function (all; of gitliza's own modules)."""
    every = own = 0
    for path in modules(pkg).values():
        tree = ast.parse(path.read_text("utf-8"))
        inside: set[int] = set()
        for f in ast.walk(tree):
            if isinstance(f, (ast.FunctionDef, ast.AsyncFunctionDef)):
                inside.update(id(n) for n in ast.walk(f) if isinstance(n, (ast.Import, ast.ImportFrom)))
        for n in ast.walk(tree):
            if id(n) in inside:
                assert isinstance(n, (ast.Import, ast.ImportFrom))
                every += 1
                names = [n.module or ""] if isinstance(n, ast.ImportFrom) else [a.name for a in n.names]
                own += bool(getattr(n, "level", 0)) or any(m.split(".")[0] == pkg.name for m in names)
    return every, own


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


def test_no_circle_among_the_rooms_of_services() -> None:
    """Folded to its rooms (each sub-folder, each loose module), services/ has no circle: no
    import chain leaves a room and comes back to it."""
    assert room_circles(ROOT / "gitliza") == []


def test_each_room_of_services_imports_only_rooms_on_lower_floors() -> None:
    """The page's floor table holds every room of services/ once, and a room imports (as the
    imports run) only rooms on lower floors: each folder is one floor, its own modules stacked
    inside it, and nothing outside it stands between two of them."""
    assert floor_violations(ROOT / "gitliza", read_floors(MAP.read_text("utf-8"))) == []


def face_code(path: Path) -> list[str]:
    """What a package face (`__init__.py`) holds besides its docstring, its imports (re-exports)
    and `__all__`: the statements that run for every importer of any module of its folder."""
    body = ast.parse(path.read_text("utf-8")).body
    if body and isinstance(body[0], ast.Expr) and isinstance(body[0].value, ast.Constant):
        body = body[1:]
    return [f"{path.name}:{n.lineno}" for n in body
            if not isinstance(n, (ast.Import, ast.ImportFrom)) and not (
                isinstance(n, ast.Assign) and [ast.unparse(t) for t in n.targets] == ["__all__"])]


def test_a_face_of_services_is_a_docstring_and_re_exports() -> None:
    """Code in a package face runs for every importer of its folder: in services/ it closed the
    circles of round 2. It goes to a module named for its job."""
    found = {str(path.relative_to(ROOT)): code for name, path in modules(ROOT / "gitliza").items()
             if path.name == "__init__.py" and name.startswith("gitliza.services")
             and (code := face_code(path))}
    assert found == {}


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


def test_the_checks_catch_a_circle_through_a_package_face_and_among_rooms(tmp_path: Path) -> None:
    """services/low/leaf.py imports nothing of services/, but its folder's face imports the api
    (inside a function: it counts), and the api imports the leaf: importing the leaf runs the
    face, so the api, the face and the leaf's folder are one circle; a TYPE_CHECKING import is
    no circle; the floor table names the room that stands too low."""
    pkg = tmp_path / "gitliza"
    for rel, text in {
        "__init__.py": "", "services/__init__.py": "",
        "services/api.py": "from gitliza.services.low import leaf\n",
        "services/low/__init__.py": "def renew():\n    from gitliza.services import api\n",
        "services/low/leaf.py": "from typing import TYPE_CHECKING\nif TYPE_CHECKING:\n"
                                "    from gitliza.services.top import T\nelse:\n    import os\n",
        "services/top.py": "from gitliza.services.low.leaf import x\n",
    }.items():
        (pkg / rel).parent.mkdir(parents=True, exist_ok=True)
        (pkg / rel).write_text(text)
    assert circles(pkg) == [["gitliza.services.api", "gitliza.services.low"]]
    assert face_code(pkg / "services/low/__init__.py") == ["__init__.py:1"]
    assert room_circles(pkg) == [["api.py", "low/"]]
    assert floor_violations(pkg, {"low/": 1, "api.py": 2, "top.py": 3, "gone/": 4}) == [
        "services/low/ (floor 1) imports services/api.py (floor 2): "
        "gitliza.services.low:2 imports gitliza.services.api",
        "the page's floor table names services/gone/, which is no room"]
    assert floor_violations(pkg, {"low/": 1, "api.py": 2})[-1] == \
        "services/top.py is on no floor of the page"
    # The face moved to a module of its own (what docs/architecture.md asks): no circle.
    (pkg / "services/low/__init__.py").write_text('"""A docstring."""\n')
    (pkg / "services/renew.py").write_text("def renew():\n    from gitliza.services import api\n")
    run_graph.cache_clear()
    assert circles(pkg) == [] and room_circles(pkg) == []
    assert face_code(pkg / "services/low/__init__.py") == []
    assert floor_violations(pkg, {"low/": 1, "api.py": 2, "top.py": 3, "renew.py": 3}) == []
    assert module_floors(pkg)["gitliza.services.renew"] == 3


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


def report(pkg: Path = ROOT / "gitliza") -> None:
    """The measures, printed: `python3 tests/test_architecture.py`."""
    found = circles(pkg)
    print(f"circles among modules: {len(found)}")
    for c in found:
        print(f"  {len(c)}: " + " ".join(m.removeprefix("gitliza.") for m in c))
    rooms = room_circles(pkg)
    print(f"circles among the rooms of services/: {len(rooms)}")
    for c in rooms:
        print(f"  {len(c)}: " + " ".join(c))
    known = modules(pkg)
    bands: dict[str, list[int]] = {}
    for m, f in module_floors(pkg).items():
        r = room(m, known)
        assert r is not None
        bands.setdefault(r, []).append(f)
    print("the rooms of services/, by the module floors they span:")
    for r, fs in sorted(bands.items(), key=lambda kv: (min(kv[1]), max(kv[1]), kv[0])):
        print(f"  {min(fs)}-{max(fs)}  {r}")
    every, own = imports_in_functions(pkg)
    print(f"imports inside functions: {every} ({own} of gitliza's own modules)")


if __name__ == "__main__":
    report()
