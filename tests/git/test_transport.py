"""Transport of refs/liza/* through the git executable: real bare repos, clones and a real git daemon.

Board commits are made with plain plumbing (commit-tree); the board format does not matter here.
Most tests run twice: against a local path remote and over git:// (tests/gitdaemon.py).
"""
from __future__ import annotations

import itertools
import socket
import threading
from dataclasses import dataclass
from pathlib import Path
import pygit2
import pytest

from gitliza.errors import GitFailure, MissingDependency, ValidationError
from gitliza.git.gitcmd import print_progress
from gitliza.git.remotes.pushresults import PushRejected, PushResult, PushStatus
from gitliza.git.remotes.remote import configured, resolve, tracking_ref
from gitliza.git.remotes.transport import fetch_board, ls_remote_state, push_board
from tests.conftest import git, remote_of
from tests.gitdaemon import GitDaemon, git_daemon  # noqa: F401  (git_daemon is a fixture)

STATE = "refs/liza/state"
_serial = itertools.count()


@dataclass(frozen=True)
class Remote:
    bare: Path  # the repository on "the server"
    url: str  # how clients reach it


@pytest.fixture(params=["path", "path-git", "daemon"])
def remote(request: pytest.FixtureRequest, tmp_path: Path) -> Remote:
    if request.param.startswith("path"):
        bare = tmp_path / "remote.git"
        git(tmp_path, "init", "-q", "--bare", "-b", "main", str(bare))
        if request.param == "path-git":
            # A hook makes the local remote one that git must reach (gitliza/git/remotes/direct.py):
            # the git executable's path for a local remote stays covered.
            hook = bare / "hooks" / "post-update"
            hook.parent.mkdir(exist_ok=True)
            hook.write_text("#!/bin/sh\nexit 0\n")
            hook.chmod(0o755)
        return Remote(bare, str(bare))
    daemon: GitDaemon = request.getfixturevalue("git_daemon")
    return Remote(daemon.init_bare("remote.git"), daemon.url("remote.git"))


@pytest.fixture
def origin(repo: Path, remote: Remote) -> Remote:
    """`repo` with the remote configured as origin."""
    git(repo, "remote", "add", "origin", remote.url)
    return remote


def clone(tmp_path: Path, name: str, url: str) -> Path:
    """Another machine: an empty repository with the same origin."""
    path = tmp_path / name
    git(tmp_path, "init", "-q", "-b", "main", str(path))
    git(path, "remote", "add", "origin", url)
    return path


def board_commit(repo: Path, parent: str | None = None) -> str:
    """A state commit (empty tree) on top of `parent`; unique even within one second."""
    tree = git(repo, "hash-object", "-w", "-t", "tree", "/dev/null")
    parents = ["-p", parent] if parent else []
    return git(repo, "commit-tree", tree, *parents, "-m", f"op {next(_serial)}")


def published(repo: Path) -> str:
    """A first board commit in `repo`, pushed to its origin (which had no board)."""
    oid = board_commit(repo)
    assert push_board(repo, remote_of(repo), oid, None).status is PushStatus.OK
    return oid


def tip(repo: Path, ref: str = STATE) -> str | None:
    return git(repo, "rev-parse", "--verify", "--quiet", ref, check=False) or None


def write_hook(bare: Path, name: str, body: str) -> None:
    hook = bare / "hooks" / name
    hook.parent.mkdir(exist_ok=True)
    hook.write_text("#!/bin/sh\n" + body)
    hook.chmod(0o755)


def closed_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


# --------------------------------------------------------------------------------------------------
# fetch


def test_fetch_from_a_remote_without_a_board_succeeds_and_reports_none(repo: Path, origin: Remote) -> None:
    result = fetch_board(repo, remote_of(repo))
    assert (result.remote, result.old_oid, result.new_oid, result.changed) == ("origin", None, None, False)
    assert result.tracking_ref == "refs/remotes/origin/liza/state"
    assert ls_remote_state(repo, remote_of(repo)) is None


