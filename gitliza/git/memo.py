"""A cache for a long-lived process: bounded, and keeping what is in use.

The caches of immutable things (entities decoded by blob id, trees parsed by tree id) used to be
one dict emptied when full. In a process that lives (a supervisor, the MCP server, a program on the
library API) every transition adds a few entries that are never read again (the versions an op
replaced), so such a dict grew for tens of thousands of transitions (tens of MB) before its first
emptying: memory that grew with run time. Two generations instead: entries go into the young one;
when it is full it becomes the old one and the former old one is dropped; an entry found in the old
one moves back to the young. What a process keeps reading stays; what it stopped reading is gone
after two generations; and the size stays within two generations from early on.

A generation is counted in entries, or, given `weight`, in what the entries weigh (a parsed tree:
its entries). Counted in trees, the parsed-tree cache held 2,048 trees whatever their size, and
the trees a process parses grow with the history (a fan-out leaf of the archive, a project's
directory with one more file per merged task): a bound in entries is a bound in bytes.
"""
from __future__ import annotations

from typing import Callable, Generic, Hashable, TypeVar

K = TypeVar("K", bound=Hashable)
V = TypeVar("V")


class Generations(Generic[K, V]):
    def __init__(self, size: int, weight: Callable[[V], int] | None = None) -> None:
        self.size = size  # entries (or their weight) per generation
        self._weight = weight
        self._load = 0  # what the young generation holds, in the unit of `size`
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
        w = 1 if self._weight is None else max(1, self._weight(value))
        if self._load + w > self.size and self._young:
            self._old, self._young, self._load = self._young, {}, 0
        prev = self._young.get(key)
        if prev is not None:
            self._load -= 1 if self._weight is None else max(1, self._weight(prev))
        self._young[key] = value
        self._load += w
        self._old.pop(key, None)  # a stale version there would count twice against the bound

    def update(self, items: dict[K, V]) -> None:
        """`self[k] = v` for each item, in one step when they fit a generation (a collection read
        whole: 1,000 tasks, each a Python call through `__setitem__` otherwise)."""
        if self._weight is not None or len(items) > self.size:
            for k, v in items.items():
                self[k] = v
            return
        if self._load + len(items) > self.size and self._young:
            self._old, self._young, self._load = self._young, {}, 0
        young = self._young
        before = len(young)
        young.update(items)
        self._load += len(young) - before  # a key it held already weighs as before
        if self._old:
            for k in items:
                self._old.pop(k, None)

    def keys(self) -> list[K]:
        return [*self._young, *self._old]

    def __contains__(self, key: object) -> bool:
        return key in self._young or key in self._old

    def __len__(self) -> int:
        return len(self._young) + len(self._old)

    def discard(self, key: K) -> None:
        gone = self._young.pop(key, None)
        if gone is not None:
            self._load -= 1 if self._weight is None else max(1, self._weight(gone))
        self._old.pop(key, None)

    def retain(self, keep: Callable[[K], bool]) -> None:
        """Drop the entries whose key `keep` refuses."""
        for k in [k for k in self._young if not keep(k)]:
            self.discard(k)
        for k in [k for k in self._old if not keep(k)]:
            del self._old[k]

    def clear(self) -> None:
        self._young.clear()
        self._old.clear()
        self._load = 0

    def weight(self) -> int:
        """What both generations hold, in the unit of `size` (tests, diagnostics)."""
        w = self._weight or (lambda _v: 1)
        return sum(max(1, w(v)) for gen in (self._young, self._old) for v in gen.values())
