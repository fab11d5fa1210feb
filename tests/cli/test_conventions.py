"""git's and Python's conventions: a generated man page that `git help liza` and `git liza --help`
find, `.pre-commit-hooks.yaml`, and a wheel that installs and runs on a fresh environment."""
from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
from ruamel.yaml import YAML

from gitliza.cli import app as cli, manpage

from gitliza.hooks import client, dispatch
from tests.conftest import commit_specs, git

ROOT = Path(__file__).resolve().parents[2]
BIN = Path(sys.executable).parent


def test_man_page_is_generated_from_the_cli_and_current() -> None:
    text = manpage.render(cli.click_group())
    assert (ROOT / "man" / "git-liza.1").read_text("utf-8") == text, (
        "man/git-liza.1 is stale: python3 dev.py regenerates it (python -m gitliza.cli.manpage FILE)")
    group = cli.click_group()
    for name, cmd in group.commands.items():
        if not getattr(cmd, "hidden", False):
            assert f"\\fBgit liza {name.replace('-', chr(92) + '-')}" in text, name


@pytest.mark.skipif(shutil.which("man") is None, reason="no man on this machine")
def test_git_help_liza_finds_the_page_next_to_the_executable(tmp_path: Path, repo: Path) -> None:
    prefix = tmp_path / "prefix"
    (prefix / "bin").mkdir(parents=True)
    (prefix / "bin" / "git-liza").symlink_to(BIN / "git-liza")
    (prefix / "share" / "man" / "man1").mkdir(parents=True)
    shutil.copy(ROOT / "man" / "git-liza.1", prefix / "share" / "man" / "man1" / "git-liza.1")
    env = {k: v for k, v in os.environ.items() if k != "MANPATH"}
    env.update(PATH=f"{prefix / 'bin'}{os.pathsep}{env['PATH']}", MANPAGER="cat", PAGER="cat",
               GIT_PAGER="cat", MANWIDTH="80")
    for args in (["help", "liza"], ["liza", "--help"]):
        r = subprocess.run(["git", *args], cwd=repo, env=env, capture_output=True, text=True,
                           timeout=60)
        assert r.returncode == 0, r.stderr
        assert "git-liza - the Liza multi-agent blackboard" in r.stdout and "claim-review" in r.stdout


PRE_COMMIT_STAGES = {"commit-msg", "post-checkout", "post-commit", "post-merge", "post-rewrite",
                     "pre-commit", "pre-merge-commit", "pre-push", "pre-rebase",
                     "prepare-commit-msg", "manual"}
PRE_COMMIT_KEYS = {"id", "name", "entry", "language", "files", "exclude", "types", "types_or",
                   "exclude_types", "always_run", "fail_fast", "verbose", "pass_filenames",
                   "require_serial", "description", "language_version", "minimum_pre_commit_version",
                   "args", "stages"}


def test_pre_commit_hooks_manifest() -> None:
    hooks = YAML(typ="safe").load((ROOT / ".pre-commit-hooks.yaml").read_text())
    assert isinstance(hooks, list) and hooks
    scripts = {"gitliza", "git-liza"}
    for h in hooks:
        assert {"id", "name", "entry", "language"} <= set(h) <= PRE_COMMIT_KEYS, h
        assert h["language"] == "python" and h["pass_filenames"] is False
        assert set(h["stages"]) <= PRE_COMMIT_STAGES
        exe, sub, hook = h["entry"].split()
        assert exe in scripts and sub == "hook-impl" and hook in dispatch.HOOK_HANDLERS
        assert h["stages"] == [hook]
    assert f'{sorted(scripts)[1]} = "gitliza.__main__:main"' in (ROOT / "pyproject.toml").read_text()


def test_pre_push_under_pre_commit_rebuilds_gits_line(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("PRE_COMMIT_TO_REF", "b" * 40)
    monkeypatch.setenv("PRE_COMMIT_FROM_REF", "a" * 40)
    monkeypatch.setenv("PRE_COMMIT_REMOTE_BRANCH", "refs/liza/state")
    monkeypatch.setenv("PRE_COMMIT_LOCAL_BRANCH", "refs/liza/state")
    assert client._pre_commit_push_line() == (
        f"refs/liza/state {'b' * 40} refs/liza/state {'a' * 40}\n").encode()


@pytest.mark.slow
def test_wheel_installs_and_runs_in_a_fresh_environment(tmp_path: Path, repo: Path) -> None:
    """What `pipx install gitliza-*.whl` does: a new venv, the wheel and its dependencies."""
    dist = tmp_path / "dist"
    subprocess.run([sys.executable, "-m", "pip", "wheel", "-q", "--no-deps", "-w", str(dist),
                    str(ROOT)], check=True, timeout=600)
    wheel = next(dist.glob("gitliza-*.whl"))
    env_dir = tmp_path / "fresh"
    subprocess.run([sys.executable, "-m", "venv", str(env_dir)], check=True, timeout=300)
    py = env_dir / "bin" / "python"
    subprocess.run([str(py), "-m", "pip", "install", "-q", str(wheel)], check=True, timeout=900)
    assert (env_dir / "share" / "man" / "man1" / "git-liza.1").is_file()
    env = {k: v for k, v in os.environ.items() if not k.startswith(("PYTHON", "VIRTUAL_ENV"))}
    env.update(PATH=f"{env_dir / 'bin'}{os.pathsep}/usr/bin:/bin", LIZA_AGENT_ID="planner-1")

    def liza(*args: str) -> str:
        r = subprocess.run(["git", "liza", *args], cwd=repo, env=env, capture_output=True,
                           text=True, timeout=120)
        assert r.returncode == 0, (args, r.stderr)
        return r.stdout
    assert liza("--version").startswith("git-liza version ")
    commit_specs(repo, "spec.md")
    liza("init", "wheel goal")
    liza("register", "planner-1", "--role", "planner")
    liza("register", "coder-1", "--role", "coder")
    liza("add", "task-1", "--desc", "d", "--spec-ref", "spec.md", "--done-when", "w", "--scope",
         "x", "--ready")
    env["LIZA_AGENT_ID"] = "coder-1"
    assert "task-1" in liza("claim", "task-1")
    assert "CLAIMED" in liza("show", "task-1")
    liza("verify")
    git(repo, "fsck", "--strict", "--no-dangling")