def test_fetch_reports_what_another_clone_pushed_and_prunes(
    repo: Path, origin: Remote, tmp_path: Path
) -> None:
    other = clone(tmp_path, "other", origin.url)
    first = board_commit(other)
    assert push_board(other, remote_of(other), first, None).status is PushStatus.OK

    fetched = fetch_board(repo, remote_of(repo))
    assert (fetched.old_oid, fetched.new_oid, fetched.changed) == (None, first, True)
    git(repo, "cat-file", "-e", f"{first}^{{commit}}")  # the objects came along

    second = board_commit(other, first)
    push_board(other, remote_of(other), second, first)
    moved = fetch_board(repo, remote_of(repo))
    assert (moved.old_oid, moved.new_oid, moved.changed) == (first, second, True)
    assert fetch_board(repo, remote_of(repo)).changed is False

    git(origin.bare, "update-ref", "-d", STATE)  # the board disappears on the server
    gone = fetch_board(repo, remote_of(repo))
    assert (gone.old_oid, gone.new_oid, gone.changed) == (second, None, True)


def test_fetch_takes_only_the_board_not_tags_nor_fetch_head(repo: Path, origin: Remote) -> None:
    git(repo, "push", "-q", origin.url, "main")
    git(origin.bare, "tag", "v1", "main")
    push_board(repo, remote_of(repo), board_commit(repo), None)
    git(repo, "tag", "-d", "v1", check=False)
    fetch_board(repo, remote_of(repo))
    assert git(repo, "tag") == ""
    assert not (repo / ".git" / "FETCH_HEAD").exists()


# --------------------------------------------------------------------------------------------------
# push: the compare-and-swap


def test_push_to_a_remote_without_a_board_creates_it(repo: Path, origin: Remote) -> None:
    oid = board_commit(repo)
    result = push_board(repo, remote_of(repo), oid, None)
    assert (result.status, result.ok, result.needs_replay) == (PushStatus.OK, True, False)
    assert tip(origin.bare) == oid
    assert tip(repo, "refs/remotes/origin/liza/state") == oid  # tracking ref follows the push
    assert ls_remote_state(repo, remote_of(repo)) == oid
    assert fetch_board(repo, remote_of(repo)).changed is False


def test_push_fast_forward_and_up_to_date(repo: Path, origin: Remote) -> None:
    first = published(repo)
    second = board_commit(repo, first)
    assert push_board(repo, remote_of(repo), second, first).status is PushStatus.OK
    again = push_board(repo, remote_of(repo), second, second)
    assert (again.status, again.ok) == (PushStatus.UP_TO_DATE, True)
    assert tip(origin.bare) == second


def test_push_with_a_stale_expectation_is_reported_and_the_remote_is_unchanged(
    repo: Path, origin: Remote, tmp_path: Path
) -> None:
    first = published(repo)
    other = clone(tmp_path, "other", origin.url)
    assert fetch_board(other, remote_of(other)).new_oid == first
    second = board_commit(repo, first)
    push_board(repo, remote_of(repo), second, first)  # the remote moves on behind `other`'s back

    mine = board_commit(other, first)
    result = push_board(other, remote_of(other), mine, first)
    assert (result.status, result.ok, result.needs_replay) == (PushStatus.STALE, False, True)
    assert "stale info" in result.summary
    assert tip(origin.bare) == second
    assert tip(other, "refs/remotes/origin/liza/state") == first  # not advanced by a failed push


def test_push_expecting_no_board_when_there_is_one_is_stale(
    repo: Path, origin: Remote, tmp_path: Path
) -> None:
    first = published(repo)
    other = clone(tmp_path, "other", origin.url)
    assert push_board(other, remote_of(other), board_commit(other), None).status is PushStatus.STALE
    assert tip(origin.bare) == first


