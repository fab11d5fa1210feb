"""Task worktrees against real repositories, real worktrees and the real git executable."""
from __future__ import annotations

import os
import subprocess
import sys
import threading
from pathlib import Path

import pygit2
import pytest

from gitliza.errors import ConcurrencyConflict, GitFailure, ValidationError
from gitliza.git.checkouts import clean_sync_problems, worktree_head
from gitliza.git.worktrees.admin import LOCK_FILE, worktree_mutex
from gitliza.git.worktrees.listing import list_task_branches, list_task_worktrees
from gitliza.git.worktrees.tasktrees import (add_task_worktree, contained_path,
                                             remove_task_worktree, temporary_checkout)
from tests.conftest import git

REPO_ROOT = Path(__file__).resolve().parents[2]


def open_repo(path: Path) -> pygit2.Repository:
    return pygit2.Repository(str(path))


def head_of(path: Path) -> pygit2.Oid:
    return pygit2.Oid(hex=git(path, "rev-parse", "HEAD"))


def worktree_list(path: Path) -> dict[Path, str]:
    """`git worktree list --porcelain` as {path: branch or 'detached'}."""
    out: dict[Path, str] = {}
    current: Path | None = None
    for line in git(path, "worktree", "list", "--porcelain").splitlines():
        if line.startswith("worktree "):
            current = Path(line[len("worktree "):]).resolve()
            out[current] = "?"
        elif current is not None and line.startswith("branch "):
            out[current] = line[len("branch "):]
        elif current is not None and line == "detached":
            out[current] = "detached"
    return out


def commit_in(path: Path, name: str, content: str) -> None:
    (path / name).write_text(content)
    git(path, "add", name)
    git(path, "commit", "-q", "-m", f"write {name}")


# --------------------------------------------------------------------------- containment


@pytest.mark.parametrize("rel", ["a", "a/b/c", "", ".", "./a", "not/yet/existing"])
def test_contained_path_accepts_descendants(tmp_path: Path, rel: str) -> None:
    result = contained_path(tmp_path, rel)
    assert result == (tmp_path / rel).resolve()
    assert result.is_relative_to(tmp_path.resolve())


@pytest.mark.parametrize("rel", ["../x", "a/../../x", "a/../b", "..", "/etc/passwd", Path("/tmp")])
def test_contained_path_rejects_absolute_and_dotdot(tmp_path: Path, rel: str | Path) -> None:
    with pytest.raises(ValidationError):
        contained_path(tmp_path / "root", rel)


def test_contained_path_rejects_symlink_escape(tmp_path: Path) -> None:
    root, outside = tmp_path / "root", tmp_path / "outside"
    root.mkdir()
    outside.mkdir()
    (root / "link").symlink_to(outside)
    (root / "inner").symlink_to(root / "real")
    with pytest.raises(ValidationError, match="outside"):
        contained_path(root, "link/file")
    assert contained_path(root, "inner/file") == (root / "real" / "file").resolve()


@pytest.mark.parametrize("task_id", ["../x", "/abs", "a/b", ".", "..", "", "x..y", "x.lock", "a\\b"])
def test_add_rejects_task_ids_that_are_not_one_safe_component(repo: Path, tmp_path: Path, task_id: str) -> None:
    with pytest.raises(ValidationError):
        add_task_worktree(open_repo(repo), task_id, head_of(repo))
    with pytest.raises(ValidationError):
        remove_task_worktree(open_repo(repo), task_id)
    assert not (repo / ".worktrees").exists() or not any((repo / ".worktrees").iterdir())
    assert list_task_branches(open_repo(repo)) == {}
    assert not (tmp_path / "x").exists() and not Path("/abs").exists()


def test_symlinked_worktrees_dir_pointing_outside_is_rejected(repo: Path, tmp_path: Path) -> None:
    outside = tmp_path / "elsewhere"
    outside.mkdir()
    (repo / ".worktrees").symlink_to(outside)
    with pytest.raises(ValidationError, match="outside"):
        add_task_worktree(open_repo(repo), "t-1", head_of(repo))
    with pytest.raises(ValidationError):
        remove_task_worktree(open_repo(repo), "t-1")
    assert list(outside.iterdir()) == []
    assert "refs/heads/liza/t-1" not in open_repo(repo).references


