#!/usr/bin/env python3
"""The end-to-end example: a throw-away repository, a board, a planner, two coders and a reviewer.

    python3 dev.py example            # sets up .venv, then runs this
    python3 examples/walkthrough.py   # with gitliza already installed

Every step is a real `git liza ...` command (printed with its output), acting as the agent named by
LIZA_AGENT_ID. The repository is kept at the end so you can look around; its path is printed.
"""
from __future__ import annotations

import os
import shlex
import subprocess
import sys
import tempfile
from pathlib import Path

BIN = Path(sys.executable).parent
ENV = dict(os.environ, PATH=f"{BIN}{os.pathsep}{os.environ.get('PATH', '')}",
           GIT_AUTHOR_NAME="Liza Example", GIT_AUTHOR_EMAIL="example@liza.invalid",
           GIT_COMMITTER_NAME="Liza Example", GIT_COMMITTER_EMAIL="example@liza.invalid")
ENV.pop("LIZA_AGENT_ID", None)


def run(cwd: Path, *args: str, agent: str | None = None, expect: int = 0, quiet: bool = False) -> str:
    env = dict(ENV, **({"LIZA_AGENT_ID": agent} if agent else {}))
    who = f"[{agent}] " if agent else ""
    print(f"\n$ {who}{' '.join(shlex.quote(a) for a in args)}", flush=True)
    r = subprocess.run(list(args), cwd=cwd, env=env, capture_output=True, text=True)
    if not quiet and r.stdout.strip():
        print(r.stdout.rstrip())
    if r.stderr.strip():
        print(r.stderr.rstrip())
    if r.returncode != expect:
        sys.exit(f"example failed: exit {r.returncode} (expected {expect})")
    return r.stdout


def liza(cwd: Path, *args: str, **kw: object) -> str:
    return run(cwd, "git", "liza", *args, **kw)  # type: ignore[arg-type]


def write(path: Path, text: str) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text)


def main() -> int:
    root = Path(tempfile.mkdtemp(prefix="gitliza-example-"))
    repo = root / "project"
    repo.mkdir()
    print(f"# a throw-away project in {repo}")
    run(repo, "git", "init", "-q", "-b", "main")
    write(repo / "specs" / "retry.md", "# Retry\nget_user retries 3 times on 5xx.\n")
    write(repo / "client.py", "def get_user(uid):\n    return fetch(uid)\n")
    run(repo, "git", "add", ".")
    run(repo, "git", "commit", "-q", "-m", "initial project")

    print("\n## 1. The human sets up the board and the team")
    liza(repo, "init", "Retry logic for all API calls", "--integration-branch", "integration")
    for agent, role in [("planner-1", "planner"), ("coder-1", "coder"), ("coder-2", "coder"),
                        ("reviewer-1", "code_reviewer")]:
        liza(repo, "register", agent, "--role", role)

    print("\n## 2. The planner splits the goal into tasks")
    P = "planner-1"
    liza(repo, "add", "retry-get-user", "--desc", "Retry get_user on 5xx", "--spec-ref",
         "specs/retry.md", "--done-when", "get_user retries 3x on 5xx, with a test", "--scope",
         "client.get_user", "--priority", "1", "--ready", agent=P)
    liza(repo, "add", "retry-docs", "--desc", "Document the retry policy", "--spec-ref",
         "specs/retry.md", "--done-when", "README explains the policy", "--scope", "docs",
         "--depends-on", "retry-get-user", agent=P)
    liza(repo, "finalize", "retry-docs", agent=P)
    liza(repo, "add", "../escape", "--desc", "a bad id is refused", agent=P, expect=1)
    liza(repo, "ready", agent="coder-1")

    print("\n## 3. coder-1 claims the best task into its own worktree and does the work")
    liza(repo, "claim", agent="coder-1")
    wt = repo / ".worktrees" / "retry-get-user"
    write(wt / "client.py", "def get_user(uid, tries=3):\n    for _ in range(tries):\n"
          "        r = fetch(uid)\n        if r.status < 500:\n            return r\n    return r\n")
    write(wt / "untracked.txt", "scratch\n")
    liza(wt, "submit", "retry-get-user", agent="coder-1", expect=1)  # clean-sync refuses
    (wt / "untracked.txt").unlink()
    run(wt, "git", "commit", "-q", "-am", "retry get_user 3 times on 5xx")
    liza(wt, "submit", "retry-get-user", agent="coder-1")

    print("\n## 4. reviewer-1 rejects (no test), coder-1 fixes, reviewer-1 approves")
    liza(repo, "claim-review", agent="reviewer-1")
    liza(wt, "verdict", "retry-get-user", "reject", "--reason",
         "Blockers: 1 - no test for the 5xx retry (done_when asks for one)", agent="reviewer-1")
    liza(repo, "claim", "retry-get-user", agent="coder-1")
    write(wt / "test_client.py", "def test_retries():\n    assert True\n")
    run(wt, "git", "add", "test_client.py")
    run(wt, "git", "commit", "-q", "-m", "test the retry")
    liza(wt, "submit", "retry-get-user", agent="coder-1")
    liza(repo, "claim-review", "retry-get-user", agent="reviewer-1")
    liza(wt, "verdict", "retry-get-user", "approve", agent="reviewer-1")

    print("\n## 5. The approved review commit is merged into the integration branch")
    liza(repo, "merge", "retry-get-user", agent="reviewer-1")
    run(repo, "git", "log", "--oneline", "integration")

    print("\n## 6. The dependent task became claimable; coder-2 takes it and lets it go")
    liza(repo, "claim", agent="coder-2")
    liza(repo, "release", "retry-docs", agent="coder-2")
    liza(repo, "note", "Docs can wait for the next sprint", "--for", "retry-docs")

    print("\n## 7. The board, its audit trail, and a replay of the whole history")
    liza(repo, "status")
    liza(repo, "show", "retry-get-user")
    run(repo, "git", "log", "--format=%h %s", "refs/liza/state")
    run(repo, "git", "log", "-1", "--format=%B", "refs/liza/state~3")
    liza(repo, "validate")
    liza(repo, "verify")
    liza(repo, "materialize")  # .liza/state.yaml and log.yaml in the Liza spec's schema
    print("\n".join((repo / ".liza" / "state.yaml").read_text().splitlines()[:14]) + "\n  ...")

    print("\n## 8. Sharing the board through a plain git remote")
    remote = root / "remote.git"
    run(root, "git", "init", "-q", "--bare", "-b", "main", str(remote))
    liza(remote, "hooks", "install", "--server")
    run(repo, "git", "remote", "add", "origin", str(remote))
    run(repo, "git", "push", "-q", "origin", "main")  # the project's history, before any task
    liza(repo, "push")  # the board, with the integration branch it records merges into
    run(repo, "git", "ls-remote", "origin")
    other = root / "other-machine"
    run(root, "git", "clone", "-q", str(remote), str(other))
    liza(other, "pull")
    liza(other, "status")

    print(f"\n# done: the repository is in {repo}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
