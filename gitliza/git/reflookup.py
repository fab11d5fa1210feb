"""A workaround for pygit2's reference lookup, which keeps the name it is given.

`Repository.lookup_reference(name)` (pygit2 1.21; `references[name]`, `references.get`, `name in
references` and `references.delete` all go through it) takes a reference to `name` and never gives
it back: every name a lookup was given stays in memory for the life of the process. A long-lived
process looks refs up by names it builds (`f"refs/heads/{branch}"`, a task's branch, an attic
ref): a supervisor kept one string per lookup, thousands per task (20,000 lookups of a
built name: 20,000 strings kept, ~1.5 MB). Interning the names (as liveref.py did first) keeps one
string per distinct name instead, still one per task that ever was.

The lookup is wrapped once for every repository (installed by the long-lived processes through
git/longlived.py: every ref watcher and the MCP server; a one-shot command skips ctypes' import): the name
goes in as a copy of its own, and the reference the call kept on that copy, if it kept one, is
given back, so the copy is freed as soon as the lookup returns. A pygit2 that does not keep the
name is left alone (the count is compared, not assumed); nothing but the name is touched, and
nothing holds the copy after the call (pygit2 encodes it to a C string it frees before it returns).
"""
from __future__ import annotations

import ctypes
import sys
from typing import Any

import pygit2.repository

from gitliza.git import treepath

_LOOKUP = pygit2.repository.BaseRepository.lookup_reference  # pygit2's own (C)
_DECREF = ctypes.pythonapi.Py_DecRef
_DECREF.argtypes = [ctypes.py_object]
_DECREF.restype = None


def lookup_reference(repo: Any, name: Any) -> Any:
    if type(name) is not str or len(name) < 2:
        return _LOOKUP(repo, name)
    own = name[:1] + name[1:]  # a new string, which only this frame refers to
    held = sys.getrefcount(own)
    try:
        return _LOOKUP(repo, own)
    finally:
        if sys.getrefcount(own) > held:
            _DECREF(own)


def install() -> None:
    """Route every repository's reference lookups through `lookup_reference` (idempotent; the
    class's method is looked up at each call, so repositories opened before are covered too)."""
    pygit2.repository.BaseRepository.lookup_reference = lookup_reference  # type: ignore[method-assign]
    treepath.give_back = _DECREF  # tree paths: the same leak, the same remedy (treepath.py)