def test_non_fast_forward_push_is_refused_and_the_remote_is_unchanged(repo: Path, origin: Remote) -> None:
    # The lease would match (the remote is at `first`), and a matching lease makes git force the
    # update (see test_git_forces_a_non_fast_forward_when_the_lease_matches): push_board refuses
    # before git runs, because `unrelated` does not descend from `first`.
    first = published(repo)
    unrelated = board_commit(repo)
    result = push_board(repo, remote_of(repo), unrelated, first)
    assert (result.status, result.needs_replay) == (PushStatus.NON_FAST_FORWARD, True)
    assert tip(origin.bare) == first


def test_expected_tip_unknown_locally_means_non_fast_forward(
    repo: Path, origin: Remote, tmp_path: Path
) -> None:
    first = published(repo)
    other = clone(tmp_path, "other", origin.url)  # never fetched: does not have `first`
    result = push_board(other, remote_of(other), board_commit(other), first)
    assert result.status is PushStatus.NON_FAST_FORWARD
    assert tip(origin.bare) == first


def test_two_clones_racing_on_the_same_expected_value_exactly_one_wins(
    repo: Path, origin: Remote, tmp_path: Path
) -> None:
    base = published(repo)
    other = clone(tmp_path, "other", origin.url)
    fetch_board(other, remote_of(other))
    # Both pushes get past the advertisement and the pre-receive hook before either updates the
    # ref, so the race is decided at the server's ref lock, not by the client-side lease check.
    barrier = tmp_path / "barrier"
    barrier.mkdir()
    write_hook(origin.bare, "pre-receive", f"""cat >/dev/null
touch "{barrier}/arrived.$$"
i=0
while [ "$(ls "{barrier}" | wc -l)" -lt 2 ] && [ $i -lt 200 ]; do sleep 0.05; i=$((i+1)); done
""")
    candidates = {repo: board_commit(repo, base), other: board_commit(other, base)}
    results: dict[Path, PushResult | BaseException] = {}

    def push(clone_path: Path) -> None:
        try:
            results[clone_path] = push_board(clone_path, remote_of(clone_path), candidates[clone_path], base, timeout=30)
        except BaseException as exc:  # reported by the assertions below
            results[clone_path] = exc

    threads = [threading.Thread(target=push, args=(p,)) for p in candidates]
    for t in threads:
        t.start()
    for t in threads:
        t.join(60)
    assert all(isinstance(r, PushResult) for r in results.values()), results
    statuses = sorted(r.status.value for r in results.values() if isinstance(r, PushResult))
    assert statuses == ["ok", "stale"]
    winner = next(p for p, r in results.items() if isinstance(r, PushResult) and r.ok)
    loser = next(r for r in results.values() if isinstance(r, PushResult) and not r.ok)
    assert "[remote rejected]" in loser.summary  # lost at the server's lock, classified as stale
    assert tip(origin.bare) == candidates[winner]


# --------------------------------------------------------------------------------------------------
# the remote's hooks


def test_pre_receive_refusal_carries_the_hook_reason_and_leaves_the_remote_unchanged(
    repo: Path, origin: Remote
) -> None:
    first = published(repo)
    hook = "echo 'board frozen: release in progress'\necho 'see #ops' >&2\nexit 1\n"
    write_hook(origin.bare, "pre-receive", hook)
    with pytest.raises(PushRejected) as info:
        push_board(repo, remote_of(repo), board_commit(repo, first), first)
    err = info.value
    assert err.remote_lines == ("board frozen: release in progress", "see #ops")
    assert err.reason == "board frozen: release in progress; see #ops"
    assert "\n" not in str(err) and "pre-receive hook declined" in str(err)
    assert err.exit_code == 3 and isinstance(err, GitFailure)
    assert tip(origin.bare) == first
    assert tip(repo, "refs/remotes/origin/liza/state") == first


