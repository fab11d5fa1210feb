"""cli/classreplay.py builds gitliza's dataclasses from a kept recipe instead of dataclasses'
analysis: every class so built must be the class `@dataclass` builds. Each dataclass of gitliza
is described (fields and their flags, params, methods' code, names, qualnames, closures, slots,
match args) in three fresh interpreters: without the CLI's caches, with them on an empty cache
(recipes recorded), and with them again (the classes rebuilt from the recipes)."""
from __future__ import annotations

import json
import marshal
import subprocess
import sys
from pathlib import Path

DESCRIBE = r'''
import dataclasses, importlib, json, pkgutil, sys, types
mode, cache = sys.argv[1], sys.argv[2]
import gitliza
from gitliza.cli import caches, classcache, classreplay
caches.cache_dirs = lambda: [cache]
built = []
if mode != "plain":
    classcache.install()
    build = classreplay._build
    classreplay._build = lambda *a: built.append(a[0].__qualname__) or build(*a)
for m in pkgutil.walk_packages(gitliza.__path__, "gitliza."):
    if ".app" in m.name or m.name.endswith("__main__"):
        continue  # typer's app is not a dataclass module; __main__ runs the CLI
    try:
        importlib.import_module(m.name)
    except Exception:  # an optional dependency: the same in the three runs
        pass

def code(c):
    return [c.co_code.hex(), c.co_names, c.co_varnames, c.co_freevars,
            [code(k) if isinstance(k, types.CodeType) else repr(k) for k in c.co_consts]]

def fn(f):
    out = [f.__name__, f.__qualname__, repr(f.__defaults__), repr(f.__kwdefaults__),
           code(f.__code__), sorted(f.__annotations__.items())]
    for cell in f.__closure__ or ():
        v = cell.cell_contents
        out.append(v.__qualname__ if isinstance(v, type) else repr(v))
    if hasattr(f, "__wrapped__"):
        out.append(fn(f.__wrapped__))
    return out

def value(v):
    return fn(v) if isinstance(v, types.FunctionType) else repr(v) if not isinstance(
        v, types.MemberDescriptorType) else "slot"

found = {}
for name, mod in sorted(sys.modules.items()):
    if not name.startswith("gitliza") or mod is None:
        continue
    for obj in list(vars(mod).values()):
        if isinstance(obj, type) and dataclasses.is_dataclass(obj) and obj.__module__ == name:
            fields = [[f.name, f.type, repr(f.default), repr(f.default_factory), f.init, f.repr,
                       f.hash, f.compare, repr(dict(f.metadata)), repr(f.kw_only),
                       repr(f._field_type)] for f in obj.__dataclass_fields__.values()]
            found[f"{name}.{obj.__qualname__}"] = [
                list(obj.__dict__), {k: value(v) for k, v in obj.__dict__.items()
                                     if k not in ("__dataclass_fields__",)}, fields,
                [b.__qualname__ for b in obj.__mro__], obj.__doc__]
import re
print(re.sub(r" at 0x[0-9a-f]+", "", json.dumps({"classes": found, "built": built}, default=repr)))
'''


def describe(mode: str, cache: Path) -> dict[str, object]:
    r = subprocess.run([sys.executable, "-c", DESCRIBE, mode, str(cache)], capture_output=True,
                       text=True, timeout=600)
    assert r.returncode == 0, r.stderr[-3000:]
    found: dict[str, object] = json.loads(r.stdout)
    return found


def test_every_class_rebuilt_from_its_recipe_is_the_class_dataclass_builds(tmp_path: Path) -> None:
    plain = describe("plain", tmp_path)
    recorded = describe("cached", tmp_path)
    replayed = describe("cached", tmp_path)
    assert plain["built"] == [] and recorded["built"] == []  # nothing kept yet
    assert len(plain["classes"]) > 100  # type: ignore[arg-type]
    assert len(replayed["built"]) > 60, replayed["built"]  # type: ignore[arg-type]  # the model's entities and more
    for run in (recorded, replayed):
        assert run["classes"].keys() == plain["classes"].keys()  # type: ignore[attr-defined]
        differ = [k for k, v in plain["classes"].items()  # type: ignore[attr-defined]
                  if run["classes"][k] != v]  # type: ignore[index]
        assert not differ, differ[:5]


def test_a_damaged_recipe_is_ignored(tmp_path: Path) -> None:
    plain = describe("plain", tmp_path)
    describe("cached", tmp_path)
    files = list(tmp_path.glob("dataclass-v3.*"))
    assert files
    for f in files:  # each recipe replaced by one of the wrong shape (the code kept as it is)
        saved = marshal.loads(f.read_bytes())
        saved["recipes"] = {k: (("x",), None) for k in saved["recipes"]}
        f.write_bytes(marshal.dumps(saved))
    damaged = describe("cached", tmp_path)
    assert damaged["built"] == [] and damaged["classes"] == plain["classes"]
    again = describe("cached", tmp_path)  # the recipes were kept again
    assert len(again["built"]) > 60 and again["classes"] == plain["classes"]  # type: ignore[arg-type]