def test_symlinked_worktrees_dir_pointing_inside_is_rejected(repo: Path) -> None:
    (repo / "src").mkdir()
    (repo / ".worktrees").symlink_to(repo / "src")
    with pytest.raises(ValidationError, match="symlink"):
        add_task_worktree(open_repo(repo), "t-1", head_of(repo))
    assert list((repo / "src").iterdir()) == []


def test_symlinked_task_dir_is_rejected(repo: Path, tmp_path: Path) -> None:
    (repo / ".worktrees").mkdir()
    (repo / ".worktrees" / "t-1").symlink_to(tmp_path)
    with pytest.raises(ValidationError):
        add_task_worktree(open_repo(repo), "t-1", head_of(repo))


# --------------------------------------------------------------------------- add / remove


def test_add_creates_branch_and_checkout(repo: Path) -> None:
    (repo / "sub").mkdir()
    (repo / "sub" / "tool.sh").write_text("#!/bin/sh\n")
    (repo / "sub" / "tool.sh").chmod(0o755)
    git(repo, "add", "sub")
    git(repo, "commit", "-q", "-m", "tool")
    base = head_of(repo)

    wt = add_task_worktree(open_repo(repo), "task-1", base)

    assert wt.path == (repo / ".worktrees" / "task-1").resolve()
    assert wt.rel == Path(".worktrees/task-1")
    assert (wt.branch, wt.ref, wt.head, wt.created) == ("liza/task-1", "refs/heads/liza/task-1", base, True)
    assert (wt.path / "README.md").read_text() == "project\n"
    assert os.access(wt.path / "sub" / "tool.sh", os.X_OK)
    assert git(repo, "rev-parse", "refs/heads/liza/task-1") == str(base)
    assert worktree_list(repo)[wt.path] == "refs/heads/liza/task-1"
    assert git(wt.path, "status", "--porcelain") == ""
    assert git(repo, "status", "--porcelain") == ""  # .worktrees/ is excluded
    assert worktree_head(wt.path) == base


def test_exclude_line_is_added_once(repo: Path) -> None:
    base = head_of(repo)
    add_task_worktree(open_repo(repo), "a", base)
    add_task_worktree(open_repo(repo), "b", base)
    lines = (repo / ".git" / "info" / "exclude").read_text().splitlines()
    assert lines.count("/.worktrees/") == 1


def test_existing_exclude_content_is_kept(repo: Path) -> None:
    exclude = repo / ".git" / "info" / "exclude"
    exclude.parent.mkdir(parents=True, exist_ok=True)
    exclude.write_text("*.tmp")  # no trailing newline
    add_task_worktree(open_repo(repo), "a", head_of(repo))
    assert exclude.read_text().splitlines() == ["*.tmp", "/.worktrees/"]


def test_add_from_inside_another_worktree_uses_main_worktree(repo: Path) -> None:
    base = head_of(repo)
    first = add_task_worktree(open_repo(repo), "first", base)
    second = add_task_worktree(open_repo(first.path), "second", base)
    assert second.path == (repo / ".worktrees" / "second").resolve()
    assert not (first.path / ".worktrees").exists()
    assert (repo / ".git" / LOCK_FILE).exists()  # the lock lives in the common dir
    assert worktree_list(repo)[second.path] == "refs/heads/liza/second"


def test_add_at_an_older_base(repo: Path) -> None:
    base = head_of(repo)
    commit_in(repo, "later.txt", "later\n")
    wt = add_task_worktree(open_repo(repo), "t", base)
    assert wt.head == base and not (wt.path / "later.txt").exists()


def test_add_rejects_a_base_that_is_not_a_commit(repo: Path) -> None:
    blob = open_repo(repo).create_blob(b"x")
    with pytest.raises(ValidationError, match="not a commit"):
        add_task_worktree(open_repo(repo), "t", blob)


def test_add_reuses_clean_leftover_at_same_base(repo: Path) -> None:
    base = head_of(repo)
    first = add_task_worktree(open_repo(repo), "t", base)
    (first.path / "ignored.log").write_text("build output\n")
    (first.path / ".gitignore").write_text("*.log\n")
    git(first.path, "add", ".gitignore")
    git(first.path, "commit", "-q", "-m", "ignore logs")  # branch moves: no longer at base
    with pytest.raises(ValidationError, match="already exists at"):
        add_task_worktree(open_repo(repo), "t", base)
    again = add_task_worktree(open_repo(repo), "t", head_of(first.path))
    assert (again.path, again.created) == (first.path, False)
    assert (again.path / "ignored.log").exists()