def test_progress_callback_sees_git_stderr_and_refusals_are_still_parsed(repo: Path, origin: Remote) -> None:
    write_hook(origin.bare, "pre-receive", "echo 'no boards here'\nexit 1\n")
    lines: list[str] = []
    with pytest.raises(PushRejected) as info:
        push_board(repo, remote_of(repo), board_commit(repo), None, progress=lines.append)
    assert info.value.reason == "no boards here"
    assert any(line.startswith("remote: no boards here") for line in lines)
    assert tip(origin.bare) is None


def test_a_failing_progress_callback_does_not_break_the_push(repo: Path, origin: Remote) -> None:
    def broken(line: str) -> None:
        raise RuntimeError(line)

    oid = board_commit(repo)
    assert push_board(repo, remote_of(repo), oid, None, progress=broken).ok
    assert fetch_board(repo, remote_of(repo), progress=broken).new_oid == oid


def test_print_progress_writes_lines_to_stderr(capsys: pytest.CaptureFixture[str]) -> None:
    print_progress("remote: hello")
    assert capsys.readouterr().err == "remote: hello\n"


def test_local_pre_push_hook_does_not_run_for_board_pushes(repo: Path, origin: Remote) -> None:
    write_hook(repo / ".git", "pre-push", "echo 'running the whole test suite...' >&2\nexit 1\n")
    oid = board_commit(repo)
    assert push_board(repo, remote_of(repo), oid, None).ok
    assert tip(origin.bare) == oid


# --------------------------------------------------------------------------------------------------
# which remote


def test_remote_given_as_a_url_gets_its_own_tracking_namespace(repo: Path, remote: Remote) -> None:
    oid = board_commit(repo)
    pushed = push_board(repo, remote_of(repo, remote.url), oid, None)
    assert (pushed.remote, pushed.status) == (remote.url, PushStatus.OK)
    tracking = tracking_ref(remote_of(repo, remote.url))
    assert tracking.startswith("refs/remotes/liza-url-") and tracking.endswith("/liza/state")
    assert tip(repo, tracking) == oid
    assert fetch_board(repo, remote_of(repo, remote.url)).new_oid == oid
    assert ls_remote_state(repo, remote_of(repo, remote.url)) == oid


def test_a_relative_path_is_the_same_remote_as_its_absolute_path(repo: Path, bare: Path) -> None:
    relative = "../remote.git"  # `repo` and `bare` are siblings in tmp_path
    assert resolve(repo, relative).arg == str(bare.resolve())
    assert tracking_ref(remote_of(repo, relative)) == tracking_ref(remote_of(repo, str(bare)))
    oid = board_commit(repo)
    push_board(repo, remote_of(repo, relative), oid, None)
    assert fetch_board(repo, remote_of(repo, str(bare))).changed is False


def test_liza_remote_config_is_honoured_and_an_argument_overrides_it(
    repo: Path, bare: Path, tmp_path: Path
) -> None:
    git(repo, "remote", "add", "team", str(bare))
    other = tmp_path / "other.git"
    git(tmp_path, "init", "-q", "--bare", str(other))
    git(repo, "remote", "add", "origin", str(other))
    git(repo, "config", "liza.remote", "team")
    assert resolve(repo).arg == "team"
    assert resolve(repo, "origin").arg == "origin"
    oid = board_commit(repo)
    assert push_board(repo, remote_of(repo), oid, None).remote == "team"
    assert tip(bare) == oid and tip(other) is None
    assert fetch_board(repo, remote_of(repo)).tracking_ref == "refs/remotes/team/liza/state"


