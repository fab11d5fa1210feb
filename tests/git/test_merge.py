"""merge_commit_into against real repositories: no mocks, real worktrees, real integration scripts."""
from __future__ import annotations

import os
from pathlib import Path

import pygit2
import pytest

from gitliza.errors import ConcurrencyConflict, GitFailure, NotFound, ValidationError
from gitliza.git.merge import (
    CheckoutDirty,
    IntegrationTestFailed,
    MergeConflict,
    MergeOutcome,
    merge_commit_into,
)
from gitliza.git.worktrees.tasktrees import add_task_worktree
from tests.conftest import git

SIG = pygit2.Signature("Liza Supervisor", "supervisor@example.invalid", 1_700_000_000, 0)
SCRIPT = Path("scripts/integration-test.sh")


def open_repo(path: Path) -> pygit2.Repository:
    return pygit2.Repository(str(path))


def tip(path: Path, branch: str) -> pygit2.Oid:
    return pygit2.Oid(hex=git(path, "rev-parse", f"refs/heads/{branch}"))


def commit_files(
    path: Path, branch: str, files: dict[str, str | None], *, executable: bool = False
) -> pygit2.Oid:
    """Commit on `branch` through the object database only (no checkout is touched).

    `None` deletes a file. Creates the branch from main when it does not exist yet.
    """
    repo = open_repo(path)
    refname = f"refs/heads/{branch}"
    parent = repo.references.get(refname) or repo.references["refs/heads/main"]
    parent_commit = repo[parent.resolve().target]
    assert isinstance(parent_commit, pygit2.Commit)
    index = pygit2.Index()
    index.read_tree(parent_commit.tree)
    mode = pygit2.enums.FileMode.BLOB_EXECUTABLE if executable else pygit2.enums.FileMode.BLOB
    for name, content in files.items():
        if content is None:
            index.remove(name)
        else:
            index.add(pygit2.IndexEntry(name, repo.create_blob(content.encode()), mode))
    tree = index.write_tree(repo)
    oid = repo.create_commit(None, SIG, SIG, f"change {', '.join(files)}", tree, [parent_commit.id])
    repo.references.create(refname, oid, force=True)
    return oid


def files_at(path: Path, rev: str) -> dict[str, str]:
    names = git(path, "ls-tree", "-r", "--name-only", rev).splitlines()
    return {name: git(path, "show", f"{rev}:{name}") for name in names}


def worktree_paths(path: Path) -> list[str]:
    return [l for l in git(path, "worktree", "list", "--porcelain").splitlines() if l.startswith("worktree ")]


@pytest.fixture
def integ(repo: Path) -> Path:
    """`repo` with an integration branch that is NOT checked out anywhere."""
    git(repo, "branch", "integration", "main")
    return repo


def merge(
    path: Path,
    commit: pygit2.Oid,
    branch: str = "integration",
    *,
    integration_test: Path | None = None,
    expected_old: pygit2.Oid | None = None,
    integration_timeout: float | None = None,
) -> MergeOutcome:
    return merge_commit_into(
        open_repo(path), branch, commit, message=f"Merge {commit}", signature=SIG,
        integration_test=integration_test, expected_old=expected_old,
        integration_timeout=integration_timeout,
    )


# --------------------------------------------------------------------------- merge kinds


def test_fast_forward(integ: Path) -> None:
    old = tip(integ, "integration")
    task = commit_files(integ, "liza/t", {"feature.txt": "feature\n"})
    outcome = merge(integ, task)
    assert (outcome.kind, outcome.old, outcome.new) == ("fast-forward", old, task)
    assert tip(integ, "integration") == task
    assert not (integ / "feature.txt").exists()  # no working directory was touched
    assert git(integ, "status", "--porcelain") == ""


def test_merge_commit_when_diverged(integ: Path) -> None:
    other = commit_files(integ, "integration", {"other.txt": "other\n"})
    task = commit_files(integ, "liza/t", {"feature.txt": "feature\n"})
    outcome = merge(integ, task)
    assert outcome.kind == "merge" and outcome.old == other
    new = tip(integ, "integration")
    assert outcome.new == new
    assert git(integ, "rev-parse", f"{new}^1", f"{new}^2").split() == [str(other), str(task)]
    assert git(integ, "log", "-1", "--format=%s%n%an", str(new)).split("\n") == [f"Merge {task}", "Liza Supervisor"]
    assert files_at(integ, str(new)) == {"README.md": "project", "other.txt": "other", "feature.txt": "feature"}


