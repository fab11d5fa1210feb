"""`git liza hook-impl <hook> [args...]`: what the installed hook shims run.

Kept light on purpose: it runs on every commit, merge, ref update and push in a repository with the
hooks installed, so it imports nothing it does not need (not the CLI, not the installer); pygit2,
the core and the replay engine are imported only by a handler that has something to check.

A handler gets the hook's arguments and its stdin (read once, here) and returns the hook's exit
status; non-zero makes git refuse the operation. Every refusal is one line on stderr. What each
hook enforces, and what can bypass it, is in docs/enforcement.md:

- pre-commit: in a task branch (`liza/<task-id>`), only the coder holding the claim with a live
  lease commits; nobody commits while the task is READY_FOR_REVIEW or APPROVED. The installed
  shims apply this rule in reference-transaction instead (one hook start fewer per commit).
- pre-merge-commit: a merge into the integration branch merges approved review commits only.
- reference-transaction: refs/liza/state only moves to a legal continuation (replayed) and is never
  deleted; the integration branch only receives approved work; the task branch checked out here
  only moves under pre-commit's rule.
- pre-push: the same two rules for what is about to be sent.
- pre-receive (server): all of the above for every pushed ref, against the board after the push.
  Client hooks are advisory (`-c core.hooksPath=/dev/null` skips them); this one is not.

GITLIZA_HOOK_TRACE=<file>: append one line per run, `<hook> <args...> stdin=<sha256 of stdin>`, so
that tests (and anyone debugging an installation) can see that git ran the shim and what it passed.
"""
from __future__ import annotations

import hashlib
import os
import sys
from pathlib import Path
from typing import TYPE_CHECKING, Any, Callable, Iterator

from gitliza.errors import LizaError

if TYPE_CHECKING:
    import pygit2

    from gitliza.core.board import Board
    from gitliza.git.store import Store

HookHandler = Callable[[list[str], bytes], int]

STATE_REF = "refs/liza/state"
LIZA_REFS = "refs/liza/"
ZERO = "0" * 40
TASK_BRANCH = "liza/"
TASK_REF = "refs/heads/" + TASK_BRANCH


def _refuse(hook: str, reason: str) -> int:
    print(f"gitliza: {hook}: refused: {' '.join(reason.split())}", file=sys.stderr)
    return 1


# -- opening the repository -----------------------------------------------------------------------
def _open(server: bool = False) -> pygit2.Repository:
    """The repository git runs the hook for. git runs hooks at the work tree top (or in $GIT_DIR of
    a bare repository) with GIT_DIR set. During pre-receive the pushed objects are not in the object
    store yet but in a quarantine directory (GIT_QUARANTINE_PATH, also GIT_OBJECT_DIRECTORY); libgit2
    ignores those variables, so the quarantine is added as an alternate to see them."""
    import pygit2

    from gitliza.git.repository import open_repository
    gitdir = os.environ.get("GIT_DIR")
    repo = pygit2.Repository(gitdir) if gitdir else open_repository(".")
    quarantine = os.environ.get("GIT_QUARANTINE_PATH") if server else None
    if quarantine and os.path.isdir(quarantine):
        repo.odb.add_disk_alternate(quarantine)
    return repo


def _store(repo: pygit2.Repository) -> Store:
    from gitliza.git.store import Store
    return Store(repo)


def _board_at(store: Store, oid: Any) -> Board:
    from gitliza.core.board import Board
    import pygit2
    if oid is None:
        return Board()
    commit = store.repo.get(oid)
    return store.board_at(commit if isinstance(commit, pygit2.Commit) else None)


def _ref_target(repo: pygit2.Repository, name: str) -> Any:
    """The oid a ref points at now (peeled symbolic refs), or None."""
    try:
        return repo.references[name].resolve().target
    except (KeyError, ValueError):
        return None


def _integration_ref(board: Board) -> str | None:
    return f"refs/heads/{board.config.integration_branch}" if board.initialized else None


def _now() -> str:
    """Client hooks judge leases like the CLI does (LIZA_NOW honoured: they are advisory)."""
    from gitliza.services.api import now_utc
    return now_utc()


def _lines(stdin: bytes, width: int) -> Iterator[list[str]]:
    for raw in stdin.decode("utf-8", "surrogateescape").splitlines():
        parts = raw.split(" ")
        if len(parts) == width:
            yield parts