def test_add_refuses_dirty_leftover_and_fresh_replaces_it(repo: Path) -> None:
    base = head_of(repo)
    wt = add_task_worktree(open_repo(repo), "t", base)
    (wt.path / "README.md").write_text("half-done work\n")
    with pytest.raises(ValidationError, match="uncommitted changes"):
        add_task_worktree(open_repo(repo), "t", base)
    assert (wt.path / "README.md").read_text() == "half-done work\n"

    fresh = add_task_worktree(open_repo(repo), "t", base, fresh=True)
    assert fresh.created and (fresh.path / "README.md").read_text() == "project\n"


def test_fresh_moves_a_leftover_branch_back_to_base(repo: Path) -> None:
    base = head_of(repo)
    wt = add_task_worktree(open_repo(repo), "t", base)
    commit_in(wt.path, "work.txt", "work\n")
    fresh = add_task_worktree(open_repo(repo), "t", base, fresh=True)
    assert fresh.head == base and not (fresh.path / "work.txt").exists()
    assert git(repo, "rev-parse", "liza/t") == str(base)


def test_add_refuses_leftover_checkout_whose_branch_was_deleted(repo: Path) -> None:
    wt = add_task_worktree(open_repo(repo), "t", head_of(repo))
    git(repo, "update-ref", "-d", "refs/heads/liza/t")
    with pytest.raises(ValidationError, match="deleted"):
        add_task_worktree(open_repo(repo), "t", head_of(repo))
    assert add_task_worktree(open_repo(repo), "t", head_of(repo), fresh=True).path == wt.path


def test_add_refuses_leftover_checkout_on_another_branch(repo: Path) -> None:
    wt = add_task_worktree(open_repo(repo), "t", head_of(repo))
    git(wt.path, "switch", "-q", "-c", "side")
    git(repo, "branch", "-f", "liza/t", "main")
    with pytest.raises(ValidationError, match="refs/heads/side"):
        add_task_worktree(open_repo(repo), "t", head_of(repo))


def test_add_reuses_existing_branch_at_base_without_worktree(repo: Path) -> None:
    base = head_of(repo)
    git(repo, "branch", "liza/t", str(base))
    wt = add_task_worktree(open_repo(repo), "t", base)
    assert wt.created and worktree_list(repo)[wt.path] == "refs/heads/liza/t"


def test_add_recovers_when_directory_vanished(repo: Path) -> None:
    import shutil

    base = head_of(repo)
    wt = add_task_worktree(open_repo(repo), "t", base)
    shutil.rmtree(wt.path)
    again = add_task_worktree(open_repo(repo), "t", base)
    assert again.created and (again.path / "README.md").exists()
    assert git(again.path, "status", "--porcelain") == ""


def test_add_clears_empty_unregistered_dir_but_refuses_one_with_files(repo: Path) -> None:
    base = head_of(repo)
    (repo / ".worktrees" / "empty").mkdir(parents=True)
    assert add_task_worktree(open_repo(repo), "empty", base).created
    (repo / ".worktrees" / "junk").mkdir()
    (repo / ".worktrees" / "junk" / "notes.txt").write_text("mine\n")
    with pytest.raises(ValidationError, match="not a registered worktree"):
        add_task_worktree(open_repo(repo), "junk", base)
    assert (repo / ".worktrees" / "junk" / "notes.txt").exists()
    assert "refs/heads/liza/junk" not in open_repo(repo).references


def test_failed_add_leaves_no_admin_data_behind(repo: Path) -> None:
    base = head_of(repo)
    git(repo, "switch", "-q", "-c", "liza/t")  # the branch is busy in the main worktree
    with pytest.raises(GitFailure, match="already checked out"):
        add_task_worktree(open_repo(repo), "t", base)
    assert not (repo / ".git" / "worktrees" / "t").exists()
    assert not (repo / ".worktrees" / "t").exists()
    assert git(repo, "rev-parse", "--abbrev-ref", "HEAD") == "liza/t"  # a pre-existing branch is kept
    git(repo, "switch", "-q", "main")
    assert add_task_worktree(open_repo(repo), "t", base).created


def test_add_refuses_name_taken_by_a_foreign_worktree(repo: Path, tmp_path: Path) -> None:
    git(repo, "worktree", "add", "-q", "-b", "mine", str(tmp_path / "t"))
    with pytest.raises(ValidationError, match="taken"):
        add_task_worktree(open_repo(repo), "t", head_of(repo))
    assert (tmp_path / "t" / "README.md").exists()


