"""The board: entities addressed by (collection, key), read through a pluggable source.

A transition touches a handful of entities, so the board never loads everything: the git store
supplies a lazy source that decodes one blob on first access, and `with_changes` lays the entities an
op wrote over the source without copying it. Ops return those changes; the store writes only them.
"""
from __future__ import annotations

from typing import Any, Iterable, Iterator, Mapping, Protocol

from gitliza.core.encoding import tomlblob
from gitliza.core.hashing import sha1
from gitliza.core.model import (Agent, Anomaly, CircuitBreaker, Config, Control, Discovery, Goal,
                                Handoff, HumanNote, SpecChange, Sprint, Supervisor, Task,
                                Usage, UsageTotal)

SINGLETONS: dict[str, type] = {
    "goal": Goal, "config": Config, "sprint": Sprint, "circuit_breaker": CircuitBreaker,
    "control": Control,     # pause/abort/checkpoint (written by the control ops only)
}
COLLECTIONS: dict[str, type] = {
    "tasks": Task,          # live tasks
    "archive": Task,        # terminal tasks, moved out so the live board stays small
    "agents": Agent,
    "discovered": Discovery,
    "handoff": Handoff,
    "anomalies": Anomaly,   # journals: append-only, one entry per key
    "spec_changes": SpecChange,
    "human_notes": HumanNote,
    "supervisors": Supervisor,  # generation tokens of `git liza agent` supervisors
    "usage": Usage,         # one entry per agent run, append-only (gitliza/core/agents/costs.py)
    "usage_totals": UsageTotal,  # the running totals of each goal and task (`goal.ID`, `task.ID`)
}
JOURNALS = ("anomalies", "spec_changes", "human_notes")
ENTITY_TYPES: dict[str, type] = {**SINGLETONS, **COLLECTIONS}

Key = tuple[str, str]  # (collection, key); singletons use key ""
# The state tree's `format` blob, addressed like an entity (its value: the version, an int) so
# that an `upgrade` op changes it as ops change entities (gitliza/core/encoding/versions.py).
FORMAT_KEY: Key = ("format", "")
Changes = dict[Key, Any]  # value None: delete


class Source(Protocol):
    def get(self, coll: str, key: str) -> Any | None: ...
    def keys(self, coll: str) -> Iterable[str]: ...


class MemorySource:
    """A plain in-memory source (tests, imports, the empty board)."""

    def __init__(self, entities: Mapping[Key, Any] | None = None) -> None:
        self._e: dict[Key, Any] = dict(entities or {})

    def get(self, coll: str, key: str) -> Any | None:
        return self._e.get((coll, key))

    def keys(self, coll: str) -> Iterable[str]:
        return [k for (c, k) in self._e if c == coll]


EMPTY = MemorySource()


class Board:
    __slots__ = ("_src", "_over", "_keys", "_values")

    def __init__(self, source: Source = EMPTY, overlay: Mapping[Key, Any] | None = None) -> None:
        self._src = source
        self._over: dict[Key, Any] = dict(overlay or {})
        # A board never changes (a write makes a new one: `with_changes`), so a collection's keys
        # are listed once: `status` reads the tasks in several passes (its table, the metrics,
        # the merge queue, the flow figures...).
        self._keys: dict[str, list[str]] = {}
        self._values: dict[str, list[Any]] = {}  # a collection read whole, for the next pass

    # -- reading -------------------------------------------------------------------------------
    def get(self, coll: str, key: str = "") -> Any | None:
        k = (coll, key)
        if k in self._over:
            return self._over[k]
        return self._src.get(coll, key)

    def keys(self, coll: str) -> list[str]:
        listed = self._keys.get(coll)
        if listed is None:
            listed = self._keys[coll] = self._list(coll)
        return list(listed)  # the caller's to change

    def _list(self, coll: str) -> list[str]:
        found = set(self._src.keys(coll))
        for (c, k), v in self._over.items():
            if c == coll:
                if v is None:
                    found.discard(k)
                else:
                    found.add(k)
        return sorted(found)

    def values(self, coll: str) -> Iterator[Any]:
        # Lazy (a reader that stops early decodes no more than it read); a pass read to its end
        # is kept, and the next pass walks that list instead of looking each key up again.
        done = self._values.get(coll)
        if done is not None:
            yield from done
            return
        found = []
        keys = self.keys(coll)
        many = getattr(self._src, "many", None)
        if many is None or any(c == coll for c, _k in self._over):
            read: Iterable[Any] = (self.get(coll, k) for k in keys)
        else:  # nothing laid over this collection: the source reads it in one pass
            read = many(coll, keys)
        for v in read:
            if v is not None:
                found.append(v)
                yield v
        self._values[coll] = found

    @property
    def initialized(self) -> bool:
        if ("goal", "") in self._over:
            return self._over[("goal", "")] is not None
        has = getattr(self._src, "has", None)  # answer without decoding when the source can
        return bool(has("goal")) if has is not None else self._src.get("goal", "") is not None

    @property
    def format_version(self) -> int | None:
        """The storage format of the state tree this board reads (core/encoding/versions.py), as
        an upgrade op changed it; None for a board not read from a tree (the empty board)."""
        v: int | None = self.get(*FORMAT_KEY)
        return v

    @property
    def goal(self) -> Goal:
        g: Goal = self._single("goal")
        return g

    @property
    def config(self) -> Config:
        c = self.get("config")
        return c if c is not None else Config()

    @property
    def sprint(self) -> Sprint:
        s: Sprint = self._single("sprint")
        return s

    @property
    def control(self) -> Control:
        c = self.get("control")
        return c if c is not None else Control()

    @property
    def circuit_breaker(self) -> CircuitBreaker:
        cb = self.get("circuit_breaker")
        return cb if cb is not None else CircuitBreaker()

    def _single(self, name: str) -> Any:
        v = self.get(name)
        if v is None:
            from gitliza.errors import NoBoard
            raise NoBoard()
        return v

    def task(self, task_id: str) -> Task | None:
        """A task, live or archived."""
        t = self.get("tasks", task_id)
        return t if t is not None else self.get("archive", task_id)

    def agent(self, agent_id: str) -> Agent | None:
        a: Agent | None = self.get("agents", agent_id)
        return a

    def tasks(self) -> Iterator[Task]:
        return self.values("tasks")

    def all_tasks(self) -> Iterator[Task]:
        yield from self.values("tasks")
        yield from self.values("archive")

    def agents(self) -> Iterator[Agent]:
        return self.values("agents")

    # -- writing (pure) ------------------------------------------------------------------------
    def with_changes(self, changes: Mapping[Key, Any]) -> Board:
        return Board(self._src, {**self._over, **changes})

    @property
    def overlay(self) -> Mapping[Key, Any]:
        return self._over


def journal_key(entry: Any, timestamp: str) -> str:
    """A journal entry's key: its time (so names sort chronologically) and a digest of its content
    (so two entries in the same second never collide, and replay derives the same key)."""
    digest = sha1(tomlblob.dumps(entry)).hexdigest()[:10]
    return f"{timestamp.replace(':', '').replace('-', '')}-{digest}"
