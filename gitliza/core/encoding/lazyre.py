"""Regular expressions compiled on first use, not at import.

`re.compile` parses a pattern in Python (~30 to 150 us each, the cache of `re` is empty in a new
process): the fourteen patterns that `git liza status` imported were ~0.7 ms of every start, and
most are for what a start seldom meets (a TOML blob the tables cache did not hold, a quorum rule,
a machine label, a relative time). `lazy(p)` stands for `re.compile(p)`: the first use of one of
its methods compiles it and keeps the compiled pattern's method on the object, so every later
call is the compiled pattern's own.
"""
from __future__ import annotations

import re
from typing import Any, cast


class _Lazy:
    __slots__ = ("_args", "_compiled", "__dict__")

    def __init__(self, pattern: str, flags: int) -> None:
        self._args = (pattern, flags)
        self._compiled: re.Pattern[str] | None = None

    def __getattr__(self, name: str) -> Any:  # only for what the instance does not hold yet
        if self._compiled is None:
            self._compiled = re.compile(*self._args)
        found = getattr(self._compiled, name)
        setattr(self, name, found)
        return found


def lazy(pattern: str, flags: int = 0) -> re.Pattern[str]:
    return cast("re.Pattern[str]", _Lazy(pattern, flags))
