"""The board's fetch and push done in process, for a remote that is a plain bare repository on this
machine (a path or a file:// URL, the common set-up of several clones on one host).

    remote = direct.open_remote(local_repo, url)      # None: use the git executable
    direct.fetch(local_repo, remote, wants)           # None: it needs git (objects we lack)
    direct.push(local_repo, remote, ref, new, expected)

Why: the board moves a handful of objects per op, and through git a sync that brings one op and
sends one costs thirteen processes (fetch, upload-pack, pack-objects, unpack-objects, the
connectivity rev-list, maintenance; push, receive-pack, pack-objects, unpack-objects, rev-list,
for-each-ref, gc): ~50 ms of process start-ups on a small machine, four times what git itself needs
to exchange nothing. Here the same work is a few object copies and ref updates: milliseconds.

When: only where git would do nothing more than that (`open_remote`). The remote must be a bare
repository owned by this user, with none of the hooks receive-pack runs (the server's gitliza
pre-receive judges every push: a guarded remote always goes through git) and no configuration that
changes what receive-pack or upload-pack do (receive.*, transfer.*, uploadpack.*, core.hooksPath,
core.sharedRepository, url rewriting, a custom receive-pack or upload-pack command, a separate
push URL). Anything else, or anything beyond the board's own linear chain of commits (a branch
whose objects this side lacks, a merge commit), and the caller uses git: nothing here is a
second implementation of git's transport, only of its simplest case.

Same guarantees as git's: the objects go first (one pack, gitliza/git/objects/packfile.py), then the ref
moves by compare-and-swap under the ref's lock file, the lock git's receive-pack takes too, so
an in-process push and a git push of the same ref exclude each other. The lease of a push is the
remote ref's value (`expected`), checked under that lock; a remote that already has `new` is up to
date, as for git. Objects of a lost race stay as unreachable garbage, as after a failed git push.
"""
from __future__ import annotations

import os
from dataclasses import dataclass
from pathlib import Path

import pygit2

from gitliza.errors import LizaError
from gitliza.git import refdelete
from gitliza.git.objects import ownstore
from gitliza.git.objects import packfile
from gitliza.git.objects import packs
from gitliza.git.repository import common_dir
from gitliza.git.objects.trees import TREE_HEAD, Entries, parse, parsed

# Hooks receive-pack runs in the remote (githooks(5)); any of them means "use git".
RECEIVE_HOOKS = ("pre-receive", "update", "post-receive", "post-update", "reference-transaction",
                 "proc-receive", "push-to-checkout")
# Configuration (the remote's, with the global and system files) that changes a transfer.
GUARDED_SECTIONS = ("receive.", "transfer.", "uploadpack.", "url.", "extensions.", "protocol.")
GUARDED_KEYS = ("core.hookspath", "core.sharedrepository", "core.alternaterefscommand",
                "core.alternaterefsprefixes")
# The same for this clone's side of a fetch (objects checked as they arrive).
LOCAL_GUARDED = ("transfer.", "fetch.fsck", "url.", "protocol.", "extensions.objectformat",
                 "extensions.refstorage")
GITLINK = b"160000 "
_KINDS = {pygit2.GIT_OBJECT_COMMIT: b"commit", pygit2.GIT_OBJECT_TREE: b"tree",
          pygit2.GIT_OBJECT_BLOB: b"blob"}


# --------------------------------------------------------------------------------------------------
# Which remotes


def remote_path(local: pygit2.Repository, cwd: Path, remote: str) -> Path | None:
    """The directory `remote` (a configured remote's name, a path or a file:// URL) designates,
    when it is one git would reach on this machine with its local transport and nothing else."""
    url = remote
    if remote in local.remotes.names():
        cfg = local.config
        name = f"remote.{remote}"
        if any(f"{name}.{k}" in cfg for k in ("pushurl", "receivepack", "uploadpack", "vcs",
                                               "proxy")):
            return None
        try:
            urls = list(cfg.get_multivar(f"{name}.url"))
        except (KeyError, pygit2.GitError):
            return None
        if len(urls) != 1 or urls[0] is None:  # several URLs: git pushes to each
            return None
        url = str(urls[0])
    if url.startswith("file://"):
        url = url[len("file://"):]
        if not url.startswith("/"):
            return None
    elif "://" in url or (":" in url.split("/", 1)[0]):  # another scheme, or scp-like host:path
        return None
    path = Path(url).expanduser()
    return path if path.is_absolute() else cwd / path


