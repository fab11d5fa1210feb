"""The board's transitions as a stream: one event per state commit, oldest first.

`events(liza, since)` yields the commits of refs/liza/state not reachable from `since` (all of
them without it), then, with `follow`, waits on the ref (gitliza/git/refwatch.py: inotify on the
loose ref and packed-refs, no polling) and yields what every change brought, whoever wrote it: a
local command, another process, `git fetch` or `git liza sync`.

Never missing or repeating: each round yields exactly the commits reachable from the new tip and
not from the previous one (a revision walk that hides the old tip), and a consumer that restarts
with `--since <the last state it saw>` resumes there. If the history was rewritten under the
stream (a sync that replayed local ops onto the remote's tip), the replayed ops are new commits
and are yielded as such; commits that left the history are not taken back.
"""
from __future__ import annotations

from typing import TYPE_CHECKING, Any, Callable, Iterator

import pygit2

from gitliza.git.source import check_format

if TYPE_CHECKING:
    from gitliza.services.api import Liza


def new_commits(repo: pygit2.Repository, tip: pygit2.Oid | None,
                seen: pygit2.Oid | None) -> list[pygit2.Commit]:
    """Commits reachable from `tip` and not from `seen`, oldest first."""
    if tip is None or tip == seen:
        return []
    walker = repo.walk(tip, pygit2.enums.SortMode.TOPOLOGICAL | pygit2.enums.SortMode.REVERSE)
    if seen is not None:
        walker.hide(seen)
    return list(walker)


def event(commit: pygit2.Commit) -> dict[str, Any]:
    """One transition: what `log --json` says about the commit, plus its parent."""
    from gitliza.services.views.data import log_entry
    data = log_entry(commit)
    data["parent"] = str(commit.parent_ids[0]) if commit.parent_ids else None
    return data


def line(e: dict[str, Any]) -> str:
    """The human form: `<state>  <time>  <summary>`, the state in full (a cursor for --since)."""
    return f"{e['state']}  {e.get('time', '-')}  {e.get('summary', e.get('error'))}"


def resolve_since(liza: Liza, since: str | None) -> pygit2.Oid | None:
    if since is None:
        return None
    commit: pygit2.Commit | None = liza.store.resolve(since)  # refuses an unknown one itself
    assert commit is not None
    return commit.id


def events(liza: Liza, since: str | None = None, follow: bool = False,
           wait: Callable[[], object] | None = None) -> Iterator[dict[str, Any]]:
    """The events after `since`, then (with `follow`) the live ones, forever. `wait` blocks
    until the ref may have changed (default: a RefWatcher on this repository)."""
    store = liza.store
    seen = resolve_since(liza, since)
    watcher = None
    if follow and wait is None:
        from gitliza.git.refwatch import RefWatcher
        # Started before the first read of the tip: a commit landing in between wakes us.
        watcher = RefWatcher(store.repo.path, control_files=False).start()
        wait = watcher.wait
    try:
        while True:
            tip = store.tip()
            if tip is not None:  # a board moved to a newer format is refused, here too
                check_format(store.commit(tip).tree, str(tip))
            for commit in new_commits(store.repo, tip, seen):
                yield event(commit)
            if tip is not None:
                seen = tip
            if not follow:
                return
            assert wait is not None
            wait()
    finally:
        if watcher is not None:
            watcher.close()
