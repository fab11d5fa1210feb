"""Opening a repository, and where things are in it: the git common dir (what all worktrees
share), the main worktree, gitliza's `.liza/` there, and the commit a reference ends at.

The lowest layer of gitliza/git/: the object writer (packs.py), the board store, worktrees, merges
and the ref watcher all find these here, so none of them imports another for them.
"""
from __future__ import annotations

import os
from pathlib import Path

import pygit2
from pygit2 import Oid, Repository

from gitliza import atomic
from gitliza.errors import GitFailure, ValidationError


def common_dir(repo: pygit2.Repository) -> Path:
    """The git common dir (shared by all worktrees), where refs and their lock files live."""
    gitdir = Path(repo.path)
    marker = gitdir / "commondir"
    if marker.exists():
        return (gitdir / marker.read_text().strip()).resolve()
    return gitdir.resolve()


def repo_path(repo: pygit2.Repository) -> Path:
    """Where git runs for this repository (the work tree, or the git dir of a bare one)."""
    return Path(repo.workdir or repo.path)


def open_repository(path: str | os.PathLike[str] = ".") -> pygit2.Repository:
    try:
        found = pygit2.discover_repository(str(path))
    except pygit2.GitError as e:
        raise GitFailure(f"cannot read a git repository at {path}: {e}") from None
    if found is None:
        raise ValidationError(f"not a git repository: {Path(path).resolve()}",
                              hint="run gitliza inside a repository or one of its worktrees")
    try:
        return pygit2.Repository(found)
    except pygit2.GitError:
        # Codex's sandbox mounts an empty read-only `.git` (another filesystem) into every
        # writable root, a worktree's git dir included: opened by that git dir, libgit2 stops
        # at the mount and finds nothing. Opened from the worktree, it is found.
        return pygit2.Repository(str(path))


def reopened(repo: pygit2.Repository) -> pygit2.Repository:
    """A new handle on `repo`'s git dir, for the two things the open one cannot give: objects a
    git process just wrote (libgit2 lists a handle's packs and alternates when it opens, so a
    fetch into the repository or its own store is seen by a handle opened after it), and a
    handle for another thread (pygit2 objects are not shared between threads). Everything else
    is handed the repository that is already open."""
    return pygit2.Repository(repo.path)


def ref_oid(ref: pygit2.Reference) -> Oid:
    """The commit a (possibly symbolic) reference ends at."""
    target = ref.resolve().target
    if not isinstance(target, Oid):
        raise GitFailure(f"reference {ref.name} does not resolve to an object id")
    return target


def contains(repo: Repository, tip: Oid, commit: Oid) -> bool:
    """Whether `commit` is `tip` or one of its ancestors."""
    return bool(tip == commit or repo.descendant_of(tip, commit))


def main_repository(repo: Repository) -> Repository:
    """The repository opened at its common dir: the main one, whichever worktree `repo` is."""
    return Repository(str(common_dir(repo)))


# The human-facing files (views, reports, PAUSE/ABORT/CHECKPOINT), in the main worktree.
LIZA_DIR = ".liza"


def liza_path(repo: Repository) -> Path:
    """`<main worktree>/.liza` (`<git dir>/.liza` for a bare repository); not created here."""
    return (main_worktree(repo) or Path(repo.path)) / LIZA_DIR


def liza_dir(repo: Repository, *parts: str, private: bool = False) -> Path:
    """`<main worktree>/.liza[/parts...]` to write into, made if missing (`private`: 0700, for
    agent logs, prompts and MCP configs). A repository is someone else's input: a `.liza/` its
    HEAD tracks is refused (a clone would bring whatever was committed there, links to files
    outside included), and so is a link or a non-directory at any step (atomic.inside)."""
    main = main_repository(repo)
    root = Path(repo.path) if main.is_bare or main.workdir is None else Path(main.workdir)
    if not main.is_bare and _tracks_liza(main):
        raise ValidationError(f"{root / LIZA_DIR} is tracked by git in this repository; gitliza "
                              "keeps only its own files there and refuses to write into it",
                              hint=f"git rm -r --cached {LIZA_DIR} && git commit (then remove "
                              "what it held)")
    return atomic.inside(root.resolve(), LIZA_DIR, *parts,
                         mode=atomic.PRIVATE_DIR if private else 0o755)


def _tracks_liza(main: Repository) -> bool:
    """Whether the main worktree's HEAD commit has a `.liza` entry (of any kind)."""
    try:
        tree = main.head.peel(pygit2.Commit).tree
    except (pygit2.GitError, KeyError, ValueError):
        return False  # no commit yet
    return LIZA_DIR in tree


def main_worktree(repo: Repository) -> Path | None:
    """The main worktree's directory (task worktree paths on the board are relative to it), or
    None for a bare repository."""
    main = main_repository(repo)
    return None if main.is_bare or main.workdir is None else Path(main.workdir).resolve()


def ensure_excluded(common: Path, directory: str) -> bool:
    """Add `/<directory>/` to `<common-dir>/info/exclude` once, so that what gitliza keeps in the
    main worktree (`.worktrees/`, `.liza/`) stays out of every `git status` without touching a
    tracked .gitignore. Returns whether the line was added."""
    line = f"/{directory}/"
    exclude = common / "info" / "exclude"
    try:
        existing = exclude.read_text().strip()
    except (OSError, UnicodeDecodeError):
        existing = ""
    accepted = {line, line.rstrip("/"), directory, f"{directory}/"}
    if accepted & {ln.strip() for ln in existing.splitlines()}:
        return False
    exclude.parent.mkdir(parents=True, exist_ok=True)
    with exclude.open("a") as f:
        f.write(("\n" if existing and not existing.endswith("\n") else "") + line + "\n")
    return True