def open_remote(local: pygit2.Repository, cwd: Path, remote: str) -> pygit2.Repository | None:
    """The remote repository, opened in process, when a fetch or push of the board through git
    would only copy objects and move refs there (module docstring); None otherwise."""
    path = remote_path(local, cwd, remote)
    if path is None or _guarded(local, LOCAL_GUARDED, ()):
        return None
    try:
        if path.stat().st_uid != os.getuid():  # git's safe.directory rule: let git judge it
            return None
        repo = pygit2.Repository(str(path), pygit2.enums.RepositoryOpenFlag.NO_SEARCH
                                 | pygit2.enums.RepositoryOpenFlag.BARE)
    except (OSError, pygit2.GitError):
        return None
    if not repo.is_bare or Path(repo.path).resolve() != path.resolve():
        return None
    if packs.objects_dir(repo) is None or repo.is_shallow:
        return None
    hooks = Path(repo.path, "hooks")
    if any(os.access(hooks / h, os.X_OK) for h in RECEIVE_HOOKS):
        return None
    if _guarded(repo, GUARDED_SECTIONS, GUARDED_KEYS):
        return None
    if _foreign_alternates(packs.objects_dir(repo) or ""):
        return None  # objects may live elsewhere: git knows how to write there
    return repo


def _foreign_alternates(objects_dir: str) -> bool:
    """Whether the repository borrows objects from elsewhere than its own gitliza store
    (ownstore.py), which is its own as much as objects/ is."""
    try:
        with open(os.path.join(objects_dir, "info", "alternates"), encoding="utf-8") as f:
            lines = [ln.strip() for ln in f if ln.strip() and not ln.startswith("#")]
    except FileNotFoundError:
        return False
    except OSError:
        return True
    own = os.path.realpath(ownstore.store_of(objects_dir))
    return any(os.path.realpath(os.path.join(objects_dir, ln)) != own for ln in lines)


def _guarded(repo: pygit2.Repository, prefixes: tuple[str, ...], keys: tuple[str, ...]) -> bool:
    """Whether the configuration git would read in `repo` sets any of these: the repository's file,
    the user's and the system's, found the way git finds them (libgit2 does not know
    GIT_CONFIG_GLOBAL and fixes $HOME when loaded), and any `git -c` passed down in the
    environment, which could set anything."""
    env = os.environ
    if env.get("GIT_CONFIG_PARAMETERS") or env.get("GIT_CONFIG_COUNT") \
            or "GIT_ALLOW_PROTOCOL" in env:
        return True
    home = Path(env.get("HOME", "~")).expanduser()
    xdg = Path(env["XDG_CONFIG_HOME"]) if env.get("XDG_CONFIG_HOME") else home / ".config"
    files = [common_dir(repo) / "config", Path(env.get("GIT_CONFIG_GLOBAL") or home / ".gitconfig"),
             xdg / "git" / "config"]
    if not env.get("GIT_CONFIG_NOSYSTEM"):
        files.append(Path(env.get("GIT_CONFIG_SYSTEM") or "/etc/gitconfig"))
    for f in files:
        if not f.is_file():
            continue
        try:
            names = [e.name.lower() for e in pygit2.Config(str(f))]
        except pygit2.GitError:
            return True  # git would read it; let git say what it makes of it
        if any(n.startswith(prefixes) or n in keys for n in names):
            return True
    return False


# --------------------------------------------------------------------------------------------------
# Objects


class NeedsGit(Exception):
    """The objects to copy are not the board's linear chain: let git do the transfer."""


PROBE_EVERY = 256  # commits walked between two "does the other side have it?" lookups


def _missing_chain(src: pygit2.Repository, dst: pygit2.Repository, tip: pygit2.Oid,
                   haves: set[pygit2.Oid], limit: int) -> list[pygit2.Commit]:
    """The commits from `tip` back to one `dst` has, oldest first; linear only.

    The walk stops at `haves` (commits `dst` is known to have: its tips), not at every commit that
    `dst` has: asking libgit2 for an object it lacks rescans the pack directory, ~1 ms each with
    the packs a busy board has, so a thousand missing commits would cost a second. A lookup every
    PROBE_EVERY commits still stops a walk that went past what `dst` has (a rewound remote)."""
    chain: list[pygit2.Commit] = []
    oid: pygit2.Oid | None = tip
    while oid is not None and oid not in haves:
        if len(chain) % PROBE_EVERY == 0 and oid in dst:  # the tip first: it may be there
            break
        commit = src.get(oid)
        if not isinstance(commit, pygit2.Commit) or len(commit.parent_ids) > 1 \
                or len(chain) >= limit:
            raise NeedsGit()
        chain.append(commit)
        oid = commit.parent_ids[0] if commit.parent_ids else None
    chain.reverse()
    return chain


