"""A cache for a long-lived process: bounded, and keeping what is in use.

The caches of immutable things (entities decoded by blob id, trees parsed by tree id) used to be
one dict emptied when full. In a process that lives (a supervisor, the MCP server, a program on the
library API) every transition adds a few entries that are never read again (the versions an op
replaced), so such a dict grew for tens of thousands of transitions (tens of MB) before its first
emptying: memory that grew with run time. Two generations instead: entries go into the young one;
when it is full it becomes the old one and the former old one is dropped; an entry found in the old
one moves back to the young. What a process keeps reading stays; what it stopped reading is gone
after two generations; and the size stays within two generations from early on.
"""
from __future__ import annotations

from typing import Callable, Generic, Hashable, TypeVar

K = TypeVar("K", bound=Hashable)
V = TypeVar("V")


class Generations(Generic[K, V]):
    def __init__(self, size: int) -> None:
        self.size = size  # entries per generation
        self._young: dict[K, V] = {}
        self._old: dict[K, V] = {}

    def get(self, key: K) -> V | None:
        found = self._young.get(key)
        if found is None:
            found = self._old.pop(key, None)
            if found is not None:
                self[key] = found
        return found

    def __setitem__(self, key: K, value: V) -> None:
        if len(self._young) >= self.size:
            self._old, self._young = self._young, {}
        self._young[key] = value

    def __contains__(self, key: object) -> bool:
        return key in self._young or key in self._old

    def __len__(self) -> int:
        return len(self._young) + len(self._old)

    def discard(self, key: K) -> None:
        self._young.pop(key, None)
        self._old.pop(key, None)

    def retain(self, keep: Callable[[K], bool]) -> None:
        """Drop the entries whose key `keep` refuses."""
        for gen in (self._young, self._old):
            for k in [k for k in gen if not keep(k)]:
                del gen[k]

    def clear(self) -> None:
        self._young.clear()
        self._old.clear()
