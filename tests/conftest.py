"""Fixtures: real git repositories in tmp dirs, with a fixed identity and no user/system config."""
from __future__ import annotations

import os
import subprocess
from pathlib import Path
from typing import TYPE_CHECKING, Iterator

import pytest

if TYPE_CHECKING:
    from gitliza.git.remotes.remote import Remote

IDENTITY = {
    "GIT_AUTHOR_NAME": "Liza Test",
    "GIT_AUTHOR_EMAIL": "liza@example.invalid",
    "GIT_COMMITTER_NAME": "Liza Test",
    "GIT_COMMITTER_EMAIL": "liza@example.invalid",
}


@pytest.fixture(autouse=True)
def _isolated_git(tmp_path_factory: pytest.TempPathFactory, monkeypatch: pytest.MonkeyPatch) -> None:
    """No test sees the machine's git config, templates, or agent identity."""
    home = tmp_path_factory.mktemp("home")
    template = tmp_path_factory.mktemp("template")  # empty: no sample hooks
    monkeypatch.setenv("HOME", str(home))
    monkeypatch.setenv("GIT_CONFIG_GLOBAL", str(home / ".gitconfig"))
    monkeypatch.setenv("GIT_CONFIG_NOSYSTEM", "1")
    monkeypatch.setenv("GIT_TEMPLATE_DIR", str(template))
    monkeypatch.setenv("NO_COLOR", "1")
    for k, v in IDENTITY.items():
        monkeypatch.setenv(k, v)
    for k in ("LIZA_AGENT_ID", "GIT_DIR", "GIT_WORK_TREE", "GIT_INDEX_FILE"):
        monkeypatch.delenv(k, raising=False)
    (home / ".gitconfig").write_text(
        "[user]\n\tname = Liza Test\n\temail = liza@example.invalid\n"
        "[init]\n\tdefaultBranch = main\n"
    )


@pytest.fixture(autouse=True)
def _drop_dead_repositories() -> Iterator[None]:
    """A pygit2 Repository is a reference cycle: the handles a test opened in process keep their
    pack files open until a full collection, which a long pytest worker seldom runs (one worker
    held 1,000 descriptors). Collected after a test when the worker holds many."""
    yield
    if len(os.listdir("/proc/self/fd")) > 128:
        import gc
        gc.collect()


def git(cwd: Path | str, *args: str, check: bool = True, env: dict[str, str] | None = None) -> str:
    """Run the real git executable; return stdout (stripped)."""
    r = subprocess.run(
        ["git", *args], cwd=cwd, capture_output=True, text=True, check=False,
        env=None if env is None else {**os.environ, **env},
    )
    if check and r.returncode != 0:
        raise AssertionError(f"git {' '.join(args)} failed ({r.returncode}): {r.stderr.strip()}")
    return r.stdout.strip()


def commit_specs(path: Path, *names: str) -> None:
    """Commit spec files on the current branch: `finalize`/`add --ready` require a task's spec_ref
    to exist on the integration branch, which `init` creates at HEAD."""
    for name in names:
        (path / name).parent.mkdir(parents=True, exist_ok=True)
        (path / name).write_text(f"# {name}\n")
    git(path, "add", *names)
    git(path, "commit", "-q", "-m", "specs")


@pytest.fixture
def repo(tmp_path: Path) -> Iterator[Path]:
    """A fresh non-bare repository on branch main with one commit."""
    path = tmp_path / "repo"
    path.mkdir()
    git(path, "init", "-q", "-b", "main")
    (path / "README.md").write_text("project\n")
    git(path, "add", "README.md")
    git(path, "commit", "-q", "-m", "initial")
    yield path


@pytest.fixture
def bare(tmp_path: Path) -> Path:
    """A fresh bare repository (a 'remote')."""
    path = tmp_path / "remote.git"
    git(tmp_path, "init", "-q", "--bare", "-b", "main", str(path))
    return path


def remote_of(where: object, name: object = None) -> "Remote":
    """What a command line does before it syncs: `name` (None: the configured remote, else
    origin) resolved once (git/remotes `resolve`) in the repository `where` (a path, or a Store);
    the services and the transport below are handed the `Remote`. A `Remote` passes as it is."""
    from gitliza.git.remotes.remote import Remote, resolve
    from gitliza.git.repository import repo_path
    if isinstance(name, Remote):
        return name
    path = where if isinstance(where, (str, os.PathLike)) else repo_path(where.repo)  # type: ignore[attr-defined]
    assert name is None or isinstance(name, str)
    return resolve(path, name)