def tree_objects(src: pygit2.Repository, new: bytes, old: bytes | None,
                 out: dict[bytes, packfile.Obj], *, board: bool = True) -> None:
    """Every object of tree `new` that tree `old` (complete on the other side) lacks. `board`:
    the trees are the board's, parsed through the process's shared cache (the next replay reads
    them); False for any other tree (a merge of the user's code): parsed and let go, so that a
    merge does not keep a parsed copy of the project's trees, whose size grows with the project
    (a reviewer's cache held every recent version of a root tree with one file per merged
    task, 1.9 MB at the 300th task and growing)."""
    if new == old or new in out:
        return
    kind, body = src.odb.read(pygit2.Oid(raw=new))
    if kind != pygit2.GIT_OBJECT_TREE:
        raise NeedsGit()
    out[new] = (new, b"tree", body)
    read = parsed if board else _parse_only
    before: Entries = {}
    if old is not None:
        before = read(old, src.odb.read(pygit2.Oid(raw=old))[1]) if old not in out \
            else read(old, out[old][2])
    for name, (_key, head, raw) in read(new, body).items():
        prev = before.get(name)
        if prev is not None and prev[2] == raw:
            continue
        if head.startswith(TREE_HEAD):
            tree_objects(src, raw, prev[2] if prev is not None and prev[1].startswith(TREE_HEAD)
                          else None, out, board=board)
        elif head.startswith(GITLINK):
            continue  # a submodule's commit is not an object of this repository
        elif raw not in out:
            bkind, bbody = src.odb.read(pygit2.Oid(raw=raw))
            out[raw] = (raw, _KINDS.get(bkind, b"blob"), bbody)


def _parse_only(_raw: bytes, body: bytes) -> Entries:
    return parse(body)


def copy_chain(src: pygit2.Repository, dst: pygit2.Repository, tip: pygit2.Oid,
               haves: set[pygit2.Oid], limit: int = 100_000, *, durable: bool = False,
               own: bool = False) -> int:
    """Write into `dst`, as one pack, the objects of the commits from `tip` back to one of `haves`
    (commits `dst` has) or to one `dst` has: a linear chain, each commit's tree compared with its
    parent's, which `dst` has complete. Returns how many commits were copied. NeedsGit for
    anything else. `own`: into `dst`'s own store (a fetch into this clone: the objects are
    unreferenced until the tracking ref moves, and git's maintenance never prunes that store)."""
    chain = _missing_chain(src, dst, tip, haves, limit)
    if not chain:
        return 0
    objs: dict[bytes, packfile.Obj] = {}
    parent_tree: bytes | None = None
    if chain[0].parent_ids:
        first = src.get(chain[0].parent_ids[0])
        parent_tree = first.tree_id.raw if isinstance(first, pygit2.Commit) else None
    for commit in chain:
        tree = commit.tree_id.raw
        tree_objects(src, tree, parent_tree, objs)
        parent_tree = tree
        _kind, body = src.odb.read(commit.id)
        objs[commit.id.raw] = (commit.id.raw, b"commit", body)
    target = ownstore.target(dst) if own else packs.objects_dir(dst)
    if target is None:
        raise NeedsGit()
    # Into a shared remote, the pack reaches the disk before the ref can name it, as git's
    # receive-pack makes sure (core.fsync); a power loss must not leave the ref on a cut pack.
    packs.add(target, objs.values(), durable=durable)
    return len(chain)


# --------------------------------------------------------------------------------------------------
# Refs


def ref_names(repo: pygit2.Repository, prefix: str) -> set[str]:
    """The names of the refs under `prefix` (ending in "/"), as git's files backend stores them:
    the loose ref files under that directory and the lines of packed-refs. libgit2's iterator
    reads every loose ref of the repository instead, a file per task branch: 15 ms a sync at
    1,000 tasks, for the one or two refs under refs/liza/."""
    common = common_dir(repo)
    names: set[str] = set()
    for dirpath, _dirs, files in os.walk(common.joinpath(*prefix.rstrip("/").split("/"))):
        rel = Path(dirpath).relative_to(common).as_posix()
        names.update(f"{rel}/{f}" for f in files if not f.endswith(".lock"))
    try:
        with open(common / "packed-refs", "rb") as fh:
            for line in fh:
                if line[:1] not in (b"#", b"^"):
                    name = line.rstrip(b"\n").partition(b" ")[2].decode("utf-8", "replace")
                    if name.startswith(prefix):
                        names.add(name)
    except FileNotFoundError:
        pass
    return names