def test_one_answer_to_which_remote_argument_liza_remote_sync_remote_then_origin(
    repo: Path, bare: Path, tmp_path: Path
) -> None:
    others = {}
    for name in ("origin", "team", "alias", "given"):
        others[name] = tmp_path / f"{name}.git"
        git(tmp_path, "init", "-q", "--bare", str(others[name]))
        git(repo, "remote", "add", name, str(others[name]))
    assert configured(pygit2.Repository(str(repo))) is None  # origin alone: no auto-sync
    assert resolve(repo).arg == "origin"
    git(repo, "config", "sync.remote", "alias")
    assert (configured(pygit2.Repository(str(repo))), resolve(repo).arg) == ("alias", "alias")
    git(repo, "config", "liza.remote", "team")  # liza.remote wins over its alias
    assert (configured(pygit2.Repository(str(repo))), resolve(repo).arg) == ("team", "team")
    assert resolve(repo, "given").arg == "given"
    git(repo, "config", "liza.remote", "  ")  # empty counts as unset: the alias answers
    assert resolve(repo).arg == "alias"
    git(repo, "config", "sync.remote", "ghost")
    with pytest.raises(ValidationError, match="'ghost' \\(from git config sync.remote\\)"):
        resolve(repo)


def test_a_resolved_remote_is_carried_down_not_resolved_again(
    repo: Path, bare: Path, tmp_path: Path
) -> None:
    git(repo, "remote", "add", "team", str(bare))
    git(repo, "config", "liza.remote", "team")
    rem = resolve(repo)
    assert resolve(repo, rem) is rem
    # The configuration changes after the resolution: the value carried down still names the
    # remote it was resolved to (a sync pushes where it fetched).
    other = tmp_path / "other.git"
    git(tmp_path, "init", "-q", "--bare", str(other))
    git(repo, "remote", "add", "other", str(other))
    git(repo, "config", "liza.remote", "other")
    oid = board_commit(repo)
    assert push_board(repo, remote_of(repo, rem), oid, None).remote == "team"
    assert tip(bare) == oid and tip(other) is None
    assert fetch_board(repo, remote_of(repo, rem)).tracking_ref == tracking_ref(remote_of(repo, rem)) == \
        "refs/remotes/team/liza/state"


def test_default_remote_is_origin(repo: Path, bare: Path) -> None:
    git(repo, "remote", "add", "origin", str(bare))
    assert resolve(repo).arg == "origin"


@pytest.mark.parametrize("name", ["nope", "./missing.git", "team/shared"])
def test_unknown_remote_is_a_one_line_validation_error(repo: Path, name: str) -> None:
    with pytest.raises(ValidationError) as info:
        resolve(repo, name)
    assert "unknown remote" in str(info.value) and "\n" not in str(info.value)
    with pytest.raises(ValidationError):
        fetch_board(repo, remote_of(repo, name))


def test_no_remote_at_all_and_a_bad_config_say_where_the_name_came_from(repo: Path) -> None:
    with pytest.raises(ValidationError, match="'origin' \\(from default\\)"):
        resolve(repo)
    git(repo, "config", "liza.remote", "ghost")
    with pytest.raises(ValidationError, match="'ghost' \\(from git config liza.remote\\)"):
        push_board(repo, remote_of(repo), board_commit(repo), None)


# --------------------------------------------------------------------------------------------------
# failures


def test_unreachable_remote_is_a_git_failure(repo: Path) -> None:
    url = f"git://127.0.0.1:{closed_port()}/remote.git"
    with pytest.raises(GitFailure) as info:
        fetch_board(repo, remote_of(repo, url))
    assert info.value.exit_code == 3 and "\n" not in str(info.value)
    with pytest.raises(GitFailure):
        push_board(repo, remote_of(repo, url), board_commit(repo), None)
    with pytest.raises(GitFailure):
        ls_remote_state(repo, remote_of(repo, url))


def test_repository_missing_on_the_daemon_is_a_git_failure(repo: Path, git_daemon: GitDaemon) -> None:
    with pytest.raises(GitFailure, match="no such repository"):
        fetch_board(repo, remote_of(repo, git_daemon.url("nothing-here.git")))


def test_a_silent_server_cannot_hang_us(repo: Path) -> None:
    with socket.socket() as server:  # accepts TCP connections (backlog) and never answers
        server.bind(("127.0.0.1", 0))
        server.listen(4)
        url = f"git://127.0.0.1:{server.getsockname()[1]}/remote.git"
        with pytest.raises(GitFailure, match="timed out"):
            fetch_board(repo, remote_of(repo, url), timeout=1.0)