# -- the checks, shared by client and server hooks ------------------------------------------------
def _check_state(store: Store, old: Any, new: str, latest: str | None = None) -> str | None:
    """Why moving refs/liza/state from `old` (trusted; None: no state yet) to `new` is refused.
    `latest` (server only): no new op may be dated after it (see _latest_allowed)."""
    from gitliza.services.verify import VerifyFailure, replay
    if new == ZERO:
        return f"deleting {STATE_REF} is never allowed (it is the board's whole history)"
    try:
        report = replay(store, new, old)
    except VerifyFailure as e:
        return str(e)
    for oid, op, actor, why in report.unsigned:  # signatures = warn: reported, accepted
        print(f"gitliza: warning: state commit {oid[:12]} ({op}): actor {actor}: {why}",
              file=sys.stderr)
    if latest is None:
        return None
    return (_future_op(store, old, new, latest) or _early_takeover(store, old, new, _server_now())
            or _unbound_pusher(store, old, new))


def _new_commits(store: Store, old: Any, new: str) -> list[Any]:
    """The state commits in old..new, newest first (the range already replayed: linear)."""
    import pygit2
    commits = []
    commit = store.commit(pygit2.Oid(hex=new))
    while old is None or commit.id != old:
        commits.append(commit)
        if not commit.parents:
            break
        commit = commit.parents[0]
    return commits


def _unbound_pusher(store: Store, old: Any, new: str) -> str | None:
    """A pusher may add only commits of the actors the server binds it to (gitliza/hooks/pushers.py)."""
    from gitliza.hooks import pushers
    from gitliza.core import record
    binding = pushers.bindings(store.repo.config)
    if not binding:
        return None
    return pushers.refused(binding, pushers.pusher(os.environ),
                           ((str(c.id), record.parse(c.message).op.actor)
                            for c in reversed(_new_commits(store, old, new))))


DEFAULT_MAX_SKEW = 60


def _server_now() -> str:
    """The server's own clock. Never LIZA_NOW: over a local or file:// push the pusher's
    environment reaches pre-receive, and the pusher must not be able to move the server's clock."""
    from gitliza.services.api import now_utc
    return now_utc(allow_override=False)


def _latest_allowed(repo: pygit2.Repository) -> str:
    """Ops carry their own time, and leases are judged by it: an op dated in the future could
    fake the expiry of someone's lease. The server accepts ops dated at most `liza.maxClockSkew`
    seconds (default 60) after its own clock. Older ops are fine: a machine that was offline
    replays its ops with their original times."""
    from gitliza.core import clock
    try:
        skew = int(str(repo.config["liza.maxClockSkew"]))
    except (KeyError, ValueError):
        skew = DEFAULT_MAX_SKEW
    return clock.plus(_server_now(), max(skew, 0))


def _future_op(store: Store, old: Any, new: str, latest: str) -> str | None:
    for commit in _new_commits(store, old, new):
        for line in commit.message.splitlines():
            if line.startswith("Liza-Time: ") and line[11:].strip() > latest:
                return (f"state commit {str(commit.id)[:12]} is dated {line[11:].strip()}, later "
                        f"than this server's clock allows ({latest}; git config liza.maxClockSkew)")
    return None


def _early_takeover(store: Store, old: Any, new: str, now: str) -> str | None:
    """A takeover (a claim of a CLAIMED task, a claim-review over someone's review lease) must
    find the lease expired by the server's clock too. The op's own time decides in the core, and
    a legitimate takeover always happened before the push, so by now its lease has expired; one
    that has not was dated ahead to fake the expiry."""
    from gitliza.core import record
    for c in reversed(_new_commits(store, old, new)):
        op = record.parse(c.message).op
        if op.NAME not in ("claim", "claim-review") or not c.parents:
            continue
        t = store.board_at(store.commit(c.parents[0].id)).task(getattr(op, "task"))
        if t is None:
            continue
        if op.NAME == "claim" and t.status == "CLAIMED" and t.assigned_to != op.actor:
            until = t.lease_expires
        elif op.NAME == "claim-review" and t.reviewing_by not in (None, op.actor):
            until = t.review_lease_expires
        else:
            continue
        if until is not None and until > now:
            return (f"state commit {str(c.id)[:12]} ({op.NAME} {t.id}) takes over a lease that "
                    f"runs until {until} by this server's clock ({now})")
    return None


