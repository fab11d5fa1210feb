"""Compile the methods of dataclasses once, not at every CLI start.

`@dataclass` writes the source of `__init__`, `__repr__`, `__eq__`, `__hash__`, `__setattr__`...
of each class and compiles it with `exec`, at every import: ~0.7 ms per frozen class, ~20 ms of a
CLI start for the model and op records, more than the command itself. The source depends only on
the class definition, so its compiled code can be kept: `install()` gives the `dataclasses` module
an `exec` that looks the source text up in a cache of code objects (saved with marshal next to the
package's bytecode, see gitliza/cli/caches.py, one file per module so that a command reads only the
modules it imports) and compiles only what it has not seen. Executing the same code object is
exactly what `exec(source)` does after compiling it, so classes are identical; a new or changed
class (a new op, a new field) simply misses once. The file holds the code objects themselves
(marshal writes code), read in one go with the module's recipes (classreplay.py): one file and
one `marshal.loads` per module, not a file more for the recipes and a `loads` per method (~190
for `status`, each with its fixed cost). Only gitliza's own classes are cached (those of
other libraries a command happens to import are compiled as usual). Used by the CLI entry point
only (gitliza/__main__.py): the library leaves `dataclasses` alone.
"""
from __future__ import annotations

import builtins
from types import CodeType
from typing import Any

from gitliza.cli import caches

# v2: compiled without this module's __future__ flags; v3: code objects, and the recipes with them
_STEM = "dataclass-v3"
_LIMIT = 400  # entries kept per module before its file is pruned to what the last run used
_modules: dict[str, dict[str, dict[Any, Any]]] = {}  # module -> {"code": ..., "recipes": ...}
_used: dict[str, set[str]] = {}
_dirty: set[str] = set()  # modules whose file is to be written again (code or recipes)


def of_module(module: str) -> dict[str, dict[Any, Any]]:
    """`module`'s file, read once per process: "code" (source -> compiled code) and "recipes"
    (classreplay.py's, by class key); empty parts when there is none or it is not a dict."""
    found = _modules.get(module)
    if found is None:
        saved = caches.read_cache(f"{_STEM}.{module}")
        parts = saved if isinstance(saved, dict) else {}
        found = _modules[module] = {k: v if isinstance(v, dict) else {}
                                    for k in ("code", "recipes") for v in (parts.get(k),)}
    return found


def _entries(module: str) -> dict[str, Any]:
    return of_module(module)["code"]


def _exec(source: Any, globals_: Any = None, locals_: Any = None, /) -> None:
    module = str((globals_ or {}).get("__name__", ""))
    if isinstance(source, str) and module.startswith("gitliza"):
        entries = _entries(module)
        code = entries.get(source)
        if type(code) is not CodeType:  # not kept, or not code (a damaged file): compiled
            # dont_inherit: this module's `from __future__ import annotations` must not reach the
            # code dataclasses writes (its `__init__` annotations would be the names of its
            # locals, `'_type_x'`, not the field types, and a docstring-less class's __doc__ too)
            code = entries[source] = compile(source, "<string>", "exec", dont_inherit=True)
            _dirty.add(module)
        _used.setdefault(module, set()).add(source)
        source = code
    builtins.exec(source, globals_, locals_)


def install() -> None:
    """Route dataclasses' compilation through the cache (idempotent)."""
    import atexit
    import dataclasses

    from gitliza.cli import classreplay

    if getattr(dataclasses, "exec", None) is _exec:
        return
    dataclasses.exec = _exec  # type: ignore[attr-defined]  # shadows the builtin in that module
    classreplay.keep_in(lambda module: of_module(module)["recipes"], _dirty.add)
    classreplay.install(_exec)  # and the analysis around that code: classreplay.py
    atexit.register(save)


def save() -> None:
    for module in sorted(_dirty):
        parts = _modules[module]
        entries = parts["code"]
        if len(entries) > _LIMIT:
            entries = {k: entries[k] for k in _used.get(module, ()) if k in entries}
        caches.write_cache(f"{_STEM}.{module}", {"code": entries, "recipes": parts["recipes"]})
    _dirty.clear()