def test_missing_git_executable_is_a_missing_dependency(
    repo: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    empty = tmp_path / "empty-bin"
    empty.mkdir()
    monkeypatch.setenv("PATH", str(empty))
    with pytest.raises(MissingDependency) as info:
        fetch_board(repo, remote_of(repo, "origin"))
    assert info.value.exit_code == 5


def test_invalid_push_arguments_are_validation_errors(repo: Path, bare: Path) -> None:
    git(repo, "remote", "add", "origin", str(bare))
    oid = board_commit(repo)
    with pytest.raises(ValidationError, match="not a board ref"):
        push_board(repo, remote_of(repo), oid, None, ref="refs/heads/main")
    with pytest.raises(ValidationError, match="not a full hex object id"):
        push_board(repo, remote_of(repo), "abc123", None)
    with pytest.raises(ValidationError, match="not a commit"):
        push_board(repo, remote_of(repo), "1" * 40, None)
    assert tip(bare) is None


def test_ls_remote_matches_the_exact_ref_name(repo: Path, bare: Path) -> None:
    git(repo, "remote", "add", "origin", str(bare))
    oid = board_commit(repo)
    git(repo, "push", "-q", "origin", f"{oid}:refs/liza/archive/refs/liza/state")  # tail-matches
    assert ls_remote_state(repo, remote_of(repo)) is None


# --------------------------------------------------------------------------------------------------
# what git itself does (why push_board checks ancestry itself) -- documented in docs/transport.md


def test_git_fetch_with_a_glob_matching_nothing_succeeds(repo: Path, bare: Path) -> None:
    git(repo, "fetch", "--no-tags", str(bare), "+refs/liza/*:refs/remotes/x/liza/*")


def test_git_forces_a_non_fast_forward_when_the_lease_matches(repo: Path, bare: Path) -> None:
    first, unrelated = board_commit(repo), board_commit(repo)
    git(repo, "push", "-q", str(bare), f"{first}:{STATE}")
    lease = f"--force-with-lease={STATE}:{first}"
    out = git(repo, "push", "--porcelain", lease, str(bare), f"{unrelated}:{STATE}")
    assert "(forced update)" in out and tip(bare) == unrelated


def test_git_refuses_a_non_fast_forward_of_any_ref_without_plus_or_lease(repo: Path, bare: Path) -> None:
    first, unrelated = board_commit(repo), board_commit(repo)
    git(repo, "push", "-q", str(bare), f"{first}:{STATE}")
    out = git(repo, "push", "--porcelain", str(bare), f"{unrelated}:{STATE}", check=False)
    assert "[rejected] (non-fast-forward)" in out and tip(bare) == first


def test_deny_non_fast_forwards_does_not_protect_refs_liza(repo: Path, bare: Path) -> None:
    git(bare, "config", "receive.denyNonFastForwards", "true")
    first, unrelated = board_commit(repo), board_commit(repo)
    git(repo, "push", "-q", str(bare), f"{first}:{STATE}")
    git(repo, "push", "-q", str(bare), f"+{unrelated}:{STATE}")  # accepted: only refs/heads/* is covered
    assert tip(bare) == unrelated


# --------------------------------------------------------------------------------------------------
# the daemon helper itself


def test_git_daemon_serves_and_stops(tmp_path: Path, repo: Path) -> None:
    base = tmp_path / "served"
    base.mkdir()
    with GitDaemon(base) as daemon:
        daemon.init_bare("r.git")
        url = daemon.url("r.git")
        assert git(repo, "ls-remote", url) == ""
        port = daemon.port
    with pytest.raises(OSError):
        socket.create_connection(("127.0.0.1", port), timeout=1.0).close()


def test_git_daemon_start_failure_is_reported(tmp_path: Path) -> None:
    with pytest.raises(Exception, match="did not start"):
        GitDaemon(tmp_path / "does-not-exist", start_timeout=5.0).start()
