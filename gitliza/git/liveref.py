"""`refs/liza/live/<agent-id>`: each agent's liveness, off the audit chain (core/presence/renewals.py).

The ref points at one small commit whose tree holds `live.toml` (a `Renewal`). Every renewal is a
new ROOT commit (no parent): nothing of an agent's past renewals is worth keeping (the board keeps
the protocol, and an op that judged a lease records the renewal it judged in its own args), so a
replaced renewal is unreachable at once and dropped a grace later (its objects are in gitliza's own
store, out of reach of the user's maintenance: git/liveobjects.py); a live "chain" is one commit
long.
The commit is authored by the agent at the renewal's time and signed with the agent's key where
this clone holds one (the same keys and code as a board commit). The ref is moved by
compare-and-swap; one agent has one writer at a time (its supervisor), so a lost race is retried
from the fresh value.

Readers merge the local refs with the copies sync fetched from the shared remote
(`refs/remotes/<ns>/liza/live/*`, the mirror of the remote's refs/liza/*): the newest renewal of
each agent wins (`liveness.newest`), and the core's rules ignore a stale or foreign one.
"""
from __future__ import annotations

import dataclasses
import sys
import time
from typing import Callable

import pygit2

from gitliza.core.encoding import tomlblob
from gitliza.core.clock import to_epoch
from gitliza.core.presence.renewals import LIVE_FILE, Renewal
from gitliza.errors import ConcurrencyConflict, GitFailure, InconsistentState, LizaError
from gitliza.git import liveobjects
from gitliza.git.memo import Generations
from gitliza.git.objects.packfile import object_id

LIVE_PREFIX = "refs/liza/live/"
LOCK_PAUSE = 0.005  # seconds, times the attempt: ~140 ms in all before a renewal gives up
REMOTES = "refs/remotes/"
# Live commit id -> its renewal (a commit never changes). Every renewal is a new commit, so a
# process reading the board (a supervisor, every second at heartbeat_interval 1) met a new id per
# agent per beat: a dict emptied at 4,096 entries grew by ~3 MB over 20 minutes of a three-agent
# team before its first emptying. Two generations of 256 hold every live ref a board
# read meets (one per agent) and drop the replaced renewals.
_decoded: Generations[str, tuple[Renewal | None]] = Generations(256)


def ref_of(agent: str) -> str:
    # Interned: pygit2 keeps a reference to every reference name it is given (docs/architecture.md,
    # "Long-lived processes"), so a name built afresh per lookup was one string kept per renewal.
    return sys.intern(LIVE_PREFIX + agent)


def encode(r: Renewal) -> bytes:
    return tomlblob.dumps(dataclasses.replace(r, commit=None))


def decode(blob: bytes, where: str) -> Renewal:
    r = tomlblob.loads(Renewal, blob, where)
    if r.commit is not None:
        raise InconsistentState(f"{where}: a live record must not name a commit")
    return r


def read(repo: pygit2.Repository, oid: pygit2.Oid | str) -> Renewal | None:
    """The renewal a live commit holds, or None when it is not a well-formed live commit (one
    `live.toml` and nothing else): someone's broken push counts as no renewal."""
    key = str(oid)
    cached = _decoded.get(key)
    if cached is not None:
        return cached[0]
    r: Renewal | None = None
    try:
        c = repo[key]
        tree = c.peel(pygit2.Tree)
        if isinstance(c, pygit2.Commit) and len(tree) == 1 and tree[0].name == LIVE_FILE \
                and not c.parents:
            blob = repo[tree[0].id]
            if isinstance(blob, pygit2.Blob):
                r = dataclasses.replace(decode(blob.data, f"{key[:12]}:{LIVE_FILE}"),
                                        commit=key)
    except (KeyError, ValueError, pygit2.GitError, LizaError):
        r = None
    _decoded[key] = (r,)
    return r


def tips(repo: pygit2.Repository) -> dict[str, str]:
    """Every live ref here, local and mirrored from remotes: ref name -> commit id."""
    out: dict[str, str] = {}
    for name in repo.references:
        # Interned, as ref_of: a board read lists the names afresh, and every name looked up was
        # one string kept (a few per board read, a supervisor reads it many times a task).
        name = sys.intern(name)
        if name.startswith(LIVE_PREFIX) or (name.startswith(REMOTES) and "/liza/live/" in name):
            try:
                out[name] = str(repo.references[name].resolve().target)
            except (KeyError, pygit2.GitError):
                continue
    return out


def read_all(repo: pygit2.Repository) -> list[Renewal]:
    """The renewals of every live ref here (local ones and the remotes' copies); a ref whose
    name does not match its record's agent is ignored (a record moved to another agent's name)."""
    out = []
    for name, oid in tips(repo).items():
        r = read(repo, oid)
        if r is not None and name.rsplit("/", 1)[-1] == r.agent:
            out.append(r)
    return out


