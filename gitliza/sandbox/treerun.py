"""Code of the repository run by gitliza itself, in a sandbox of its own: the integration test a
merge runs on the merged tree (git/merge.py takes the runner; the supervisor and the command line
pass this one).

The code is whatever a coder committed and a reviewer approved, so it gets what an agent gets and
less: the view of a reviewer (the whole file system read-only, the user's home and runtime dir
hidden, the common git dir without `liza/`: no private keys), a private HOME and /tmp made for
this run and removed after it, no broker (it acts on no board), the sandbox mode's network (a
network namespace of its own in `model` and `offline`), the same seccomp filter and limits as an
agent, and an environment built from nothing: PATH, the locale and the terminal type, no variable
of the supervisor's (no model API key, no web token, no git redirection). Writable: the throw-away
checkout of the merged commit and its worktree admin dir, nothing else.
"""
from __future__ import annotations

import os
import shutil
import sys
import tempfile
from pathlib import Path

import pygit2

from gitliza.git.merge import Runner, run_captured
from gitliza.sandbox import bwrap, policy, reexpose, seccomp
from gitliza.sandbox.box import hidden_dirs, private_dirs
from gitliza.sandbox.policy import SandboxMode

KEEP_ENV = ("PATH", "LANG", "LANGUAGE", "LC_ALL", "LC_CTYPE", "LC_MESSAGES", "TERM", "TZ")


def clean_env(env: dict[str, str], home: Path) -> dict[str, str]:
    out = {k: v for k, v in env.items() if k in KEEP_ENV or k.startswith("LC_")}
    out.update(HOME=str(home), TMPDIR="/tmp", USER="liza", LOGNAME="liza")
    out.setdefault("PATH", os.defpath)
    return out


def runner(mode: SandboxMode, lim: policy.Limits | None = None) -> Runner | None:
    """The integration test's runner for a sandbox mode (None for `off`: the human's explicit
    choice, the test runs as the caller, as every agent then does). Checks bubblewrap now (exit 5
    naming the fix)."""
    if mode == SandboxMode.OFF:
        return None
    exe = bwrap.require()
    lim = lim or policy.DEFAULT_LIMITS

    def run(argv: list[str], checkout: Path, timeout: float | None) -> tuple[int | None, str]:
        assert lim is not None
        return run_in_sandbox(exe, mode, argv, checkout, timeout, lim)
    return run


def run_in_sandbox(exe: str, mode: SandboxMode, argv: list[str], checkout: Path,
                   timeout: float | None, lim: policy.Limits) -> tuple[int | None, str]:
    repo = pygit2.Repository(str(checkout))
    admin = Path(repo.path).resolve()  # <common>/worktrees/<name>
    common = Path(repo.path).resolve().parent.parent
    main = _main_worktree(common, checkout)
    scratch = Path(tempfile.mkdtemp(prefix="liza-test-"))
    try:
        home, tmp = scratch / "home", scratch / "tmp"
        home.mkdir(mode=0o700)
        tmp.mkdir(mode=0o700)
        env = clean_env(dict(os.environ), home)
        hidden = hidden_dirs()
        # The home's PATH entries as themselves, never the home (reexpose.py); one dropped is
        # already named by the agents' supervisors, which get the same PATH.
        shown, _dropped = reexpose.needed(argv, env, (), hidden)
        view = policy.View(
            role="integration-test", cwd=checkout, main=main, common=common,
            common_entries=tuple(sorted(os.listdir(common))), home=home, tmp=tmp, run=None,
            hidden=tuple(hidden), reexpose=tuple(shown),
            network=mode == SandboxMode.ON, writable=(checkout, admin), private=private_dirs(main),
            tmp_max_mb=lim.tmp_mb)
        command = seccomp.inside_command(sys.executable, argv, lim.pids, lim.memory_mb)
        return run_captured(policy.bwrap_argv(exe, view, command), checkout, timeout, env)
    finally:
        shutil.rmtree(scratch, ignore_errors=True)


def _main_worktree(common: Path, fallback: Path) -> Path:
    main = pygit2.Repository(str(common)).workdir
    return Path(main).resolve() if main else fallback