def _check_integration(repo: pygit2.Repository, board: Board, ref: str, old: Any, new: str,
                       *, pending_merges: bool, rewind_ok: bool, alongside: tuple[Any, ...] = ()
                       ) -> str | None:
    """Why moving the integration branch from `old` (None: creation) to `new` is refused."""
    import pygit2

    from gitliza.services.verify import Approvals, describe, unapproved
    if new == ZERO:
        return "deleting the integration branch is not allowed"
    new_oid = pygit2.Oid(hex=new)
    if new_oid not in repo:
        return f"{new[:12]} is not in this repository"
    if old is None:
        # A new integration branch starts from existing history: anything already on another branch
        # (or on one created by the same push: a first `git push --all`) is not brought in by it.
        hide = [t for n in repo.references if n.startswith("refs/heads/") and n != ref
                if (t := _ref_target(repo, n)) is not None] + list(alongside)
    else:
        if old != new_oid and not rewind_ok and not repo.descendant_of(new_oid, old):
            return f"not a fast-forward of {str(old)[:12]}: merged work would be dropped"
        hide = [old]
    bad = unapproved(repo, Approvals.of(board), new_oid, hide, pending_merges=pending_merges)
    if bad:
        return (f"{ref} would receive {describe(bad)}; only approved review commits (merged by "
                "`git liza merge`) go there")
    return None


# -- client hooks ---------------------------------------------------------------------------------
def pre_commit(args: list[str], stdin: bytes) -> int:
    """A commit on the task branch checked out here (see _task_commit_refused). Not installed by
    `git liza hooks install` any more: reference-transaction applies the same rule to every move of
    that branch, commits included. Kept for the pre-commit framework and for older shims."""
    repo = _open()
    if repo.head_is_detached or repo.head_is_unborn:
        return 0
    why = _task_commit_refused(repo, repo.head.name)
    return _refuse("pre-commit", why) if why else 0


def _task_commit_refused(repo: pygit2.Repository, ref: str) -> str | None:
    """Why the task branch `ref` (refs/heads/liza/<task>), checked out here, may not move: only the
    claim holder, with a live lease, commits; a task under review or approved is frozen (its
    review_commit is what gets reviewed and merged). None for any other branch, or with no board."""
    if not ref.startswith(TASK_REF):
        return None
    branch, task_id = ref[len("refs/heads/"):], ref[len(TASK_REF):]
    store = _store(repo)
    tip = store.tip()
    if tip is None:  # no board in this repository: not ours to police
        return None
    from gitliza.core.states import TaskState as S
    t = _board_at(store, tip).task(task_id)
    if t is None:
        return f"branch {branch} belongs to no task on the board (no task {task_id!r})"
    if t.status in (S.READY_FOR_REVIEW, S.APPROVED):
        return (f"{task_id} is {t.status}: its review commit {str(t.review_commit)[:12]} is frozen "
                "until a rejection or the merge")
    if t.status != S.CLAIMED:
        return f"{task_id} is {t.status}, not CLAIMED: claim it first (`git liza claim {task_id}`)"
    agent = os.environ.get("LIZA_AGENT_ID")
    if not agent:
        return f"{task_id} is claimed by {t.assigned_to}; set LIZA_AGENT_ID to say who is committing"
    if t.assigned_to != agent:
        return f"{task_id} is claimed by {t.assigned_to}, not {agent}"
    now = _now()
    if not (t.lease_expires and t.lease_expires > now):
        return (f"{agent}'s lease on {task_id} expired at {t.lease_expires} (now {now}): "
                "`git liza heartbeat` or claim again")
    return None


def pre_merge_commit(args: list[str], stdin: bytes) -> int:
    """A merge commit made by hand on the integration branch merges approved review commits only."""
    repo = _open()
    if repo.head_is_detached or repo.head_is_unborn:
        return 0
    store = _store(repo)
    tip = store.tip()
    if tip is None:
        return 0
    board = _board_at(store, tip)
    if repo.head.name != _integration_ref(board):
        return 0
    merged = _merged_commits(repo)
    from gitliza.core.states import TaskState as S
    tasks = list(board.all_tasks())
    for oid in merged:
        if any(t.status == S.APPROVED and t.review_commit == oid for t in tasks):
            continue
        return _refuse("pre-merge-commit", _why_not_approved(repo, tasks, oid))
    return 0


def _merged_commits(repo: pygit2.Repository) -> list[str]:
    """What `git merge` is merging. MERGE_HEAD is not written yet when pre-merge-commit runs, but
    git merge sets GIT_REFLOG_ACTION to "merge <the revisions it was given>". Anything else (a merge
    run by `git pull`, which sets its own action) is left to reference-transaction."""
    import pygit2
    action = os.environ.get("GIT_REFLOG_ACTION", "")
    if not action.startswith("merge "):
        merge_head = Path(repo.path) / "MERGE_HEAD"
        return merge_head.read_text().split() if merge_head.is_file() else []
    out = []
    for rev in action.split()[1:]:
        try:
            out.append(str(repo.revparse_single(rev).peel(pygit2.Commit).id))
        except (KeyError, ValueError, pygit2.GitError):
            continue
    return out