def target(repo: pygit2.Repository, name: str) -> str | None:
    """The commit id ref `name` points at, or None."""
    try:
        return str(repo.references[name].resolve().target)
    except (KeyError, pygit2.GitError):
        return None


def local(repo: pygit2.Repository, agent: str) -> Renewal | None:
    try:
        oid = repo.references[ref_of(agent)].target
    except (KeyError, pygit2.GitError):
        return None
    return read(repo, oid)


def commit_body(tree: pygit2.Oid, r: Renewal) -> bytes:
    who = f"{r.agent} <{r.agent}@liza.invalid> {max(0, to_epoch(r.heartbeat))} +0000"
    what = f"live {r.agent}: heartbeat {r.heartbeat}" + (
        f" on {r.task}" if r.task else "") + (
        f", generation {r.generation}" if r.generation is not None else "")
    return f"tree {tree}\nauthor {who}\ncommitter {who}\n\n{what}\n".encode()


Objects = list[tuple[bytes, bytes]]  # (object type, raw content), the commit last
_TYPES = {b"blob": pygit2.enums.ObjectType.BLOB, b"tree": pygit2.enums.ObjectType.TREE,
          b"commit": pygit2.enums.ObjectType.COMMIT}


def _objects(r: Renewal, sign: Callable[[bytes, str], bytes]) -> Objects:
    """The blob, the tree (git's tree format: one entry) and the signed commit of renewal `r`."""
    blob = encode(r)
    tree = b"100644 " + LIVE_FILE.encode() + b"\0" + object_id(b"blob", blob)
    body = sign(commit_body(pygit2.Oid(raw=object_id(b"tree", tree)), r), r.agent)
    return [(b"blob", blob), (b"tree", tree), (b"commit", body)]


def _store(repo: pygit2.Repository, objects: Objects,
           odb: pygit2.Odb | None = None) -> pygit2.Oid:
    """Write the objects (loose, into `odb`: the own store; else where the repository writes);
    the id of the last one, the commit."""
    oid = None
    if odb is None:
        for kind, data in objects:
            oid = repo.odb.write(_TYPES[kind], data)
    else:
        with liveobjects.LOCK:
            for kind, data in objects:
                oid = odb.write(_TYPES[kind], data)
    assert oid is not None
    return oid


def write(repo: pygit2.Repository, agent: str, make: Callable[[Renewal | None], Renewal],
          sign: Callable[[bytes, str], bytes], attempts: int = 8) -> Renewal:
    """Write `agent`'s renewal `make(current)` (`current`: its ref's record now) as a new root commit,
    signed by `sign`, and move the agent's ref to it by compare-and-swap; a lost race is retried
    from the fresh record. Returns the renewal written, with its commit."""
    for attempt in range(attempts):
        ref = ref_of(agent)
        try:
            target = repo.references[ref].target
            old: pygit2.Oid | None = target if isinstance(target, pygit2.Oid) else None
        except KeyError:
            old = None
        r = make(read(repo, old) if old is not None else None)
        if r.agent != agent:
            raise ValueError(f"a renewal of {r.agent} on {ref}")
        objects = _objects(r, sign)
        own = liveobjects.store(repo)
        oid = _store(repo, objects, own[1] if own else None)
        if own is not None:  # journaled before the ref names them: a lost race is swept too
            now = time.time()
            liveobjects.note(repo, [str(pygit2.Oid(raw=object_id(k, d))) for k, d in objects],
                             now)
        try:
            if old is None:
                repo.create_reference(ref, oid, force=False, message="liza live: renew")
            else:
                cur = repo.lookup_reference(ref)
                if cur.target != old:
                    continue
                cur.set_target(oid, "liza live: renew")
        except (pygit2.AlreadyExistsError, KeyError):
            continue
        except (pygit2.GitError, OSError) as e:
            if "does not match" in str(e) or "changed" in str(e):
                continue
            if "lock" in str(e):
                # Another git holds the ref's lock: the user's `git gc` packing refs (libgit2
                # says so as an OSError). Waited for as git waits (core.filesRefLockTimeout,
                # 100 ms), not failed: a renewal failed in a loop gives its task up.
                time.sleep(LOCK_PAUSE * (attempt + 1))
                continue
            raise GitFailure(f"cannot update {ref}: {e}") from None
        if own is not None:
            # In the own store (git/liveobjects.py): no prune of the user's ever deletes them;
            # gitliza drops them itself a grace after a newer renewal replaced them.
            if liveobjects.sweep_due(repo, now):
                liveobjects.sweep(repo, set(tips(repo).values()), now)
        else:
            # A hook's quarantine: where the repository writes, as git says. Written again now
            # that the ref names them, should a concurrent prune have taken them meanwhile.
            _store(repo, objects)
        return dataclasses.replace(r, commit=str(oid))
    raise ConcurrencyConflict(f"refs/liza/live/ kept moving under this renewal: gave up after "
                              f"{attempts} attempts", hint="the next heartbeat tries again")
