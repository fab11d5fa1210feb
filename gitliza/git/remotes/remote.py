"""Which remote to sync with, and where its refs are mirrored here.

The one answer to "which remote": an argument, else `git config liza.remote`, else its alias
`sync.remote`, else `origin` (`resolve`); a clone with either key set shares its board by itself
(auto-sync: `configured`). A remote may be a configured remote, a URL, or the path of a repository
on this machine; it is resolved once, and the `Remote` value travels down sync and the transport.
Each gets a namespace of tracking refs: `refs/remotes/<ns>/liza/*` mirrors the remote's board
refs, `refs/remotes/<ns>/liza-tasks/*` its task branches, `refs/remotes/<ns>/<branch>` its
integration branch. Local reads (remotes,
config, refs) go through libgit2 in process: only fetch and push run git (transport.py).
"""
from __future__ import annotations

import os
import re
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from gitliza.errors import GitFailure, ValidationError

STATE_REF = "refs/liza/state"
BOARD_PREFIX = "refs/liza/"
HEADS = "refs/heads/"
TASK_BRANCHES = "refs/heads/liza/"  # task branches liza/<task>
# Tracking of the remote's task branches: refs/remotes/<ns>/liza-tasks/<task>. Not
# refs/remotes/<ns>/liza/<task>, which is where the board refs (refs/liza/*) are tracked.
TASKS_NAMESPACE = "liza-tasks"
CONFIG_KEY = "liza.remote"  # `git config liza.remote <name-or-url>`: the default sync remote
ALIAS_KEY = "sync.remote"  # its alias (the name); `liza.remote` wins
DEFAULT_REMOTE = "origin"


@dataclass(frozen=True)
class Remote:
    arg: str  # what git gets on its command line
    namespace: str  # refs/remotes/<namespace>/liza/* holds its tracking refs


# Local reads (remotes, config, refs, ancestry) go through libgit2 in process: a git process per
# read cost a sync more than its own work; only fetch and push run git.
def local_repo(repo_path: Path | str) -> Any:
    import pygit2  # here, for start-up: importing this module for its names needs no libgit2
    try:
        return pygit2.Repository(str(repo_path))
    except pygit2.GitError as e:
        raise GitFailure(f"cannot read the git repository at {repo_path}: {e}") from None


def configured(repo: Any) -> str | None:
    """`git config liza.remote`, else `git config sync.remote`, else None: the remote this clone
    shares its board with by itself (auto-sync). An empty value counts as unset, an unreadable
    config as none (no auto-sync rather than a failing command). `repo`: a pygit2 Repository.

    Read with pygit2 (no process): auto-sync asks this after every mutating command."""
    found = _configured(repo)
    return None if found is None else found[1]


def _configured(repo: Any) -> tuple[str, str] | None:
    import pygit2
    try:
        cfg = repo.config
    except pygit2.GitError:
        return None
    for key in (CONFIG_KEY, ALIAS_KEY):
        try:
            value = str(cfg[key]).strip()
        except (KeyError, pygit2.GitError):
            continue
        if value:
            return key, value
    return None


def _is_url(name: str) -> bool:
    # git's own rule: "scheme://..." or scp-like "host:path" (a colon before any slash).
    if "://" in name:
        return True
    colon, slash = name.find(":"), name.find("/")
    return colon > 0 and (slash == -1 or colon < slash)


def _url_namespace(url: str) -> str:
    # A URL cannot be a ref component; a short hash is stable and cannot clash with a sane remote name.
    import hashlib
    return "liza-url-" + hashlib.sha256(url.encode()).hexdigest()[:16]