def _why_not_approved(repo: pygit2.Repository, tasks: list[Any], oid: str) -> str:
    from gitliza.core.states import TaskState as S
    for t in tasks:
        branch = _ref_target(repo, f"refs/heads/{TASK_BRANCH}{t.id}")
        if t.review_commit == oid or (branch is not None and str(branch) == oid):
            if t.status != S.APPROVED:
                return f"{t.id} is {t.status}, not APPROVED: it cannot be merged"
            return (f"merging {oid[:12]}, not {t.id}'s approved review_commit "
                    f"{str(t.review_commit)[:12]}")
    return f"{oid[:12]} is not the approved review_commit of any task"


def _judge(store: Store, updates: list[tuple[Any, str, str]], *, pending_merges: bool,
           rewind_ok: bool, latest: str | None = None) -> list[tuple[str, str]]:
    """(ref, reason) for every refused update among `updates` = [(old oid or None, new hex, ref)],
    `old` being the trusted value the ref has now. The state ref is judged first: the integration
    branch is then judged against the board this very update produces (a merge moves both)."""
    import pygit2
    repo = store.repo
    refused: list[tuple[str, str]] = []
    state = store.tip()
    for old, new, ref in updates:
        if not ref.startswith(LIZA_REFS):
            continue
        if new == ZERO:
            refused.append((ref, f"deleting {ref} is never allowed"))
        elif ref == STATE_REF:
            why = _check_state(store, old, new, latest)
            if why:
                refused.append((ref, why))
            else:
                state = pygit2.Oid(hex=new)
        elif old is not None and not repo.descendant_of(pygit2.Oid(hex=new), old):
            refused.append((ref, f"not a fast-forward of {str(old)[:12]}"))
    if state is None:
        return refused
    board = _board_at(store, state)
    ib = _integration_ref(board)
    alongside = tuple(pygit2.Oid(hex=n) for _o, n, r in updates
                      if r.startswith("refs/heads/") and r != ib and n != ZERO)
    for old, new, ref in updates:
        if ref == ib:
            why = _check_integration(repo, board, ref, old, new, pending_merges=pending_merges,
                                     rewind_ok=rewind_ok, alongside=alongside if old is None else ())
            if why:
                refused.append((ref, why))
    return refused


def _relevant(ref: str) -> bool:
    return ref.startswith(LIZA_REFS) or ref.startswith("refs/heads/")


def reference_transaction(args: list[str], stdin: bytes) -> int:
    """Plain git moving refs (update-ref, fetch into refs/liza/state, merge, reset, commit): the
    state ref only to a legal continuation, the integration branch only onto approved work, and the
    task branch checked out here only by its claim holder (a commit on it, and any other move). The
    shim calls Python for the "prepared" phase only, the one that can still abort."""
    if args[:1] != ["prepared"]:
        return 0
    lines = [(n, r) for _o, n, r in _lines(stdin, 3) if _relevant(r)]
    if not lines:
        return 0
    repo = _open()
    store = _store(repo)
    tip = store.tip()
    if tip is not None:  # the shim's cache of the integration branch, for the next updates
        store.remember_for_hooks(tip)
    # git passes the caller's expected old value, all zeros when it did not check one; the ref is
    # locked but not moved yet, so its current value is the real starting point.
    updates = [(cur, n, r) for n, r in lines
               if (cur := _ref_target(repo, r)) is None or str(cur) != n]
    # The commit rule (pre-commit's, which is not installed: one hook fewer per commit) for the
    # branch checked out here. Creating or deleting the branch is not committing on it.
    head = None if repo.head_is_detached or repo.head_is_unborn else repo.head.name
    for cur, n, r in updates:
        if r == head and cur is not None and n != ZERO:
            why = _task_commit_refused(repo, r)
            if why:
                return _refuse("reference-transaction", f"{r}: {why}")
    # Moving one's own branch back is allowed here (the server refuses a rewind on push), and a
    # merge made by hand may precede its record (`git liza merge` records it).
    refused = _judge(store, updates, pending_merges=True, rewind_ok=True)
    return _refuse("reference-transaction", f"{refused[0][0]}: {refused[0][1]}") if refused else 0


