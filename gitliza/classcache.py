"""Compile the methods of dataclasses once, not at every CLI start.

`@dataclass` writes the source of `__init__`, `__repr__`, `__eq__`, `__hash__`, `__setattr__`...
of each class and compiles it with `exec`, at every import: ~0.7 ms per frozen class, ~20 ms of a
CLI start for the model and op records, more than the command itself. The source depends only on
the class definition, so its compiled code can be kept: `install()` gives the `dataclasses` module
an `exec` that looks the source text up in a cache of code objects (saved with marshal next to the
package's bytecode, see gitliza/clifast.py) and compiles only what it has not seen. Executing the
same code object is exactly what `exec(source)` does after compiling it, so classes are identical;
a new or changed class (a new op, a new field) simply misses once. Only gitliza's own classes are
cached (those of other libraries a command happens to import are compiled as usual). Used by the CLI entry point only
(gitliza/__main__.py): the library leaves `dataclasses` alone.
"""
from __future__ import annotations

import builtins
import marshal
from typing import Any

_STEM = "dataclass-code"
_LIMIT = 4000  # entries kept across runs before the cache is pruned to what the last run used
_cache: dict[str, bytes] = {}
_used: set[str] = set()
_dirty = False


def _exec(source: Any, globals_: Any = None, locals_: Any = None, /) -> None:
    global _dirty
    if isinstance(source, str) and str((globals_ or {}).get("__name__", "")).startswith("gitliza"):
        saved = _cache.get(source)
        if saved is None:
            code = compile(source, "<string>", "exec")
            _cache[source] = marshal.dumps(code)
            _dirty = True
        else:
            code = marshal.loads(saved)
        _used.add(source)
        source = code
    builtins.exec(source, globals_, locals_)


def install() -> None:
    """Route dataclasses' compilation through the cache (idempotent)."""
    import atexit
    import dataclasses

    from gitliza import clifast
    if getattr(dataclasses, "exec", None) is _exec:
        return
    saved = clifast.read_cache(_STEM)
    if isinstance(saved, dict):
        _cache.update(saved)  # source -> marshalled code, unmarshalled on first use
    dataclasses.exec = _exec  # type: ignore[attr-defined]  # shadows the builtin in that module
    atexit.register(save)


def save() -> None:
    if not _dirty:
        return
    from gitliza import clifast
    keep = _cache if len(_cache) <= _LIMIT else {k: _cache[k] for k in _used}
    clifast.write_cache(_STEM, keep)

