"""What a task's page reads besides the board: its spec from the integration branch, the review
diff `base_commit..review_commit` file by file, the agent logs of its runs. Everything shown passes
`redact`, so a private key that ends up in a diff, a spec or a log is never put on a page."""
from __future__ import annotations

import re
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

import pygit2

from gitliza.git import treepath

if TYPE_CHECKING:
    from gitliza.services.api import Liza

MAX_FILES = 200            # files of one diff shown
MAX_PATCH = 200_000        # characters of one file's patch shown
TAIL = 64 * 1024           # bytes of an agent log shown before it streams
_PRIVATE = re.compile(r"-----BEGIN ([A-Z0-9 ]*)PRIVATE KEY-----.*?(-----END \1PRIVATE KEY-----|\Z)",
                      re.S)
HIDDEN = "[private key hidden by gitliza web]"


def redact(text: str) -> str:
    """Any PEM/OpenSSH private key block (even one cut off by a tail) replaced by a marker."""
    return _PRIVATE.sub(HIDDEN, text) if "PRIVATE KEY-----" in text else text


def spec_text(repo: pygit2.Repository, branch: str, spec_ref: str | None) -> str | None:
    """The spec file `spec_ref` names (`path` or `path#section`) on the integration branch."""
    if not spec_ref:
        return None
    path = spec_ref.split("#", 1)[0]
    try:
        tip = repo.lookup_reference(f"refs/heads/{branch}").peel(pygit2.Commit)
        blob = repo[treepath.entry(tip.tree, path).id]
    except (KeyError, ValueError, pygit2.GitError):
        return None
    if not isinstance(blob, pygit2.Blob) or blob.is_binary:
        return None
    return redact(blob.data.decode("utf-8", "replace"))


@dataclass
class FileDiff:
    path: str
    status: str          # added | deleted | modified | renamed ...
    additions: int
    deletions: int
    patch: str           # the unified diff of this file, redacted
    binary: bool = False
    cut: bool = False


def review_diff(repo: pygit2.Repository, base: str | None, review: str | None
                ) -> tuple[list[FileDiff], str | None]:
    """The files `base..review` changes, or ([], why there is nothing to show)."""
    if not base or not review:
        return [], "no review commit yet" if not review else "no base commit"
    try:
        a = repo.revparse_single(base).peel(pygit2.Commit)
        b = repo.revparse_single(review).peel(pygit2.Commit)
    except (KeyError, ValueError, pygit2.GitError):
        return [], f"{base[:12]}..{review[:12]} is not in this repository (fetch it)"
    diff = repo.diff(a, b, context_lines=3)
    diff.find_similar()
    files: list[FileDiff] = []
    for patch in list(diff)[:MAX_FILES]:
        if patch is None:
            continue
        d = patch.delta
        _, adds, dels = patch.line_stats
        text = "" if d.is_binary else redact(patch.text or "")
        files.append(FileDiff(d.new_file.path if d.status_char() != "D" else d.old_file.path,
                              _STATUS.get(d.status_char(), d.status_char()), adds, dels,
                              text[:MAX_PATCH], bool(d.is_binary), len(text) > MAX_PATCH))
    return files, None


_STATUS = {"A": "added", "D": "deleted", "M": "modified", "R": "renamed", "C": "copied",
           "T": "type changed"}


def log_tail(path: Path, limit: int = TAIL) -> tuple[str, int]:
    """The last `limit` bytes of a log (from a line start) and the size read up to."""
    with open(path, "rb") as f:
        f.seek(0, 2)
        size = f.tell()
        f.seek(max(0, size - limit))
        data = f.read(size - f.tell() if size > limit else size)
    if size > limit:
        data = data.split(b"\n", 1)[-1]
    return redact(data.decode("utf-8", "replace")), size


def log_files(liza: Liza, task: str) -> list[Path]:
    from gitliza.services.views.data import agent_logs
    return [Path(p) for p in agent_logs(liza, task)]
