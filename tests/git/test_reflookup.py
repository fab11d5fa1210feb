"""pygit2's reference lookup keeps the name it is given (gitliza/git/reflookup.py): a process that
looks refs up by names it builds keeps nothing more for it, and a lookup answers as pygit2's own."""
from __future__ import annotations

import gc
import sys
from pathlib import Path

import pygit2
import pytest

from gitliza.git import reflookup

reflookup.install()  # as every long-lived process does (a ref watcher, the MCP server)
from tests.conftest import git

LOOKUPS = 20_000


def _blocks() -> int:
    gc.collect()
    return sys.getallocatedblocks()


def test_lookups_by_built_names_keep_nothing(repo: Path) -> None:
    git(repo, "branch", "task-1")
    r = pygit2.Repository(str(repo))
    branch = "task-1"
    for name, look in (("found", lambda: r.references.get(f"refs/heads/{branch}")),
                       ("missing", lambda: r.references.get(f"refs/heads/{branch}-gone")),
                       ("contains", lambda: f"refs/heads/{branch}" in r.references),
                       ("getitem", lambda: r.references[f"refs/heads/{branch}"]),
                       ("lookup", lambda: r.lookup_reference(f"refs/heads/{branch}"))):
        look()
        before = _blocks()
        for _ in range(LOOKUPS):
            look()
        # pygit2's own lookup keeps one string per call: 20,000 here.
        assert _blocks() - before < 100, name
    built = f"refs/heads/{branch}"
    held = sys.getrefcount(built)
    r.lookup_reference(built)
    with pytest.raises(KeyError):
        r.lookup_reference(built + "-gone")
    assert sys.getrefcount(built) == held


def test_a_lookup_answers_as_pygit2s_own(repo: Path) -> None:
    git(repo, "branch", "task-1")
    r = pygit2.Repository(str(repo))
    assert pygit2.repository.BaseRepository.lookup_reference is reflookup.lookup_reference
    tip = git(repo, "rev-parse", "task-1")
    assert str(r.references["refs/heads/task-1"].target) == tip
    assert r.lookup_reference("refs/heads/task-1").name == "refs/heads/task-1"
    assert r.references.get("refs/heads/none") is None
    assert "refs/heads/task-1" in r.references and "refs/heads/none" not in r.references
    for bad in ("refs/heads/..bad", "x", "HEAD~1"):
        with pytest.raises(pygit2.InvalidSpecError):
            r.lookup_reference(bad)
    with pytest.raises(TypeError):
        r.lookup_reference(None)  # type: ignore[arg-type]
    r.references.delete("refs/heads/task-1")
    assert git(repo, "branch", "--list", "task-1") == ""


def test_a_one_shot_command_does_not_install_it_and_a_watcher_does(repo: Path) -> None:
    """The wrapper costs ctypes' import (milliseconds of a command's start): only the processes
    that live long install it, every ref watcher among them."""
    import subprocess
    probe = """
import sys
from gitliza.__main__ import main
main(["status"])
print("ctypes" in sys.modules, "gitliza.git.reflookup" in sys.modules)
from gitliza.git.refwatch import RefWatcher
w = RefWatcher(".")
import pygit2.repository
from gitliza.git import reflookup
print(pygit2.repository.BaseRepository.lookup_reference is reflookup.lookup_reference)
"""
    r = subprocess.run([sys.executable, "-c", probe], cwd=repo, capture_output=True, text=True,
                       timeout=60)
    assert r.returncode == 0, r.stderr
    assert r.stdout.split()[-3:] == ["False", "False", "True"], r.stdout
