"""Lock scopes: the paths a task declares it will write, as globs, and the lock they hold while
the task is in flight (docs/locks.md).

There is no lock table: a task holds its lock while its state says it is begun and not ended
(`IN_FLIGHT`), so a merge, release, abandon, block or supersede releases it by the same op that
moves the task, and replay checks it like any other rule of the board.

A glob names paths relative to the repository root: `*` is any run of characters but `/`, `?`
one character but `/`, `[...]` one of a set (`[!...]` not of it), `**` any run of characters,
`/` included (`**/` may also be empty, so `**/x.py` is `x.py` at any depth). A glob also covers
everything below what it names: `src/api` locks `src/api/*` and deeper.

Whether two globs overlap (some path matches both) is decided exactly: each glob is a small
automaton over characters and the pair is searched for a common accepted path (the product of
the two, breadth first). Character sets are compared as sets, negated or not, so the decision
needs no alphabet. It is sound by construction; anything it cannot parse is refused when the
scope is written, never guessed.
"""
from __future__ import annotations

from dataclasses import dataclass
from functools import lru_cache
from typing import Iterable

from gitliza.core.model import Task
from gitliza.core.states import TaskState
from gitliza.errors import ValidationError

S = TaskState
# Begun and not ended: the states in which a task holds its lock scope. A CLAIMED task whose
# lease ran out keeps it, for the coder that takes it over.
IN_FLIGHT = frozenset({S.CLAIMED, S.READY_FOR_REVIEW, S.APPROVED, S.REJECTED,
                       S.INTEGRATION_FAILED})
MAX_GLOBS = 50
MAX_GLOB_LEN = 300


@dataclass(frozen=True, slots=True)
class _Chars:
    """A set of characters: `chars`, or every character but `chars` when `negated`."""

    chars: frozenset[str]
    negated: bool

    def has(self, c: str) -> bool:
        return (c in self.chars) != self.negated

    def meets(self, other: _Chars) -> bool:
        if not self.negated and not other.negated:
            return bool(self.chars & other.chars)
        if not self.negated:
            return any(other.has(c) for c in self.chars)
        if not other.negated:
            return any(self.has(c) for c in other.chars)
        return True  # two co-finite sets of an infinite alphabet always meet


_ANY = _Chars(frozenset(), True)
_NOT_SLASH = _Chars(frozenset("/"), True)
_SLASH = _Chars(frozenset("/"), False)


@dataclass(frozen=True, slots=True)
class _Nfa:
    """States 0..n; `moves[s]`: (chars, next) pairs; `eps[s]`: empty moves; `accept`."""

    moves: tuple[tuple[tuple[_Chars, int], ...], ...]
    eps: tuple[tuple[int, ...], ...]
    accept: frozenset[int]


def check_glob(glob: str) -> str:
    """`glob` as stored (a trailing `/` dropped), or a one-line ValidationError."""
    g = glob.strip()
    if g != glob or not g:
        raise ValidationError(f"lock scope glob {glob!r} must be a non-empty path without "
                              "surrounding blanks")
    if len(g) > MAX_GLOB_LEN:
        raise ValidationError(f"lock scope glob is longer than {MAX_GLOB_LEN} characters")
    if any(c in g for c in "\\\n\r\t\x00"):
        raise ValidationError(f"lock scope glob {glob!r} must not contain a backslash or a "
                              "control character")
    if g.startswith("/"):
        raise ValidationError(f"lock scope glob {glob!r} must be relative to the repository "
                              "root (no leading /)")
    g = g.rstrip("/") or g
    parts = g.split("/")
    if any(p in ("", ".", "..") for p in parts):
        raise ValidationError(f"lock scope glob {glob!r} must not have empty, `.` or `..` "
                              "segments")
    _compile(g)  # an unclosed [ is refused here
    return g


def check_scope(globs: tuple[str, ...] | list[str]) -> tuple[str, ...]:
    """A task's lock scope as stored: each glob checked, duplicates dropped, order kept."""
    if len(globs) > MAX_GLOBS:
        raise ValidationError(f"a lock scope holds at most {MAX_GLOBS} globs")
    out: list[str] = []
    for g in globs:
        c = check_glob(g)
        if c not in out:
            out.append(c)
    return tuple(out)


def _class(glob: str, i: int) -> tuple[_Chars, int]:
    """The `[...]` set starting at glob[i] == '[' and the index after it."""
    j = i + 1
    negated = j < len(glob) and glob[j] in "!^"
    if negated:
        j += 1
    chars: set[str] = set()
    first = True
    while j < len(glob) and (glob[j] != "]" or first):
        first = False
        if j + 2 < len(glob) and glob[j + 1] == "-" and glob[j + 2] != "]":
            lo, hi = glob[j], glob[j + 2]
            if ord(hi) - ord(lo) > 4096 or hi < lo:
                raise ValidationError(f"lock scope glob {glob!r}: bad range {lo}-{hi}")
            chars.update(chr(c) for c in range(ord(lo), ord(hi) + 1))
            j += 3
        else:
            chars.add(glob[j])
            j += 1
    if j >= len(glob):
        raise ValidationError(f"lock scope glob {glob!r}: unclosed [")
    # A set never matches `/`: a path's segments are matched one by one, as git's globs are.
    return _Chars(frozenset(chars | {"/"}) if negated else frozenset(chars - {"/"}),
                  negated), j + 1