def test_a_merge_keeps_no_parsed_copy_of_the_projects_trees(integ: Path) -> None:
    """A merge copies the objects its tree adds into gitliza's own store, walking the project's
    trees; it must not leave them in the process's cache of the board's trees: a project's tree
    grows with its history (here, as in a busy team, one more file per merge at the root), so a
    long-lived merger kept a growing copy of every recent version (issue 39)."""
    from gitliza.git.objects import ownstore, trees
    commit_files(integ, "integration", {f"done-{i}.txt": f"{i}\n" for i in range(200)})
    task = commit_files(integ, "liza/t", {"feature.txt": "feature\n"})
    outcome = merge(integ, task)
    assert outcome.kind == "merge"
    repo = open_repo(integ)
    root = repo[outcome.new].tree_id.raw  # type: ignore[attr-defined]
    own = ownstore.target(repo)
    assert own is not None and any(n.endswith(".pack") for n in os.listdir(Path(own) / "pack"))
    assert root not in trees._PARSED
    assert repo[outcome.old].tree_id.raw not in trees._PARSED  # type: ignore[attr-defined]


def test_only_the_reviewed_commit_is_merged(integ: Path) -> None:
    commit_files(integ, "integration", {"other.txt": "other\n"})
    reviewed = commit_files(integ, "liza/t", {"feature.txt": "reviewed\n"})
    commit_files(integ, "liza/t", {"feature.txt": "unreviewed\n", "extra.txt": "extra\n"})
    merge(integ, reviewed)
    merged = files_at(integ, "integration")
    assert merged["feature.txt"] == "reviewed" and "extra.txt" not in merged
    assert git(integ, "merge-base", "--is-ancestor", "liza/t", "integration", check=False) == ""
    assert git(integ, "rev-parse", "integration^2") == str(reviewed)


def test_fast_forward_to_a_reviewed_commit_behind_the_task_tip(integ: Path) -> None:
    reviewed = commit_files(integ, "liza/t", {"feature.txt": "reviewed\n"})
    commit_files(integ, "liza/t", {"feature.txt": "unreviewed\n"})
    assert merge(integ, reviewed).kind == "fast-forward"
    assert tip(integ, "integration") == reviewed


def test_already_merged_commit_is_up_to_date(integ: Path) -> None:
    task = commit_files(integ, "liza/t", {"feature.txt": "feature\n"})
    merge(integ, task)
    again = merge(integ, task)
    assert (again.kind, again.old, again.new) == ("up-to-date", task, task)


def test_works_from_a_repository_opened_inside_a_task_worktree(integ: Path) -> None:
    wt = add_task_worktree(open_repo(integ), "t", tip(integ, "main"))
    task = commit_files(integ, "liza/t", {"feature.txt": "feature\n"})
    merge(wt.path, task)
    assert tip(integ, "integration") == task


def test_full_ref_name_is_accepted(integ: Path) -> None:
    task = commit_files(integ, "liza/t", {"feature.txt": "feature\n"})
    merge(integ, task, branch="refs/heads/integration")
    assert tip(integ, "integration") == task


def test_missing_branch_or_commit(integ: Path) -> None:
    task = commit_files(integ, "liza/t", {"feature.txt": "feature\n"})
    with pytest.raises(NotFound):
        merge(integ, task, branch="nope")
    with pytest.raises(NotFound):
        merge(integ, pygit2.Oid(hex="1" * 40))
    with pytest.raises(ValidationError):
        merge(integ, task, branch="bad..name")
    git(integ, "symbolic-ref", "refs/heads/alias", "refs/heads/integration")
    with pytest.raises(ValidationError, match="symbolic"):
        merge(integ, task, branch="alias")


# --------------------------------------------------------------------------- conflicts


def test_conflict_names_the_file_and_leaves_the_branch(integ: Path) -> None:
    before = commit_files(integ, "integration", {"README.md": "integration side\n"})
    task = commit_files(integ, "liza/t", {"README.md": "task side\n", "clean.txt": "fine\n"})
    with pytest.raises(MergeConflict) as caught:
        merge(integ, task)
    assert caught.value.paths == ["README.md"]
    assert "README.md" in str(caught.value) and caught.value.exit_code == 3
    assert isinstance(caught.value, GitFailure)
    assert tip(integ, "integration") == before
    assert git(integ, "status", "--porcelain") == ""


# --------------------------------------------------------------------------- integration test


