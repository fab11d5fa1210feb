"""The integration test a merge runs, in a sandbox of its own (gitliza/sandbox/treerun.py): the
merged tree's script tries what a rogue coder's test would at merge time, and everything is judged
from outside after the merge: the keys, the hooks, the main worktree, the files outside, the
supervisor's environment."""
from __future__ import annotations

import os
import socket
import threading
from pathlib import Path

import pygit2
import pytest

from gitliza.git.merge import IntegrationTestFailed, merge_commit_into
from gitliza.sandbox import treerun
from tests.conftest import git
from tests.git.test_merge import SCRIPT, SIG, commit_files, tip, worktree_paths
from tests.sandbox.test_rogue import needs_bwrap

pytestmark = needs_bwrap
SECRET = "NOT-FOR-TESTS-0452"


def _merge(repo: Path, commit: pygit2.Oid, mode: str = "on", timeout: float | None = None) -> bool:
    out = merge_commit_into(pygit2.Repository(str(repo)), "integration", commit, message="m",
                            signature=SIG, integration_test=SCRIPT, integration_timeout=timeout,
                            runner=treerun.runner(mode))
    return out.integration_tested


@pytest.fixture
def integ(repo: Path) -> Path:
    git(repo, "branch", "integration", "main")
    keys = repo / ".git" / "liza" / "keys"
    keys.mkdir(parents=True)
    (keys / "canary").write_text(SECRET + "\n")
    (repo / ".git" / "hooks").mkdir(exist_ok=True)
    return repo


ROGUE_TEST = """#!/bin/bash
C=$(git rev-parse --git-common-dir)
r() {{ echo "$1 $( ( eval "$2" ) >/dev/null 2>&1 && echo ESCAPED || echo held)"; }}
r read-keys "cat {main}/.git/liza/keys/canary"
r read-keys-gitdir "cat $C/liza/keys/canary"
r write-outside "echo x > {outside}/planted"
r write-main "echo evil >> {main}/README.md"
r write-hook "echo 'echo pwned' > {main}/.git/hooks/post-checkout"
r write-config "git config --file {main}/.git/config core.fsmonitor pwned"
r move-ref "git update-ref refs/heads/main HEAD"
r read-home "ls {home}"
echo "ENV $(env | grep -c NOT-FOR-TESTS) $HOME $GITLIZA_WEB_TOKEN"
git status --porcelain >/dev/null && echo GIT-WORKS
echo scratch > own-file && echo CHECKOUT-WRITABLE
exit 0
"""


def test_rogue_integration_test_is_contained_and_the_merge_still_happens(
        integ: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    outside = tmp_path / "outside"
    outside.mkdir()
    home = Path(os.environ.get("HOME") or "/root")
    monkeypatch.setenv("ANTHROPIC_API_KEY", SECRET)
    monkeypatch.setenv("GITLIZA_WEB_TOKEN", SECRET)
    before = {p: p.read_bytes() for p in [integ / "README.md", integ / ".git" / "config"]}
    hooks = sorted((integ / ".git" / "hooks").iterdir())
    main_tip = tip(integ, "main")
    task = commit_files(integ, "liza/t", {str(SCRIPT): ROGUE_TEST.format(
        main=integ, outside=outside, home=home)}, executable=True)
    report: list[str] = []

    def keep(argv: list[str], cwd: Path, timeout: float | None) -> tuple[int | None, str]:
        code, out = run(argv, cwd, timeout)
        report.append(out)
        return code, out
    run = treerun.runner("on")
    assert run is not None
    merge_commit_into(pygit2.Repository(str(integ)), "integration", task, message="m",
                      signature=SIG, integration_test=SCRIPT, runner=keep)
    out = report[0]
    assert "ESCAPED" not in out, out
    assert out.count(" held") == 8, out
    assert "ENV 0 " in out and SECRET not in out
    assert "GIT-WORKS" in out and "CHECKOUT-WRITABLE" in out
    # judged from outside
    assert list(outside.iterdir()) == []
    assert {p: p.read_bytes() for p in before} == before
    assert sorted((integ / ".git" / "hooks").iterdir()) == hooks
    assert tip(integ, "main") == main_tip and tip(integ, "integration") == task
    assert len(worktree_paths(integ)) == 1


def test_a_failing_test_in_the_sandbox_fails_the_merge_and_a_timeout_kills_it(integ: Path) -> None:
    before = tip(integ, "integration")
    task = commit_files(integ, "liza/t", {str(SCRIPT): "echo started\nexit 4\n"})
    with pytest.raises(IntegrationTestFailed) as caught:
        _merge(integ, task)
    assert caught.value.returncode == 4 and "started" in caught.value.output
    task = commit_files(integ, "liza/t", {str(SCRIPT): "echo started\nsleep 60 & sleep 60\n"})
    with pytest.raises(IntegrationTestFailed, match="timed out"):
        _merge(integ, task, timeout=1.0)
    assert tip(integ, "integration") == before


@pytest.mark.parametrize("mode", ["offline", "model"])
def test_the_test_gets_the_modes_network(integ: Path, mode: str) -> None:
    srv = socket.socket()
    srv.bind(("127.0.0.1", 0))
    srv.listen(4)
    port = srv.getsockname()[1]
    hits: list[int] = []

    def accept() -> None:
        try:
            while True:
                c, _ = srv.accept()
                hits.append(1)
                c.close()
        except OSError:
            return
    threading.Thread(target=accept, daemon=True).start()
    script = (f"python3 -c \"import socket; socket.create_connection(('127.0.0.1', {port}), 3)\""
              " && echo REACHED; exit 0\n")
    try:
        assert _merge(integ, commit_files(integ, "liza/t", {str(SCRIPT): script}), mode)
        assert hits == []
    finally:
        srv.close()


def test_off_runs_the_test_as_the_caller() -> None:
    assert treerun.runner("off") is None
