"""Looking a path up in a pygit2 tree without keeping the path for the life of the process.

pygit2 (1.21 and before) keeps one reference to every string it is given as a tree path
(`tree[path]`, `path in tree`, `tree / path`: `pgit_borrow_fsdefault` never releases what
`PyOS_FSPath` returned), so every path string a process ever looked up stays in memory. Interned,
as the board's reads did first, a path is one string however often it is looked up, but still one
per entity that ever was: a task's live and archived paths, each run's usage record, each merge's
script path (~400 bytes per task, for ever, in every supervisor).

In a long-lived process (git/reflookup.py's `install`, which has ctypes) each path goes in as a
copy of its own, and the reference pygit2 kept on that copy, if it kept one, is given back, so the
copy is freed when the lookup returns. The count is compared, not assumed: a pygit2 that does not
keep the path is left alone. A one-shot command looks paths up directly (what it keeps goes when it
exits) and never imports ctypes for it.
"""
from __future__ import annotations

import sys
from typing import Callable, TypeVar

import pygit2

T = TypeVar("T")

# Set by reflookup.install: gives back one reference to a string (ctypes' Py_DecRef).
give_back: Callable[[str], None] | None = None


def entry(tree: pygit2.Tree, path: str) -> pygit2.Object:
    """`tree[path]`: the object at `path`; KeyError when there is none."""
    return _look(tree.__getitem__, path)


def has(tree: pygit2.Tree, path: str) -> bool:
    """`path in tree`."""
    return bool(_look(tree.__contains__, path))


def _look(call: Callable[[str], T], path: str) -> T:
    release = give_back
    if release is None or len(path) < 2:
        return call(path)
    own = path[:1] + path[1:]  # a new string, which only this frame refers to
    held = sys.getrefcount(own)
    try:
        return call(own)
    finally:
        if sys.getrefcount(own) > held:
            release(own)