def test_failing_integration_test_leaves_branch_and_removes_checkout(
    integ: Path, capfd: pytest.CaptureFixture[str]
) -> None:
    before = tip(integ, "integration")
    lines = "".join(f"echo line-{i}\n" for i in range(40))
    task = commit_files(integ, "liza/t", {str(SCRIPT): f"#!/bin/sh\n{lines}echo boom >&2\nexit 7\n"}, executable=True)
    with pytest.raises(IntegrationTestFailed) as caught:
        merge(integ, task, integration_test=SCRIPT)
    err = caught.value
    assert (err.returncode, err.exit_code) == (7, 3)
    assert err.output_tail.splitlines()[-1] == "boom" and "line-39" in err.output_tail
    assert "line-0\n" in err.output and "line-0\n" not in err.output_tail
    assert "boom" in str(err)
    assert tip(integ, "integration") == before
    assert len(worktree_paths(integ)) == 1
    assert git(integ, "for-each-ref", "refs/heads/liza-tmp") == ""
    out, errout = capfd.readouterr()
    assert "line-" not in out + errout and "boom" not in out + errout


def test_passing_integration_test_runs_on_the_merged_commit(
    integ: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capfd: pytest.CaptureFixture[str]
) -> None:
    report = tmp_path / "report"
    monkeypatch.setenv("REPORT", str(report))
    monkeypatch.setenv("GIT_DIR", str(integ / ".git"))  # must not leak into the script
    commit_files(integ, "integration", {"other.txt": "other\n"})
    script = (
        "#!/bin/sh\nset -e\necho noisy output\n"
        'git rev-parse HEAD > "$REPORT"\npwd >> "$REPORT"\ngit status --porcelain >> "$REPORT"\n'
        'cat other.txt feature.txt >> "$REPORT"\n'
    )
    task = commit_files(integ, "liza/t", {str(SCRIPT): script, "feature.txt": "feature\n"}, executable=True)
    monkeypatch.delenv("GIT_DIR")
    outcome = merge(integ, task, integration_test=integ / SCRIPT)  # absolute form
    assert outcome.integration_tested and outcome.kind == "merge"
    head, cwd, *rest = report.read_text().splitlines()
    assert head == str(tip(integ, "integration"))
    assert not Path(cwd).exists() and not Path(cwd).is_relative_to(integ)
    assert rest == ["other", "feature"]  # clean checkout of both sides
    assert "noisy" not in capfd.readouterr().out