def _pre_commit_push_line() -> bytes:
    """Run by the pre-commit framework (.pre-commit-hooks.yaml), which reads git's pre-push stdin
    itself and passes the ref being pushed in PRE_COMMIT_* variables: the same line, rebuilt."""
    env = os.environ
    to, remote_ref = env.get("PRE_COMMIT_TO_REF"), env.get("PRE_COMMIT_REMOTE_BRANCH")
    if not to or not remote_ref:
        return b""
    line = (f"{env.get('PRE_COMMIT_LOCAL_BRANCH') or 'HEAD'} {to} {remote_ref} "
            f"{env.get('PRE_COMMIT_FROM_REF') or ZERO}\n")
    return line.encode()


def pre_push(args: list[str], stdin: bytes) -> int:
    """Refuse early, before anything is sent, what the server's pre-receive would refuse."""
    import pygit2
    stdin = stdin or _pre_commit_push_line()
    lines = [(roid, loid, rref) for _lref, loid, rref, roid in _lines(stdin, 4) if _relevant(rref)]
    if not lines:
        return 0
    repo = _open()
    remote = args[0] if args else "origin"
    updates: list[tuple[Any, str, str]] = []
    for roid, loid, rref in lines:
        old = None if roid == ZERO else pygit2.Oid(hex=roid)
        if old is not None and old not in repo:
            return _refuse("pre-push", f"{remote}'s {rref} is at {roid[:12]}, which this clone "
                           "does not have: fetch (`git liza pull`) first")
        updates.append((old, loid, rref))
    refused = _judge(_store(repo), updates, pending_merges=False, rewind_ok=False)
    return _refuse("pre-push", f"{refused[0][0]}: {refused[0][1]}") if refused else 0


# -- server hook ----------------------------------------------------------------------------------
def pre_receive(args: list[str], stdin: bytes) -> int:
    """The enforcing hook. Every refs/liza/* update must be a fast-forward and, for the state ref,
    replay commit by commit; the integration branch may only receive approved work, judged against
    the board as it will be after this push (so the state ref is checked first). One line per
    refused ref; any refusal refuses the whole push (pre-receive is all or nothing)."""
    import pygit2
    updates = [(None if o == ZERO else pygit2.Oid(hex=o), n, r) for o, n, r in _lines(stdin, 3)]
    if not updates:
        return 0
    repo = _open(server=True)
    refused = _judge(_store(repo), updates, pending_merges=False, rewind_ok=False,
                     latest=_latest_allowed(repo))
    for ref, why in refused:
        print(f"gitliza: refused {ref}: {' '.join(why.split())}", file=sys.stderr)
    return 1 if refused else 0


# Every hook any released shim may call must stay here, even after the installer stops installing
# it: an old shim left in a hooks dir would otherwise fail with "unknown hook" and block the user.
HOOK_HANDLERS: dict[str, HookHandler] = {
    "pre-commit": pre_commit,
    "pre-merge-commit": pre_merge_commit,
    "reference-transaction": reference_transaction,
    "pre-push": pre_push,
    "pre-receive": pre_receive,
}


def main(args: list[str]) -> int:
    """Run the handler for `args[0]` with the remaining arguments; return the hook's exit status."""
    if not args:
        print("gitliza hook-impl: missing hook name (usage: hook-impl <hook> [args...])",
              file=sys.stderr)
        return 1
    hook, rest = args[0], args[1:]
    handler = HOOK_HANDLERS.get(hook)
    if handler is None:
        print(f"gitliza hook-impl: unknown hook {hook!r} (known: {', '.join(HOOK_HANDLERS)})",
              file=sys.stderr)
        return 1
    stdin = _read_stdin()
    trace = os.environ.get("GITLIZA_HOOK_TRACE")
    if trace:
        digest = hashlib.sha256(stdin).hexdigest()
        with open(trace, "a", encoding="utf-8") as f:
            f.write(" ".join([hook, *rest, f"stdin={digest}"]) + "\n")
    try:
        return handler(rest, stdin)
    except LizaError as err:
        # A board the hook cannot read (malformed blob, unknown format) is a refusal too: one line.
        print(f"gitliza {hook}: {err}", file=sys.stderr)
        return err.exit_code


def _read_stdin() -> bytes:
    # git gives most hooks /dev/null and pipes the update list to the others. A terminal means
    # somebody ran the hook by hand: do not wait for input that is not coming.
    if sys.stdin is None or sys.stdin.isatty():
        return b""
    return sys.stdin.buffer.read()
