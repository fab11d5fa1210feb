"""Messages that send the user the right way (finding 5 of issue 18): each environmental failure
is one line naming its cause and its fix, with the documented exit code, and never "please report
it" (kept for real bugs)."""
from __future__ import annotations

import os
import shutil
import stat
import subprocess
import sys
import tempfile
from pathlib import Path
from typing import Iterator

import pytest

from tests.conftest import git
from tests.faults import harness as h

pytestmark = pytest.mark.slow
NOBODY = 65534


def one_line(r: subprocess.CompletedProcess[str], code: int, *words: str) -> None:
    assert r.returncode == code, (r.returncode, r.stderr)
    lines = r.stderr.strip().splitlines()
    assert len(lines) == 1, r.stderr
    assert "please report" not in r.stderr and "Error:" not in r.stderr, r.stderr
    for w in words:
        assert w in r.stderr, (w, r.stderr)


@pytest.fixture
def shared(tmp_path: Path) -> Iterator[Path]:
    """A board in a directory another user can reach (pytest's own tmp dirs are private)."""
    top = Path(tempfile.mkdtemp(prefix="gitliza-faults-"))
    os.chmod(top, 0o755)
    path = top / "repo"
    path.mkdir()
    git(path, "init", "-q", "-b", "main")
    git(path, "commit", "-q", "--allow-empty", "-m", "initial")
    h.board_with(path, ("t1",))
    home = top / "home"
    home.mkdir()
    shutil.copy(Path(os.environ["GIT_CONFIG_GLOBAL"]), home / ".gitconfig")
    for p in (home, home / ".gitconfig"):
        os.chmod(p, 0o755 if p.is_dir() else 0o644)
    yield path
    shutil.rmtree(top, ignore_errors=True)


def as_user(repo: Path, uid: int | None, *args: str, agent: str = "c1"
            ) -> subprocess.CompletedProcess[str]:
    """`git liza ARGS` as user `uid` (None: as ourselves)."""
    env = h.cli_env(agent, HOME=str(repo.parent / "home"),
                    GIT_CONFIG_GLOBAL=str(repo.parent / "home" / ".gitconfig"))
    if uid is not None:
        closed = _closed_to_others(Path(sys.executable).parent)
        assert closed is None, (f"uid {uid} cannot run this venv's git-liza: {closed} is not "
                                "searchable by other users (a 0700 temporary directory?)")
    pre = [] if uid is None else ["setpriv", f"--reuid={uid}", f"--regid={uid}",
                                  "--clear-groups"]
    return subprocess.run([*pre, "git", "liza", *args], cwd=repo, env=env, capture_output=True,
                          text=True, timeout=120)


def _closed_to_others(path: Path) -> Path | None:
    """The first directory on the way to `path` that other users may not enter, or None."""
    for d in [*reversed(path.parents), path]:
        if not os.stat(d).st_mode & stat.S_IXOTH:
            return d
    return None


def writer(repo: Path) -> int | None:
    """Who runs the commands that must be refused by file permissions: root ignores them, so
    as root another user (owning the repository) does; otherwise we do."""
    if os.geteuid() != 0:
        return None
    if shutil.which("setpriv") is None:
        pytest.skip("running as root without setpriv: no user for whom permissions hold")
    subprocess.run(["chown", "-R", f"{NOBODY}:{NOBODY}", str(repo)], check=True)
    return NOBODY


def test_read_only_board_ref_is_permission_denied_not_a_lock(shared: Path) -> None:
    uid = writer(shared)
    os.chmod(shared / ".git" / "refs" / "liza", 0o555)
    try:
        one_line(as_user(shared, uid, "claim", "t1"), 3, "permission denied", "writable")
    finally:
        os.chmod(shared / ".git" / "refs" / "liza", 0o755)


def test_read_only_refs_heads_is_permission_denied(shared: Path) -> None:
    uid = writer(shared)
    os.chmod(shared / ".git" / "refs" / "heads", 0o555)
    try:
        one_line(as_user(shared, uid, "claim", "t1"), 3, "permission denied", "writable")
    finally:
        os.chmod(shared / ".git" / "refs" / "heads", 0o755)


def test_a_repository_of_another_user_names_safe_directory(shared: Path) -> None:
    if os.geteuid() != 0 or shutil.which("setpriv") is None:
        pytest.skip("needs root and setpriv to run as a user who does not own the repository")
    one_line(as_user(shared, NOBODY, "status"), 3, "owned by another user", "safe.directory")


def test_a_deleted_working_directory(repo: Path, tmp_path: Path) -> None:
    h.board_with(repo, ("t1",))
    gone = repo / "gone"
    gone.mkdir()
    r = subprocess.run(["sh", "-c", f"cd {gone} && rmdir {gone} && exec git liza status"],
                       env=h.cli_env(None), capture_output=True, text=True, timeout=60)
    one_line(r, 1, "current directory no longer exists", "cd ")


def test_a_full_output_device(repo: Path) -> None:
    if not os.path.exists("/dev/full"):
        pytest.skip("no /dev/full on this system")
    h.board_with(repo, ("t1",))
    with open("/dev/full", "w") as full:
        r = subprocess.run(["git", "liza", "status"], cwd=repo, env=h.cli_env(None),
                           stdout=full, stderr=subprocess.PIPE, text=True, timeout=60)
    r.stdout = ""
    one_line(r, 3, "no space left on device")
    assert "git operation failed" not in r.stderr


def test_a_refused_rewind_is_not_called_unparsable(repo: Path) -> None:
    h.board_with(repo, ("t1",))
    h.liza(repo, "hooks", "install", check=True)
    r = subprocess.run(["git", "update-ref", "refs/liza/state", "refs/liza/state~1"], cwd=repo,
                       env=h.cli_env(None), capture_output=True, text=True, timeout=60)
    assert r.returncode != 0
    assert "unparsable" not in r.stderr and "not a fast-forward" in r.stderr, r.stderr
