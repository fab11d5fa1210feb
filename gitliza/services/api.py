"""The library API: what the CLI, the supervisor, the watcher and the benchmarks use in-process.

    liza = Liza.open(".", agent="coder-1")
    board = liza.board()                         # the tip, read lazily
    done = liza.apply(lambda board, now: Claim(actor=liza.agent, time=now, ...))
"""
from __future__ import annotations

import dataclasses
import os
import sys
import time
from typing import TYPE_CHECKING, Any, Callable

from gitliza.core import clock

from gitliza.core.presence import renewals as liveness
from gitliza.core.board import Board
from gitliza.core.presence.renewals import Renewal
from gitliza.core.states import HUMAN_ACTOR
from gitliza.core.terminal import safe
from gitliza.git.store import Committed, Store
from gitliza.git.repository import repo_path

if TYPE_CHECKING:  # the op records load with the write path (git/store.py), not for a read
    import pygit2

    from gitliza.core.ops.base import Op
    from gitliza.git.remotes.remote import Remote

AGENT_ENV = "LIZA_AGENT_ID"
# Set by `git liza agent` for itself and the agent it starts: every op then carries the supervisor
# generation (Op.gen), which the board refuses once another supervisor took the id over.
GEN_ENV = "LIZA_SUPERVISOR_GEN"
# Tests and demos move time forward (lease expiry) without sleeping; never set in production.
NOW_ENV = "LIZA_NOW"

# A hook may return a replacement record (auto-sync replays the op onto the remote's ops, which
# gives it a new commit id); None keeps the record as it is.
def now_utc(*, allow_override: bool = True) -> str:
    """The time ops carry. `LIZA_NOW` (tests, demos) overrides it unless `allow_override` is
    False, which is what the server hook uses: the pusher's environment must not set its clock."""
    forced = os.environ.get(NOW_ENV) if allow_override else None
    return clock.check_ts(forced, NOW_ENV) if forced else clock.from_epoch(time.time())


AfterCommit = Callable[["Liza", Committed], "Committed | None"]


class Liza:
    def __init__(self, store: Store, agent: str | None = None, *,
                 now: Callable[[], str] | None = None, sync: bool = True) -> None:
        self.store = store
        self.agent = agent or os.environ.get(AGENT_ENV) or HUMAN_ACTOR
        self._now = now
        self.sync = sync
        self.after_commit: list[AfterCommit] = []
        self.gen: int | None = _env_gen() if self.agent == os.environ.get(AGENT_ENV) else None
        self._target: tuple[str, Remote] | None = None  # sync_target's, for the name it had

    @classmethod
    def open(cls, path: str | os.PathLike[str] = ".", agent: str | None = None,
             **kw: Any) -> Liza:
        return cls(Store.discover(path), agent, **kw)

    @property
    def repo(self) -> pygit2.Repository:
        """The open repository, handed down to what reads or writes git (never reopened from a
        path). pygit2 is named for the type checker only: this module loads for `status`, whose
        imports stay lazy (tests/cli/test_status_imports.py)."""
        return self.store.repo

    def sync_remote(self) -> str | None:
        """The remote this board shares with by itself (auto-sync): `git config liza.remote`, else
        `sync.remote` (git/remotes/), unless opened with `--no-sync`; None for a clone that
        works alone. One config lookup, no process."""
        if not self.sync:
            return None
        from gitliza.git.remotes.remote import configured
        return configured(self.repo)

    def sync_target(self) -> Remote | None:
        """`sync_remote` resolved (git/remotes `resolve`: validated, its tracking namespace), once
        for this Liza: the `Remote` that sync and the transport are handed. None as
        `sync_remote`; an unknown remote name is the ValidationError `resolve` raises."""
        name = self.sync_remote()
        if name is None:
            return None
        if self._target is None or self._target[0] != name:
            from gitliza.git.remotes.remote import resolve
            self._target = (name, resolve(repo_path(self.repo), name))
        return self._target[1]

    def now(self) -> str:
        if self._now is not None:
            return self._now()
        return now_utc()

    def notice(self, text: str) -> None:
        """A warning for the person or agent running the command (stderr, as the CLI's notices):
        what an after-commit hook says when it cannot fail the op that is already committed."""
        sys.stderr.write(f"gitliza: {safe(text)}\n")  # board text in it: escaped

    def board(self, at: str | None = None) -> Board:
        """The board at the tip (or at `at`, as it was recorded). The tip is read with the
        effective leases: the renewals on refs/liza/live/* laid over it (core/presence/renewals.py)."""
        return self.store.board(at)[0]

    def renewals(self) -> list[Renewal]:
        """Every agent's renewals off the chain that this clone has (its own, and the remote's
        copies sync fetched)."""
        from gitliza.git import liveref
        return liveref.read_all(self.repo)

    def apply(self, make_op: Callable[[Board, str], Op]) -> Committed:
        if self.gen is not None:
            make_op = _with_gen(make_op, self.agent, self.gen)
        make_op = _with_live(make_op, self.renewals)
        done = self.store.transact(make_op, self.now)
        _observe_write(self, done)
        for hook in self.after_commit:
            done = hook(self, done) or done
        return done

    def do(self, cls: type[Op], **args: Any) -> Committed:
        """Apply `cls(actor=self.agent, time=now, **args)`."""
        return self.apply(lambda _board, now: cls(actor=self.agent, time=now, **args))


def _observe_write(liza: Liza, done: Committed) -> None:
    """This clone saw the leases its own write set (a claim, a renewal) when it wrote them: the
    wait before anyone here may take them over starts now (gitliza/services/leasewatch.py)."""
    tasks = [v for (kind, _key), v in done.outcome.changes.items() if kind == "tasks" and v]
    if tasks:
        from gitliza.services import leasewatch
        leasewatch.observe_tasks(liza.repo, tasks, done.op.time)


def _env_gen() -> int | None:
    raw = os.environ.get(GEN_ENV)
    return int(raw) if raw and raw.isdigit() else None


def _with_live(make_op: Callable[[Board, str], Op],
               renewals: Callable[[], list[Renewal]]) -> Callable[[Board, str], Op]:
    """The op is made from the board with the effective leases, and carries the renewals it was
    judged by (`Op.live`: its actor's own, and those of whoever holds its task), so the commit
    records them and replay needs nothing else."""
    def make(board: Board, now: str) -> Op:
        found = renewals()
        op = make_op(liveness.overlay(board, found) if found else board, now)
        if not found or op.live:
            return op
        tasks = [getattr(op, "task", None)]
        live = liveness.relevant(board, op.actor, [t for t in tasks if isinstance(t, str)], found)
        return dataclasses.replace(op, live=live) if live else op
    return make


def _with_gen(make_op: Callable[[Board, str], Op], agent: str,
              gen: int) -> Callable[[Board, str], Op]:
    def make(board: Board, now: str) -> Op:
        op = make_op(board, now)
        if op.actor == agent and op.gen is None and op.NAME != "supervise":
            op = dataclasses.replace(op, gen=gen)
        return op
    return make