def test_integration_test_sees_environment_without_git_dir(
    integ: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    report = tmp_path / "report"
    task = commit_files(
        integ, "liza/t", {str(SCRIPT): f'echo "${{GIT_DIR:-unset}}" > {report}\ngit rev-parse HEAD >> {report}\n'}
    )
    monkeypatch.setenv("GIT_DIR", str(integ / ".git"))
    monkeypatch.setenv("GIT_WORK_TREE", str(integ))
    merge(integ, task, integration_test=SCRIPT)  # non-executable: run with bash
    assert report.read_text().splitlines() == ["unset", str(task)]


def test_integration_test_absent_from_merged_tree_is_skipped(integ: Path) -> None:
    task = commit_files(integ, "liza/t", {"feature.txt": "feature\n"})
    outcome = merge(integ, task, integration_test=SCRIPT)
    assert outcome.integration_tested is False and tip(integ, "integration") == task


def test_integration_test_timeout_fails(integ: Path) -> None:
    before = tip(integ, "integration")
    task = commit_files(integ, "liza/t", {str(SCRIPT): "echo started\nsleep 30\n"})
    with pytest.raises(IntegrationTestFailed, match="timed out") as caught:
        merge(integ, task, integration_test=SCRIPT, integration_timeout=0.5)
    assert caught.value.returncode is None and "started" in caught.value.output
    assert tip(integ, "integration") == before
    assert len(worktree_paths(integ)) == 1


@pytest.mark.parametrize("bad", [Path("../outside.sh"), Path("/etc/integration.sh")])
def test_integration_test_path_must_stay_in_the_repository(integ: Path, bad: Path) -> None:
    task = commit_files(integ, "liza/t", {"feature.txt": "feature\n"})
    with pytest.raises(ValidationError):
        merge(integ, task, integration_test=bad)
    assert tip(integ, "integration") == tip(integ, "main")


def test_integration_test_symlink_escaping_the_checkout_is_refused(integ: Path) -> None:
    repo = open_repo(integ)
    main = repo[repo.references["refs/heads/main"].target]
    assert isinstance(main, pygit2.Commit)
    index = pygit2.Index()
    index.read_tree(main.tree)
    link = repo.create_blob(b"/bin/true")
    index.add(pygit2.IndexEntry(str(SCRIPT), link, pygit2.enums.FileMode.LINK))
    task = repo.create_commit("refs/heads/liza/t", SIG, SIG, "link", index.write_tree(repo), [main.id])
    with pytest.raises(ValidationError, match="outside"):
        merge(integ, task, integration_test=SCRIPT)
    assert tip(integ, "integration") == main.id
    assert len(worktree_paths(integ)) == 1


# --------------------------------------------------------------------------- checked-out integration branch


def test_clean_checkout_of_the_branch_follows_the_merge(repo: Path) -> None:
    (repo / "gone.txt").write_text("to delete\n")
    git(repo, "add", "gone.txt")
    git(repo, "commit", "-q", "-m", "gone")
    (repo / "notes.txt").write_text("untracked, unrelated\n")
    task = commit_files(repo, "liza/t", {"README.md": "updated\n", "gone.txt": None, "dir/new.txt": "new\n"})
    commit_files(repo, "main", {"main-side.txt": "main\n"})  # diverge...
    git(repo, "reset", "-q", "--hard", "main")  # ...and bring the checkout along
    outcome = merge(repo, task, branch="main")
    assert outcome.kind == "merge" and outcome.updated_checkouts == (repo.resolve(),)
    assert (repo / "README.md").read_text() == "updated\n"
    assert (repo / "dir" / "new.txt").read_text() == "new\n"
    assert not (repo / "gone.txt").exists()
    assert (repo / "notes.txt").exists() and (repo / "main-side.txt").exists()
    assert git(repo, "status", "--porcelain", "--untracked-files=no") == ""
    assert git(repo, "rev-parse", "HEAD") == str(outcome.new)


def test_clean_checkout_follows_a_fast_forward(repo: Path) -> None:
    task = commit_files(repo, "liza/t", {"README.md": "fast\n"})
    outcome = merge(repo, task, branch="main")
    assert outcome.kind == "fast-forward"
    assert (repo / "README.md").read_text() == "fast\n"
    assert git(repo, "status", "--porcelain") == ""


def test_dirty_checkout_of_the_branch_is_refused(repo: Path) -> None:
    before = tip(repo, "main")
    (repo / "README.md").write_text("human edit\n")
    task = commit_files(repo, "liza/t", {"feature.txt": "feature\n"})
    with pytest.raises(CheckoutDirty, match="README.md: modified") as caught:
        merge(repo, task, branch="main")
    assert caught.value.exit_code == 1 and caught.value.checkout == repo.resolve()
    assert tip(repo, "main") == before
    assert (repo / "README.md").read_text() == "human edit\n"
    assert not (repo / "feature.txt").exists()


def test_checkout_dirtied_while_the_integration_test_runs_is_refused(
    repo: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    before = tip(repo, "main")
    monkeypatch.setenv("MAIN_CHECKOUT", str(repo))
    task = commit_files(repo, "liza/t", {str(SCRIPT): 'echo "human edit" >> "$MAIN_CHECKOUT/README.md"\n'})
    with pytest.raises(CheckoutDirty, match="README.md: modified"):
        merge(repo, task, branch="main", integration_test=SCRIPT)
    assert tip(repo, "main") == before
    assert (repo / "README.md").read_text() == "project\nhuman edit\n"


def test_staged_change_in_checkout_is_refused(repo: Path) -> None:
    (repo / "staged.txt").write_text("s\n")
    git(repo, "add", "staged.txt")
    task = commit_files(repo, "liza/t", {"feature.txt": "feature\n"})
    with pytest.raises(CheckoutDirty, match="staged"):
        merge(repo, task, branch="main")


def test_untracked_file_in_the_way_is_refused(repo: Path) -> None:
    before = tip(repo, "main")
    (repo / "dir").mkdir()
    (repo / "dir" / "new.txt").write_text("mine, untracked\n")
    task = commit_files(repo, "liza/t", {"dir/new.txt": "theirs\n"})
    with pytest.raises(CheckoutDirty, match="would be overwritten"):
        merge(repo, task, branch="main")
    assert tip(repo, "main") == before
    assert (repo / "dir" / "new.txt").read_text() == "mine, untracked\n"


def test_checkout_busy_with_a_git_command_is_refused(repo: Path) -> None:
    before = tip(repo, "main")
    task = commit_files(repo, "liza/t", {"README.md": "merged\n"})
    (repo / ".git" / "index.lock").write_text("")  # someone is in the middle of `git add`
    with pytest.raises(CheckoutDirty, match="index is locked"):
        merge(repo, task, branch="main")
    assert tip(repo, "main") == before
    assert (repo / "README.md").read_text() == "project\n"


def test_branch_checked_out_in_a_linked_worktree_follows(integ: Path, tmp_path: Path) -> None:
    git(integ, "worktree", "add", "-q", str(tmp_path / "integ-wt"), "integration")
    task = commit_files(integ, "liza/t", {"feature.txt": "feature\n"})
    outcome = merge(integ, task)
    assert outcome.updated_checkouts == ((tmp_path / "integ-wt").resolve(),)
    assert (tmp_path / "integ-wt" / "feature.txt").read_text() == "feature\n"
    assert git(tmp_path / "integ-wt", "status", "--porcelain") == ""
    assert not (integ / "feature.txt").exists()


def test_dirty_linked_worktree_is_refused(integ: Path, tmp_path: Path) -> None:
    git(integ, "worktree", "add", "-q", str(tmp_path / "integ-wt"), "integration")
    (tmp_path / "integ-wt" / "README.md").write_text("edit\n")
    task = commit_files(integ, "liza/t", {"feature.txt": "feature\n"})
    with pytest.raises(CheckoutDirty):
        merge(integ, task)
    assert tip(integ, "integration") == tip(integ, "main")


# --------------------------------------------------------------------------- compare and swap


def test_expected_old_mismatch_is_a_concurrency_conflict(integ: Path) -> None:
    stale = tip(integ, "integration")
    moved = commit_files(integ, "integration", {"other.txt": "other\n"})
    task = commit_files(integ, "liza/t", {"feature.txt": "feature\n"})
    with pytest.raises(ConcurrencyConflict) as caught:
        merge(integ, task, expected_old=stale)
    assert caught.value.exit_code == 2
    assert tip(integ, "integration") == moved


def test_branch_moved_during_the_merge_is_never_overwritten(integ: Path) -> None:
    # The integration test itself moves the branch (refs are shared by all worktrees): the CAS
    # at the end must notice and refuse instead of overwriting the concurrent update.
    concurrent = commit_files(integ, "side", {"side.txt": "side\n"})
    task = commit_files(integ, "liza/t", {str(SCRIPT): f"git update-ref refs/heads/integration {concurrent}\n"})
    with pytest.raises(ConcurrencyConflict, match="moved"):
        merge(integ, task, integration_test=SCRIPT, expected_old=tip(integ, "integration"))
    assert tip(integ, "integration") == concurrent


def test_locked_branch_is_a_concurrency_conflict(integ: Path) -> None:
    before = tip(integ, "integration")
    task = commit_files(integ, "liza/t", {"feature.txt": "feature\n"})
    (integ / ".git" / "refs" / "heads" / "integration.lock").write_text("held\n")
    with pytest.raises(ConcurrencyConflict, match="locked"):
        merge(integ, task)
    (integ / ".git" / "refs" / "heads" / "integration.lock").unlink()
    assert tip(integ, "integration") == before


# --------------------------------------------------------------------------- bare repositories


def test_merge_with_integration_test_in_a_bare_repository(repo: Path, bare: Path) -> None:
    git(repo, "push", "-q", str(bare), "main")
    task = commit_files(bare, "liza/t", {str(SCRIPT): "test -f README.md\n", "feature.txt": "f\n"})
    outcome = merge(bare, task, branch="main", integration_test=SCRIPT)
    assert outcome.integration_tested and outcome.updated_checkouts == ()
    assert tip(bare, "main") == task


def test_a_merge_commit_is_kept_in_gitlizas_own_store_before_the_branch_moves(integ: Path) -> None:
    """(issue 29) libgit2 writes the merge as loose objects into objects/, unreferenced until the
    branch moves, with the integration test in between: they are copied into gitliza's own store,
    which git's maintenance never prunes, before anything can depend on them."""
    commit_files(integ, "integration", {"other.txt": "other\n"})
    task = commit_files(integ, "liza/t", {"feature.txt": "feature\n"})
    outcome = merge(integ, task)
    assert outcome.kind == "merge"
    own = pygit2.Odb(str(integ / ".git" / "liza-objects"))
    merged = open_repo(integ)[outcome.new]
    assert isinstance(merged, pygit2.Commit)
    assert outcome.new in own and merged.tree_id in own
    for oid in (str(outcome.new), str(merged.tree_id)):  # what a `git prune` in the window
        (integ / ".git" / "objects" / oid[:2] / oid[2:]).unlink()  # would have deleted
    git(integ, "fsck", "--no-dangling")
    assert files_at(integ, "integration") == {"README.md": "project", "other.txt": "other",
                                              "feature.txt": "feature"}
