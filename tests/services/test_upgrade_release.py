"""Upgrading from the real format-1 release (issue 28 item 5): gitliza as it was at the last commit
before the storage format changed (OLD_RELEASE) is installed into a throw-away venv, the way
dev.py installs (its own requirements.lock, hash-checked, then gitliza itself without build
isolation), once per test session. A team runs on a board it made; this gitliza upgrades the
board and a team runs on; `verify` accepts the whole history; the old release, shown the upgraded
board, refuses in one line and changes nothing. Then two clones of one bare remote, one on each
release.

What the old release prints on a newer board is asserted as it is: it has no format dispatch of its
own (exit 5, "is in format 'gitliza-state 2'; this gitliza reads 'gitliza-state 1' (upgrade
gitliza)"; its verified sync: exit 4, "unknown op 'upgrade'"); the exit-4 refusal naming both
versions applies from this release on (tests/services/test_upgrade.py).
"""
from __future__ import annotations

import fcntl
import os
import shutil
import subprocess
import sys
import tarfile
import venv
from dataclasses import dataclass
from pathlib import Path

import pytest

from gitliza.hooks.install import install
from tests.conftest import git
from tests.team.procs import FAST

# A venv built once per test run (minutes: the lock's every package), then real teams.
pytestmark = [pytest.mark.slow, pytest.mark.timeout(1800)]

ROOT = Path(__file__).resolve().parents[2]
OLD_RELEASE = "fb0f0308ec2f87f0552bdfd1d72a2ef0bc5c276b"  # the last commit writing format 1
STATE = "refs/liza/state"
NEW = Path(sys.executable).parent

# A coder that commits a file in its worktree and submits; a reviewer that approves what it sees.
CODER = """#!/bin/sh
set -e
test -n "$LIZA_TASK_ID" && test "$(pwd)" = "$LIZA_WORKTREE"
echo "$LIZA_TASK_ID" > "$LIZA_TASK_ID.txt"
git add "$LIZA_TASK_ID.txt"
git diff --cached --quiet || git commit -q -m "implement $LIZA_TASK_ID"
git liza submit "$LIZA_TASK_ID"
"""
REVIEWER = """#!/bin/sh
set -e
test "$(git rev-parse HEAD)" = "$LIZA_REVIEW_COMMIT"
test -f "$LIZA_TASK_ID.txt"
git liza verdict "$LIZA_TASK_ID" approve --commit "$LIZA_REVIEW_COMMIT"
"""


@dataclass(frozen=True)
class Release:
    """One installed gitliza: its venv's bin directory."""

    bin: Path
    name: str

    def env(self, agent: str | None = None) -> dict[str, str]:
        e = dict(os.environ, PATH=f"{self.bin}{os.pathsep}{os.environ['PATH']}",
                 LIZA_SANDBOX="off")  # the scripted agents write in the test's tmp dir
        for k in [k for k in e if k.startswith("LIZA_") and k != "LIZA_SANDBOX"]:
            del e[k]
        e.pop("PYTHONPATH", None)  # the old release must import its own gitliza, not ours
        if agent:
            e["LIZA_AGENT_ID"] = agent
        return e

    def run(self, cwd: Path, *args: str, agent: str | None = None,
            timeout: float = 300) -> subprocess.CompletedProcess[str]:
        return subprocess.run([str(self.bin / "git-liza"), *args], cwd=cwd, env=self.env(agent),
                              capture_output=True, text=True, timeout=timeout)

    def ok(self, cwd: Path, *args: str, agent: str | None = None) -> str:
        r = self.run(cwd, *args, agent=agent)
        assert r.returncode == 0, f"{self.name}: git liza {' '.join(args)}: {r.stderr}"
        return r.stdout

    def supervise(self, cwd: Path, role: str, agent: str, script: Path, *extra: str) -> str:
        """One `git liza agent` supervisor, run to its end; its output."""
        r = self.run(cwd, "agent", role, *extra, "--", str(script), agent=agent, timeout=600)
        assert r.returncode == 0, f"{self.name} {role}: {r.stdout[-3000:]}{r.stderr[-2000:]}"
        return r.stdout + r.stderr


def _pip(py: Path, *args: str) -> None:
    r = subprocess.run([str(py), "-m", "pip", "--disable-pip-version-check", "-q", *args],
                       capture_output=True, text=True)
    if r.returncode != 0:
        last = (r.stderr.strip().splitlines() or ["no output"])[-1]
        pytest.skip(f"cannot install the format-1 release into a venv here (pip: {last})")