def test_remove_deletes_directory_admin_data_and_branch(repo: Path) -> None:
    base = head_of(repo)
    wt = add_task_worktree(open_repo(repo), "t", base)
    (wt.path / "scratch.txt").write_text("untracked\n")
    remove_task_worktree(open_repo(repo), "t")
    assert not wt.path.exists()
    assert not (repo / ".git" / "worktrees" / "t").exists()
    assert "refs/heads/liza/t" not in open_repo(repo).references
    assert list(worktree_list(repo)) == [repo.resolve()]
    assert git(repo, "worktree", "prune", "--dry-run", "-v") == ""


def test_remove_is_idempotent(repo: Path) -> None:
    add_task_worktree(open_repo(repo), "t", head_of(repo))
    remove_task_worktree(open_repo(repo), "t")
    remove_task_worktree(open_repo(repo), "t")
    remove_task_worktree(open_repo(repo), "never-existed")


@pytest.mark.parametrize("gone", ["directory", "admin", "branch", "directory+admin"])
def test_remove_tolerates_parts_already_gone(repo: Path, gone: str) -> None:
    import shutil

    wt = add_task_worktree(open_repo(repo), "t", head_of(repo))
    if "directory" in gone:
        shutil.rmtree(wt.path)
    if "admin" in gone:
        shutil.rmtree(repo / ".git" / "worktrees" / "t")
    if gone == "branch":
        git(wt.path, "switch", "-q", "--detach")
        git(repo, "branch", "-D", "liza/t")
    remove_task_worktree(open_repo(repo), "t")
    assert not wt.path.exists() and not (repo / ".git" / "worktrees" / "t").exists()
    assert "refs/heads/liza/t" not in open_repo(repo).references
    assert list(worktree_list(repo)) == [repo.resolve()]


def test_remove_handles_read_only_files(repo: Path) -> None:
    wt = add_task_worktree(open_repo(repo), "t", head_of(repo))
    (wt.path / "ro").mkdir()
    (wt.path / "ro" / "f").write_text("x")
    (wt.path / "ro" / "f").chmod(0o444)
    (wt.path / "ro").chmod(0o555)
    remove_task_worktree(open_repo(repo), "t")
    assert not wt.path.exists()


def test_remove_refuses_to_orphan_a_checkout_of_the_branch_elsewhere(repo: Path) -> None:
    add_task_worktree(open_repo(repo), "t", head_of(repo))
    remove_task_worktree(open_repo(repo), "t")
    git(repo, "branch", "liza/t")
    git(repo, "switch", "-q", "liza/t")
    with pytest.raises(GitFailure, match="checked out"):
        remove_task_worktree(open_repo(repo), "t")
    assert git(repo, "rev-parse", "--abbrev-ref", "HEAD") == "liza/t"


# --------------------------------------------------------------------------- mutex


def test_mutex_excludes_a_second_holder(repo: Path) -> None:
    errors: list[BaseException] = []

    def contender() -> None:
        try:
            with worktree_mutex(open_repo(repo), timeout=0):
                pass
        except ConcurrencyConflict as e:
            errors.append(e)

    with worktree_mutex(open_repo(repo)):
        t = threading.Thread(target=contender)
        t.start()
        t.join()
    assert len(errors) == 1 and "held by another process" in str(errors[0])
    with worktree_mutex(open_repo(repo), timeout=0):  # released again
        pass


def test_mutex_is_released_when_the_holder_dies(repo: Path) -> None:
    holder = subprocess.Popen(
        [sys.executable, "-c", (
            "import sys, pygit2; from gitliza.git.worktrees.admin import worktree_mutex\n"
            f"with worktree_mutex(pygit2.Repository({str(repo)!r})):\n"
            "    print('locked', flush=True); sys.stdin.read()\n"
        )],
        cwd=REPO_ROOT, stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True,
    )
    assert holder.stdout is not None and holder.stdout.readline().strip() == "locked"
    with pytest.raises(ConcurrencyConflict):
        with worktree_mutex(open_repo(repo), timeout=0):
            pass
    holder.kill()
    holder.wait()
    with worktree_mutex(open_repo(repo), timeout=0):
        pass


CHILD = """
import sys, pygit2
from gitliza.git.worktrees.tasktrees import add_task_worktree
repo_path, task_id, base = sys.argv[1:]
sys.stdin.read()  # start gate: all children are released together
wt = add_task_worktree(pygit2.Repository(repo_path), task_id, pygit2.Oid(hex=base))
print(wt.path)
"""


