"""`git liza join URL [DIRECTORY]`: a new machine joins a team in one command.

Clone URL (or, run inside a repository without DIRECTORY, use it: the remote whose URL is URL,
else one added as `team`), make it the clone's sync remote (`liza.remote`: auto-sync and the
remote follower), pull the board and branches (a shallow join from the newest seal,
services/sync/join.py), install the client hooks, say whether the remote's server hook is there
(checkable only for a bare repository on this machine), and print how to start a team."""
from __future__ import annotations

import subprocess
from pathlib import Path

from gitliza.cli.commands import Env
from gitliza.errors import GitFailure, ValidationError


def _git(cwd: Path, *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(["git", *args], cwd=cwd, capture_output=True, text=True, check=False)


def _target(env: Env, url: str, directory: str | None) -> tuple[Path, bool]:
    """The repository to join from, and whether it was cloned now."""
    if directory is None and _git(env.path, "rev-parse", "--git-dir").returncode == 0:
        return Path(_git(env.path, "rev-parse", "--show-toplevel").stdout.strip()), False
    name = directory or url.rstrip("/").rsplit("/", 1)[-1].rsplit(":", 1)[-1].removesuffix(".git")
    dest = (env.path / name).resolve()
    if dest.exists() and any(dest.iterdir()):
        raise ValidationError(f"{dest} exists and is not empty; nothing was changed",
                              hint="give another DIRECTORY, or run `git liza join URL` inside it")
    run = _git(env.path, "clone", "-q", "--", url, str(dest))
    if run.returncode != 0:
        raise GitFailure(f"git clone {url} failed: {run.stderr.strip().splitlines()[-1:]}")
    return dest, True


def _remote_for(repo: Path, url: str) -> str:
    for name in _git(repo, "remote").stdout.split():
        if _git(repo, "remote", "get-url", name).stdout.strip() == url:
            return name
    name = "team" if "origin" in _git(repo, "remote").stdout.split() else "origin"
    if _git(repo, "remote", "add", name, url).returncode != 0:
        raise GitFailure(f"cannot add the remote {name} ({url}) to {repo}")
    return name


def _server_hook(url: str) -> str:
    from gitliza.hooks.install import hooks_status
    path = Path(url.removeprefix("file://"))
    if not (path.is_dir() and (path / "HEAD").is_file() and (path / "objects").is_dir()):
        return ("the server hook cannot be checked from here (not a repository on this machine): "
                "on the server, `git liza hooks install --server` (docs/enforcement.md)")
    kinds = {h.hook: h.kind for h in hooks_status(path).hooks}
    if kinds.get("pre-receive") == "gitliza":
        return "the remote's server hook is installed (pushes are judged there)"
    return (f"WARNING: the remote has no gitliza server hook: run `git liza hooks install "
            f"--server` in {path} (clients still verify what they fetch)")


def join(env: Env, url: str, directory: str | None) -> int:
    from gitliza.git.store import Store
    from gitliza.hooks.install import install
    from gitliza.services.sync import engine
    from gitliza.services.sync.report import NO_BOARD
    repo, cloned = _target(env, url, directory)
    remote = _remote_for(repo, url)
    _git(repo, "config", "liza.remote", remote)
    from gitliza.git.remotes.remote import resolve
    rep = engine.pull(Store.discover(repo), resolve(repo, remote))
    if rep.action == NO_BOARD:
        raise ValidationError(f"{url} holds no board yet; {repo} is set up to share with it",
                              hint="on the first machine: `git liza init GOAL` (it pushes the "
                                   "board), then `git liza pull` here")
    install(repo)
    lines = [f"{'cloned' if cloned else 'joined'} {url} in {repo}; sync remote {remote} "
             f"(liza.remote): the board ({rep.fetched} op(s)) and its branches are here",
             "client hooks installed", _server_hook(url),
             f"next: cd {repo} && git liza team --coders 2 --reviewers 1 -- AGENT-COMMAND "
             "(or --cli NAME); `git liza machines` shows the team's machines"]
    env.out.result({"repository": str(repo), "cloned": cloned, "remote": remote,
                    "fetched": rep.fetched, "server_hook": lines[2]}, "\n".join(lines))
    return 0