def refs_under(repo: pygit2.Repository, prefix: str) -> dict[str, str]:
    """Every ref under `prefix` (ending in "/"), peeled to its object id: name -> hex."""
    out: dict[str, str] = {}
    for name in ref_names(repo, prefix):
        try:
            ref = repo.references.get(name)
            if ref is not None:
                out[name] = str(ref.resolve().target)
        except (KeyError, ValueError, pygit2.GitError):
            continue  # gone meanwhile, or a dangling symbolic ref: git skips it too
    return out


@dataclass(frozen=True)
class Mirror:
    """One refspec of a fetch, as git's `+<src>:<dst>` (a prefix ending in "/" is a glob)."""

    src: str
    dst: str
    prune: bool = True  # a glob: remove the tracking refs the remote no longer has


def fetch(local: pygit2.Repository, remote: pygit2.Repository, mirrors: list[Mirror],
          chain_dst: str, haves: set[pygit2.Oid]) -> bool:
    """Mirror the remote's refs into the local tracking refs, like `git fetch --prune` with
    `+src:dst` refspecs. Only the objects of the ref mirrored to `chain_dst` (the board's linear
    chain) are copied, down to `haves` (commits this clone has); False, with nothing changed,
    when another ref needs objects this side lacks (use git)."""
    updates: dict[str, str | None] = {}
    for m in mirrors:
        if m.src.endswith("/"):
            theirs = {m.dst + n[len(m.src):]: oid for n, oid in refs_under(remote, m.src).items()}
            mine = refs_under(local, m.dst)
        else:
            got = remote.references.get(m.src)
            theirs = {}
            if got is not None:
                try:
                    theirs[m.dst] = str(got.resolve().target)
                except (KeyError, ValueError, pygit2.GitError):
                    pass
            found = local.references.get(m.dst)
            mine = {m.dst: str(found.target)} if found is not None else {}
        for dst, oid in theirs.items():
            if mine.get(dst) != oid:
                updates[dst] = oid
        if m.prune:
            updates.update({dst: None for dst in mine if dst not in theirs})
    for dst, want in updates.items():
        if want is not None and dst != chain_dst and pygit2.Oid(hex=want) not in local:
            return False
    chain = updates.get(chain_dst)
    if chain is not None:
        try:
            copy_chain(remote, local, pygit2.Oid(hex=chain), haves, own=True)
        except NeedsGit:
            return False
    # Removals first, as git's --prune does: a pruned refs/x/y frees the name refs/x.
    for dst, want in sorted(updates.items(), key=lambda u: u[1] is not None):
        try:
            if want is None:
                refdelete.delete(local, dst)  # git's, not libgit2's: git/refdelete.py
            else:
                local.references.create(dst, pygit2.Oid(hex=want), force=True)
        except (KeyError, pygit2.GitError, LizaError):
            # A concurrent fetch of this clone wrote or removed it: its value is as fresh as
            # ours. A ref that cannot be written at all (a name clash, permissions) is an error.
            if want is not None and local.references.get(dst) is None:
                raise
    return True


def push(local: pygit2.Repository, remote: pygit2.Repository, ref: str, new: str,
         expected: str | None) -> str:
    """Move the remote's `ref` from `expected` (None: must not exist) to `new`, copying the chain's
    objects first: "ok", "up-to-date" or "stale" (the remote's ref is not at `expected`).
    NeedsGit when the objects are not a linear chain the remote lacks."""
    cur = remote.references.get(ref)
    now = str(cur.resolve().target) if cur is not None else None
    if now == new:
        return "up-to-date"
    if now != expected:
        return "stale"
    copy_chain(local, remote, pygit2.Oid(hex=new),
               {pygit2.Oid(hex=expected)} if expected else set(), durable=True)
    try:
        if expected is None:
            remote.references.create(ref, pygit2.Oid(hex=new), force=False)
        else:
            if cur is None or cur.type != pygit2.enums.ReferenceType.DIRECT:
                raise NeedsGit()
            # libgit2 takes the ref's lock and checks the old value under it.
            cur.set_target(pygit2.Oid(hex=new), "push")
    except (pygit2.AlreadyExistsError, KeyError):
        return "stale"
    except (OSError, pygit2.GitError) as e:
        if "lock" in str(e) or "old reference value" in str(e) or "changed" in str(e):
            return "stale"  # another push holds or moved the ref: the caller fetches again
        raise
    return "ok"