@pytest.mark.slow
def test_eight_processes_add_worktrees_concurrently(repo: Path) -> None:
    base = str(head_of(repo))
    children = [
        subprocess.Popen(
            [sys.executable, "-c", CHILD, str(repo), f"task-{i}", base], cwd=REPO_ROOT,
            stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
        )
        for i in range(8)
    ]
    for child in children:  # release the start gate of all children before waiting on any
        assert child.stdin is not None
        child.stdin.close()
        child.stdin = None
    results = [child.communicate() + (child.returncode,) for child in children]
    assert [rc for _, _, rc in results] == [0] * 8, [err for _, err, _ in results]
    listed = worktree_list(repo)
    for i in range(8):
        path = (repo / ".worktrees" / f"task-{i}").resolve()
        assert listed[path] == f"refs/heads/liza/task-{i}"
        assert (path / "README.md").exists()
    assert sorted(list_task_branches(open_repo(repo))) == sorted(f"task-{i}" for i in range(8))
    assert (repo / ".git" / "info" / "exclude").read_text().count("/.worktrees/") == 1


# --------------------------------------------------------------------------- clean sync


def test_clean_sync_clean_worktree(repo: Path) -> None:
    assert clean_sync_problems(repo) == []


def test_clean_sync_reports_modified_staged_untracked(repo: Path) -> None:
    (repo / "README.md").write_text("changed\n")
    (repo / "staged.txt").write_text("s\n")
    git(repo, "add", "staged.txt")
    (repo / "new.txt").write_text("n\n")
    assert clean_sync_problems(repo) == [
        "README.md: modified",
        "new.txt: untracked",
        "staged.txt: staged new file",
    ]
    assert clean_sync_problems(repo, untracked=False) == ["README.md: modified", "staged.txt: staged new file"]


def test_clean_sync_reports_staged_then_modified_once(repo: Path) -> None:
    (repo / "README.md").write_text("one\n")
    git(repo, "add", "README.md")
    (repo / "README.md").write_text("two\n")
    assert clean_sync_problems(repo) == ["README.md: staged modification, modified"]


def test_clean_sync_ignores_ignored_files(repo: Path) -> None:
    (repo / ".gitignore").write_text("*.log\nbuild/\n")
    git(repo, "add", ".gitignore")
    git(repo, "commit", "-q", "-m", "ignore")
    (repo / "debug.log").write_text("x\n")
    (repo / "build").mkdir()
    (repo / "build" / "out.o").write_text("x\n")
    assert clean_sync_problems(repo) == []


def test_clean_sync_reports_merge_in_progress_and_conflict(repo: Path) -> None:
    git(repo, "switch", "-q", "-c", "other")
    commit_in(repo, "README.md", "other\n")
    git(repo, "switch", "-q", "main")
    commit_in(repo, "README.md", "main\n")
    git(repo, "merge", "-q", "other", check=False)
    problems = clean_sync_problems(repo)
    assert "a merge operation is in progress" in problems
    assert "README.md: unresolved merge conflict" in problems


def test_clean_sync_reports_a_locked_index(repo: Path) -> None:
    (repo / ".git" / "index.lock").write_text("")
    assert clean_sync_problems(repo) == ["the index is locked by a running git command (index.lock)"]


def test_clean_sync_of_a_task_worktree(repo: Path) -> None:
    wt = add_task_worktree(open_repo(repo), "t", head_of(repo))
    assert clean_sync_problems(wt.path) == []
    (wt.path / "README.md").unlink()
    assert clean_sync_problems(wt.path) == ["README.md: deleted"]
    assert clean_sync_problems(repo) == []  # the main worktree is not affected


def test_clean_sync_never_falls_back_to_an_enclosing_repository(repo: Path) -> None:
    (repo / ".worktrees" / "stray").mkdir(parents=True)
    with pytest.raises(GitFailure, match="not a git worktree"):
        clean_sync_problems(repo / ".worktrees" / "stray")


@pytest.fixture
def with_submodule(repo: Path, tmp_path: Path) -> Path:
    lib = tmp_path / "lib"
    lib.mkdir()
    git(lib, "init", "-q", "-b", "main")
    commit_in(lib, "lib.txt", "lib\n")
    git(repo, "-c", "protocol.file.allow=always", "submodule", "add", "-q", str(lib), "lib")
    git(repo, "commit", "-q", "-m", "add submodule")
    assert clean_sync_problems(repo) == []
    return repo / "lib"