@lru_cache(maxsize=4096)
def _compile(glob: str) -> _Nfa:
    moves: list[list[tuple[_Chars, int]]] = [[]]
    eps: list[list[int]] = [[]]

    def new() -> int:
        moves.append([])
        eps.append([])
        return len(moves) - 1

    cur = 0
    i = 0
    while i < len(glob):
        c = glob[i]
        at_segment = i == 0 or glob[i - 1] == "/"
        if glob.startswith("**", i) and at_segment and (i + 2 == len(glob) or glob[i + 2] == "/"):
            if i + 2 == len(glob):  # trailing `**`: anything, `/` included
                moves[cur].append((_ANY, cur))
                i += 2
                continue
            # `**/`: empty, or any run of characters ending in `/`.
            mid, nxt = new(), new()
            eps[cur].append(nxt)
            moves[cur].append((_ANY, mid))
            moves[mid].append((_ANY, mid))
            moves[mid].append((_SLASH, nxt))
            moves[cur].append((_SLASH, nxt))
            cur = nxt
            i += 3
            continue
        if c == "*":
            while i < len(glob) and glob[i] == "*":
                i += 1
            moves[cur].append((_NOT_SLASH, cur))
            continue
        nxt = new()
        if c == "?":
            moves[cur].append((_NOT_SLASH, nxt))
            i += 1
        elif c == "[":
            chars, i = _class(glob, i)
            moves[cur].append((chars, nxt))
        else:
            moves[cur].append((_Chars(frozenset(c), False), nxt))
            i += 1
        cur = nxt
    # Everything below what the glob names: `/` and at least one more character.
    below, deeper = new(), new()
    moves[cur].append((_SLASH, below))
    moves[below].append((_ANY, deeper))
    moves[deeper].append((_ANY, deeper))
    return _Nfa(tuple(tuple(m) for m in moves), tuple(tuple(e) for e in eps),
                frozenset({cur, deeper}))


def _closure(nfa: _Nfa, states: frozenset[int]) -> frozenset[int]:
    seen = set(states)
    todo = list(states)
    while todo:
        for n in nfa.eps[todo.pop()]:
            if n not in seen:
                seen.add(n)
                todo.append(n)
    return frozenset(seen)


def globs_overlap(a: str, b: str) -> bool:
    """Whether some path matches both globs (exact: the product automaton is searched)."""
    return _overlap(a, b) if a <= b else _overlap(b, a)


@lru_cache(maxsize=16384)
def _overlap(a: str, b: str) -> bool:
    na, nb = _compile(a), _compile(b)
    start = [(x, y) for x in _closure(na, frozenset({0})) for y in _closure(nb, frozenset({0}))]
    seen = set(start)
    todo = list(start)
    while todo:
        x, y = todo.pop()
        if x in na.accept and y in nb.accept:
            return True
        for ca, xa in na.moves[x]:
            for cb, yb in nb.moves[y]:
                if not ca.meets(cb):
                    continue
                for x2 in _closure(na, frozenset({xa})):
                    for y2 in _closure(nb, frozenset({yb})):
                        if (x2, y2) not in seen:
                            seen.add((x2, y2))
                            todo.append((x2, y2))
    return False


def scopes_overlap(a: tuple[str, ...], b: tuple[str, ...]) -> tuple[str, str] | None:
    """The first pair of globs of `a` and `b` that overlap, or None (an empty scope locks
    nothing)."""
    for x in a:
        for y in b:
            if globs_overlap(x, y):
                return x, y
    return None


def matches(glob: str, path: str) -> bool:
    """Whether `path` (a file's path in the repository) is in the scope of `glob`."""
    nfa = _compile(glob)
    states = _closure(nfa, frozenset({0}))
    for c in path:
        nxt = {n for s in states for chars, n in nfa.moves[s] if chars.has(c)}
        if not nxt:
            return False
        states = _closure(nfa, frozenset(nxt))
    return bool(states & nfa.accept)


def outside(scope: tuple[str, ...], paths: list[str] | tuple[str, ...]) -> list[str]:
    """The paths no glob of `scope` covers, sorted (empty when the scope is empty: no scope,
    no limit)."""
    if not scope:
        return []
    return sorted(p for p in paths if not any(matches(g, p) for g in scope))


def holder(tasks: Iterable[Task], task_id: str, scope: tuple[str, ...]
           ) -> tuple[str, str, str] | None:
    """The first task of `tasks` other than `task_id` that is in flight with a scope overlapping
    `scope`: (its id, its glob, ours), or None."""
    if not scope:
        return None
    for t in tasks:
        if t.id == task_id or not t.lock_scope or t.status not in IN_FLIGHT:
            continue
        hit = scopes_overlap(t.lock_scope, scope)
        if hit is not None:
            return t.id, hit[0], hit[1]
    return None
