"""The CLI's caches on disk: the fast path's command spec (gitliza/cli/fastpath.py) and the compiled
dataclass methods (gitliza/cli/classcache.py), marshalled next to the package's bytecode, else (a
read-only install) in the user's cache directory. Either cache only saves time: a missing or
unwritable one is rebuilt or skipped."""
from __future__ import annotations

import os
import sys
from typing import Any

from gitliza.atomic import read_marshal, write_marshal

_PKG = os.path.dirname(os.path.abspath(__file__))


def cache_dirs() -> list[str]:
    """Where the caches live, first choice first."""
    user = os.environ.get("XDG_CACHE_HOME") or os.path.join(os.path.expanduser("~"), ".cache")
    return [os.path.join(_PKG, "__pycache__"), os.path.join(user, "gitliza")]


def cache_name(stem: str) -> str:
    return f"{stem}.{sys.implementation.cache_tag}.marshal"


def read_cache(stem: str) -> Any:
    for d in cache_dirs():
        found = read_marshal(os.path.join(d, cache_name(stem)))
        if found is not None:
            return found
    return None


def write_cache(stem: str, data: Any) -> None:
    """Silently nowhere if no cache directory is writable: the cache only saves time."""
    for d in cache_dirs():
        try:
            os.makedirs(d, exist_ok=True)
        except OSError:
            continue
        if write_marshal(os.path.join(d, cache_name(stem)), data):
            return