@pytest.fixture(scope="session")
def old(tmp_path_factory: pytest.TempPathFactory) -> Release:
    """The format-1 release, installed once per test run: under xdist the workers share one
    install (in the run's common temporary directory, built by whichever comes first)."""
    have = subprocess.run(["git", "-C", str(ROOT), "cat-file", "-e", f"{OLD_RELEASE}^{{commit}}"],
                          capture_output=True)
    if have.returncode != 0:
        pytest.skip(f"the format-1 release's commit {OLD_RELEASE[:12]} is not in this clone "
                    "(a shallow clone?): fetch the full history to run the upgrade test")
    base = tmp_path_factory.getbasetemp()
    if os.environ.get("PYTEST_XDIST_WORKER"):
        base = base.parent  # shared by the workers of this run
    with open(base / "format1-release.lock", "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        return _install(base / "format1-release")


def _install(where: Path) -> Release:
    release = Release(where / "venv" / "bin", "format-1 release")
    if (where / "installed").exists():
        return release
    if where.exists():  # a build that failed half-way: start again
        shutil.rmtree(where)
    where.mkdir()
    archive = where / "src.tar"
    subprocess.run(["git", "-C", str(ROOT), "archive", "--output", str(archive), OLD_RELEASE],
                   check=True)
    src = where / "src"
    with tarfile.open(archive) as tar:
        tar.extractall(src, filter="data")
    env_dir = where / "venv"
    venv.EnvBuilder(with_pip=True).create(env_dir)
    py = env_dir / "bin" / "python"
    _pip(py, "install", "--require-hashes", "--no-deps", "-r", str(src / "requirements.lock"))
    _pip(py, "install", "--no-deps", "--no-build-isolation", str(src))
    r = subprocess.run([str(py), "-c", "import gitliza, gitliza.core.model as m; "
                        "print(gitliza.__file__, m.FORMAT_VERSION)"],
                       capture_output=True, text=True, env=release.env(), cwd=where)
    assert r.returncode == 0, r.stderr
    file, version = r.stdout.split()
    assert file.startswith(str(env_dir)) and version == "1", r.stdout  # not our gitliza
    (where / "installed").touch()
    return release


NEWREL = Release(NEW, "this release")


def _scripts(tmp: Path) -> tuple[Path, Path]:
    coder, reviewer = tmp / "coder.sh", tmp / "reviewer.sh"
    coder.write_text(CODER)
    reviewer.write_text(REVIEWER)
    coder.chmod(0o755)
    reviewer.chmod(0o755)
    return coder, reviewer


def _add(rel: Release, repo: Path, task: str, *extra: str) -> None:
    rel.ok(repo, "add", task, "--desc", f"do {task}", "--spec-ref", "README.md",
           "--done-when", "done", "--scope", task, "--ready", *extra)


def _team_merges(rel: Release, repo: Path, task: str, coder: Path, reviewer: Path) -> None:
    """A coder supervisor does `task`, a reviewer supervisor approves and merges it."""
    rel.supervise(repo, "coder", "coder-1", coder, "--once")
    out = rel.supervise(repo, "code-reviewer", "reviewer-1", reviewer)
    assert f"merged {task} into integration" in out, out


def _fmt(path: Path, rev: str = STATE) -> str:
    return git(path, "cat-file", "blob", f"{rev}:format")


def _one_line_refusal(r: subprocess.CompletedProcess[str]) -> str:
    """The old release on a format-2 board: its own refusal (exit 5), one line."""
    lines = r.stderr.strip().splitlines()
    assert r.returncode == 5 and len(lines) == 1, (r.returncode, r.stderr)
    assert "'gitliza-state 2'" in lines[0] and "'gitliza-state 1'" in lines[0], lines
    return lines[0]


def test_a_board_of_the_format1_release_upgrades_and_a_team_runs_on(
        old: Release, repo: Path, tmp_path: Path) -> None:
    coder, reviewer = _scripts(tmp_path)
    # The format-1 release makes the board and a team merges t1 on it.
    old.ok(repo, "init", "Build hello")
    for k, v in {**FAST, "reviewer_max_wait": "2"}.items():
        old.ok(repo, "config", k, v)
    _add(old, repo, "t1")
    _team_merges(old, repo, "t1", coder, reviewer)
    assert _fmt(repo) == "gitliza-state 1"
    v1_tip = git(repo, "rev-parse", STATE)
    v1_history = git(repo, "rev-list", STATE).split()
    assert "verified" in old.ok(repo, "verify")
    # This release upgrades it in place: one commit on top, nothing rewritten.
    NEWREL.ok(repo, "upgrade", "--no-sync")
    upgrade = git(repo, "rev-parse", STATE)
    assert git(repo, "rev-parse", f"{STATE}^") == v1_tip and _fmt(repo) == "gitliza-state 2"
    # The old release refuses the upgraded board in one line and leaves it as it is.
    for args in (["status"], ["add", "t9", "--desc", "d", "--spec-ref", "README.md",
                              "--done-when", "w", "--scope", "x"], ["note", "hi"]):
        _one_line_refusal(old.run(repo, *args))
        assert git(repo, "rev-parse", STATE) == upgrade
    r = old.run(repo, "verify")  # it cannot replay a format it does not know: exit 4, one line
    assert r.returncode == 4 and len(r.stderr.strip().splitlines()) == 1, r.stderr
    # This release runs on: a team merges t2.
    _add(NEWREL, repo, "t2")
    _team_merges(NEWREL, repo, "t2", coder, reviewer)
    out = NEWREL.ok(repo, "verify")
    assert "upgrade 1" in out and "merge 2" in out, out
    # History intact: every format-1 commit still there, unchanged, below the upgrade.
    history = git(repo, "rev-list", STATE).split()
    assert history[-len(v1_history):] == v1_history and upgrade in history
    for task in ("t1", "t2"):
        assert '"status": "MERGED"' in NEWREL.ok(repo, "show", task, "--json")
        assert git(repo, "show", f"integration:{task}.txt") == task


def test_two_clones_one_on_each_release(old: Release, tmp_path: Path, bare: Path) -> None:
    install(bare, server=True, python=sys.executable)  # the server runs this release
    seed = tmp_path / "seed"
    git(tmp_path, "clone", "-q", str(bare), str(seed))
    (seed / "README.md").write_text("project\n")
    git(seed, "add", "README.md")
    git(seed, "commit", "-q", "-m", "initial")
    git(seed, "push", "-q", "origin", "main")
    git(seed, "config", "liza.remote", "origin")
    old.ok(seed, "init", "Build hello")
    _add(old, seed, "t1")
    old.ok(seed, "sync")
    clones = {}
    for name, rel in (("a", NEWREL), ("b", old)):
        path = clones[name] = tmp_path / name
        git(tmp_path, "clone", "-q", str(bare), str(path))
        git(path, "config", "liza.remote", "origin")
        rel.ok(path, "pull")
    a, b = clones["a"], clones["b"]
    # B, on the old release, writes without syncing; A writes (its first write upgrades) and syncs.
    old.ok(b, "note", "from b", "--no-sync")
    b_local = git(b, "rev-parse", STATE)
    NEWREL.ok(a, "note", "from a")
    assert git(bare, "cat-file", "blob", f"{STATE}:format") == "gitliza-state 2"
    # B's old release refuses the upgraded remote in one line (exit 4: its verified sync does not
    # know the `upgrade` op); its own board is untouched.
    r = old.run(b, "sync")
    assert r.returncode == 4 and len(r.stderr.strip().splitlines()) == 1, r.stderr
    assert "unknown op 'upgrade'" in r.stderr and "not moved" in r.stderr
    assert git(b, "rev-parse", STATE) == b_local and _fmt(b) == "gitliza-state 1"
    # Its message suggests `git liza repair`, which from the old release would rebuild the remote
    # without the upgrade: the server hook (this release) refuses that rewrite.
    remote_tip = git(bare, "rev-parse", STATE)
    assert old.run(b, "repair").returncode != 0
    assert git(bare, "rev-parse", STATE) == remote_tip
    # B with this release: its format-1 note is replayed onto the upgraded board.
    NEWREL.ok(b, "sync")
    assert git(b, "rev-parse", STATE) == git(bare, "rev-parse", STATE)
    ops = git(bare, "log", "--format=%(trailers:key=Liza-Op,valueonly)", STATE).split()
    assert ops[:3] == ["note", "note", "upgrade"] and ops.count("upgrade") == 1, ops
    assert "verified" in NEWREL.ok(a, "verify", "--remote", "origin")
    # And the old release, pulled onto the upgraded board again, still only refuses.
    _one_line_refusal(old.run(b, "status"))
