"""Compile the methods of dataclasses once, not at every CLI start.

`@dataclass` writes the source of `__init__`, `__repr__`, `__eq__`, `__hash__`, `__setattr__`...
of each class and compiles it with `exec`, at every import: ~0.7 ms per frozen class, ~20 ms of a
CLI start for the model and op records, more than the command itself. The source depends only on
the class definition, so its compiled code can be kept: `install()` gives the `dataclasses` module
an `exec` that looks the source text up in a cache of code objects (saved with marshal next to the
package's bytecode, see gitliza/cli/caches.py, one file per module so that a command reads only the
modules it imports) and compiles only what it has not seen. Executing the same code object is
exactly what `exec(source)` does after compiling it, so classes are identical; a new or changed
class (a new op, a new field) simply misses once. Only gitliza's own classes are cached (those of
other libraries a command happens to import are compiled as usual). Used by the CLI entry point
only (gitliza/__main__.py): the library leaves `dataclasses` alone.
"""
from __future__ import annotations

import builtins
import marshal
from typing import Any

from gitliza.cli import caches

_STEM = "dataclass-code-v2"  # v2: compiled without this module's __future__ flags
_LIMIT = 400  # entries kept per module before its file is pruned to what the last run used
_modules: dict[str, dict[str, bytes]] = {}  # module -> source -> marshalled code
_used: dict[str, set[str]] = {}
_dirty: set[str] = set()


def _entries(module: str) -> dict[str, bytes]:
    found: dict[str, bytes] = caches.of_module(_modules, _STEM, module)
    return found


def _exec(source: Any, globals_: Any = None, locals_: Any = None, /) -> None:
    module = str((globals_ or {}).get("__name__", ""))
    if isinstance(source, str) and module.startswith("gitliza"):
        entries = _entries(module)
        saved = entries.get(source)
        if saved is None:
            # dont_inherit: this module's `from __future__ import annotations` must not reach the
            # code dataclasses writes (its `__init__` annotations would be the names of its
            # locals, `'_type_x'`, not the field types, and a docstring-less class's __doc__ too)
            code = compile(source, "<string>", "exec", dont_inherit=True)
            entries[source] = marshal.dumps(code)
            _dirty.add(module)
        else:
            code = marshal.loads(saved)
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
    classreplay.install(_exec)  # and the analysis around that code: classreplay.py
    atexit.register(save)


def save() -> None:
    from gitliza.cli import classreplay
    classreplay.save()
    for module in sorted(_dirty):
        entries = _modules[module]
        if len(entries) > _LIMIT:
            entries = {k: entries[k] for k in _used.get(module, ())}
        caches.write_cache(f"{_STEM}.{module}", entries)
    _dirty.clear()