def test_clean_sync_reports_dirty_submodule(with_submodule: Path, repo: Path) -> None:
    (with_submodule / "lib.txt").write_text("edited\n")
    assert clean_sync_problems(repo) == ["submodule lib: uncommitted changes inside"]


def test_clean_sync_reports_untracked_file_in_submodule(with_submodule: Path, repo: Path) -> None:
    (with_submodule / "scratch").write_text("x\n")
    assert clean_sync_problems(repo) == ["submodule lib: untracked files inside"]


def test_clean_sync_reports_out_of_sync_submodule(with_submodule: Path, repo: Path) -> None:
    commit_in(with_submodule, "more.txt", "more\n")
    assert clean_sync_problems(repo) == ["submodule lib: checked-out commit differs from the recorded one"]
    git(repo, "add", "lib")
    assert clean_sync_problems(repo) == ["submodule lib: staged commit change"]


# --------------------------------------------------------------------------- inspection


def test_list_task_worktrees_and_branches(repo: Path, tmp_path: Path) -> None:
    import shutil

    base = head_of(repo)
    repo_obj = open_repo(repo)
    add_task_worktree(repo_obj, "alive", base)
    vanished = add_task_worktree(repo_obj, "vanished", base)
    shutil.rmtree(vanished.path)
    (repo / ".worktrees" / "orphan").mkdir()
    git(repo, "worktree", "add", "-q", "-b", "elsewhere", str(tmp_path / "elsewhere"))  # not a task
    git(repo, "branch", "liza/branch-only")

    entries = {e.task_id: e for e in list_task_worktrees(repo_obj)}
    assert sorted(entries) == ["alive", "orphan", "vanished"]
    alive = entries["alive"]
    assert (alive.registered, alive.directory_exists, alive.prunable) == (True, True, False)
    assert (alive.head_ref, alive.head, alive.locked) == ("refs/heads/liza/alive", base, False)
    assert (entries["vanished"].prunable, entries["vanished"].admin_name) == (True, "vanished")
    assert entries["orphan"].registered is False and entries["orphan"].head is None

    assert list_task_branches(repo_obj) == {"alive": base, "vanished": base, "branch-only": base}


def test_list_when_nothing_exists(repo: Path) -> None:
    assert list_task_worktrees(open_repo(repo)) == []
    assert list_task_branches(open_repo(repo)) == {}


def test_list_sees_locked_worktrees(repo: Path) -> None:
    wt = add_task_worktree(open_repo(repo), "t", head_of(repo))
    git(repo, "worktree", "lock", str(wt.path))
    [entry] = list_task_worktrees(open_repo(repo))
    assert entry.locked
    remove_task_worktree(open_repo(repo), "t")  # an explicit removal overrides git's lock
    assert list_task_worktrees(open_repo(repo)) == []


# --------------------------------------------------------------------------- temporary checkout


def test_temporary_checkout_is_detached_and_removed(repo: Path) -> None:
    base = head_of(repo)
    commit_in(repo, "later.txt", "later\n")
    with temporary_checkout(open_repo(repo), base) as path:
        assert (path / "README.md").exists() and not (path / "later.txt").exists()
        assert worktree_list(repo)[path.resolve()] == "detached"
        assert git(path, "rev-parse", "HEAD") == str(base)
        assert git(path, "status", "--porcelain") == ""
    assert not path.exists() and not path.parent.exists()
    assert list(worktree_list(repo)) == [repo.resolve()]
    assert git(repo, "for-each-ref", "refs/heads/liza-tmp") == ""
    assert list_task_worktrees(open_repo(repo)) == []


def test_temporary_checkout_is_removed_on_error(repo: Path) -> None:
    with pytest.raises(RuntimeError):
        with temporary_checkout(open_repo(repo), head_of(repo)) as path:
            raise RuntimeError("boom")
    assert not path.exists()
    assert list(worktree_list(repo)) == [repo.resolve()]
    assert not any((repo / ".git" / "worktrees").iterdir())


def test_worktree_head_of_unborn_repository(tmp_path: Path) -> None:
    git(tmp_path, "init", "-q", "-b", "main", "empty")
    with pytest.raises(GitFailure, match="unborn"):
        worktree_head(tmp_path / "empty")