def resolve(repo_path: Path | str, remote: Remote | str | None = None) -> Remote:
    """The remote to sync with: `remote`, else `git config liza.remote`, else `sync.remote`, else
    `origin`; validated. A `Remote` (resolved before) is returned as it is: resolve once, at the
    top of a sync, and carry the value down."""
    if isinstance(remote, Remote):
        return remote
    from gitliza.git.gitcmd import git_executable  # (start-up: `configured` needs no process)
    git_executable()  # transport needs git itself: say so before judging the remote's name
    repo = local_repo(repo_path)
    source = "argument"
    name = remote
    if name is None:
        found = _configured(repo)
        if found is not None:
            source, name = f"git config {found[0]}", found[1]
    if name is None:
        name, source = DEFAULT_REMOTE, "default"
    if not name.strip():
        raise ValidationError("empty remote name")
    if name in set(repo.remotes.names()):
        return Remote(name, name)
    if _is_url(name):
        return Remote(name, _url_namespace(name))
    path = Path(name).expanduser()
    path = path if path.is_absolute() else Path(repo_path, path)
    # Only what looks like a path is one (a folder named "origin" in the work tree is not a remote).
    if (name.startswith((".", "/", "~")) or os.sep in name) and path.exists():
        absolute = str(path.resolve())  # one spelling per repository, so one tracking namespace
        return Remote(absolute, _url_namespace(absolute))
    raise ValidationError(
        f"unknown remote {name!r} (from {source}): not a configured remote, a URL or an existing path",
        hint=f"`git remote add {name} <url>`, or `git config {CONFIG_KEY} <remote>`",
    )


def tracking_ref(remote: Remote, ref: str = STATE_REF) -> str:
    """The local ref that mirrors the remote's board `ref` (e.g. refs/remotes/origin/liza/state)."""
    check_board_ref(ref)
    return tracking_of(remote, ref)


def tracking_of(remote: Remote, ref: str) -> str:
    """refs/liza/x -> refs/remotes/<ns>/liza/x; refs/heads/liza/t -> refs/remotes/<ns>/liza-tasks/t;
    any other refs/heads/b -> refs/remotes/<ns>/b (what `git fetch <name>` writes too)."""
    if ref.startswith(BOARD_PREFIX):
        return f"refs/remotes/{remote.namespace}/liza/{ref[len(BOARD_PREFIX):]}"
    if ref.startswith(TASK_BRANCHES):
        return f"refs/remotes/{remote.namespace}/{TASKS_NAMESPACE}/{ref[len(TASK_BRANCHES):]}"
    if ref.startswith(HEADS):
        return f"refs/remotes/{remote.namespace}/{ref[len(HEADS):]}"
    raise ValidationError(f"no tracking ref for {ref!r}")


def check_board_ref(ref: str) -> None:
    if not ref.startswith(BOARD_PREFIX) or ref == BOARD_PREFIX:
        raise ValidationError(f"not a board ref: {ref!r} (must be under {BOARD_PREFIX})")


def read_ref(repo_path: Path | str, ref: str) -> str | None:
    """The oid a full ref name (refs/...) points at, or None."""
    found = local_repo(repo_path).references.get(ref)
    if found is None:
        return None
    try:
        return str(found.resolve().target)
    except (KeyError, ValueError):  # a dangling symbolic ref
        return None


def check_integration_name(branch: str) -> None:
    """The integration branch's tracking ref must not fall into the board's or the task branches'
    tracking namespaces (refs/remotes/<ns>/liza/..., refs/remotes/<ns>/liza-tasks/...)."""
    if (not branch or branch.startswith(("liza/", f"{TASKS_NAMESPACE}/", "refs/"))
            or not re.fullmatch(r"[A-Za-z0-9._/-]+", branch) or ".." in branch
            or branch.endswith((".lock", "/", ".")) or branch.startswith(("-", "/"))):
        raise ValidationError(f"integration branch {branch!r} cannot be synced: it must be a plain "
                              "branch name outside liza/ and liza-tasks/")


def branch_tracking_ref(remote: Remote, branch: str) -> str:
    """The local ref mirroring the remote's branch: refs/remotes/<ns>/<branch> for the integration
    branch, refs/remotes/<ns>/liza-tasks/<task> for a task branch liza/<task>."""
    ref = branch if branch.startswith(HEADS) else HEADS + branch
    return tracking_of(remote, ref)
