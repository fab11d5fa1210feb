"""The bridge run by `git liza team` (docs/forge.md): a user who set a forge expects pull requests
from the team alone. A candidate thread in the team's process, as the remote follower is
(services/sync/follower.py): it runs the bridge loop while it holds the clone's bridge lock and
tries to take it every interval otherwise, so a second team on the clone or a running `git liza
forge sync|serve` never makes a second bridge (this one takes over when that one stops). A pass
that raises is the bridge dying: said in one line and the bridge built again after a backoff. A
forge that cannot be opened here (githubkit missing, no token) is one line, and the team goes on
without the bridge (the FORGE alarms, judged from the board, still fire). A board without a forge
costs a board read per interval: a forge set while the team runs is picked up."""
from __future__ import annotations

import os
import threading
from pathlib import Path
from typing import TYPE_CHECKING, Callable

from gitliza.errors import LizaError, MissingDependency

if TYPE_CHECKING:
    from gitliza.forge.bridge import Bridge

DEFAULT_INTERVAL = 15.0  # seconds between two passes: `git config liza.forgeInterval` changes it
RESTART_MAX = 300.0


def remote(liza: object) -> str:
    """The git remote backing the forge's repository: `git config liza.forgeRemote`, else the
    board's sync remote, else origin."""
    from gitliza.git.gitcmd import local_git
    from gitliza.git.repository import repo_path
    path = repo_path(liza.repo)  # type: ignore[attr-defined]
    got = local_git(path, "config", "--get", "liza.forgeRemote")
    if got.returncode == 0 and got.stdout.strip():
        return got.stdout.strip()
    try:
        name = liza.sync_remote()  # type: ignore[attr-defined]
    except LizaError:
        name = None
    return str(name or "origin")


def web_url(liza: object) -> str | None:
    """`git config liza.webUrl`: where the pull request's body links the web board's task page."""
    from gitliza.git.gitcmd import local_git
    from gitliza.git.repository import repo_path
    got = local_git(repo_path(liza.repo), "config", "--get", "liza.webUrl")  # type: ignore[attr-defined]
    return got.stdout.strip() or None if got.returncode == 0 else None


def interval(root: Path) -> float:
    """`git config liza.forgeInterval` (seconds, positive), else DEFAULT_INTERVAL."""
    from gitliza.git.gitcmd import local_git
    got = local_git(root, "config", "--get", "liza.forgeInterval")
    try:
        value = float(got.stdout.strip()) if got.returncode == 0 else DEFAULT_INTERVAL
    except ValueError:
        return DEFAULT_INTERVAL
    return value if value > 0 else DEFAULT_INTERVAL


class TeamBridge:
    """The candidate bridge thread of one `git liza team`."""

    def __init__(self, root: Path, log: Callable[[str], None], *, sync: bool = True) -> None:
        self.root = root
        self.log = log
        self.sync = sync
        self.passes = 0
        self.restarts = 0
        self._stop = threading.Event()
        self._fd: int | None = None
        self._said_other = False
        self._bridge: Bridge | None = None
        self._thread = threading.Thread(target=self._run, name="liza-forge-bridge", daemon=True)

    @property
    def leading(self) -> bool:
        return self._fd is not None

    def start(self) -> TeamBridge:
        self._thread.start()
        return self

    def stop(self) -> None:
        self._stop.set()
        self._thread.join(5)  # a pass in flight may take longer: the thread is a daemon

    def _run(self) -> None:
        from gitliza.core.states import HUMAN_ACTOR
        from gitliza.services.session import open_liza
        try:
            liza = open_liza(self.root, HUMAN_ACTOR, sync=self.sync)  # the bridge is the human's
            self._lead(liza)
        except Exception as e:  # noqa: BLE001 - the bridge never takes the team down
            self.log(f"forge: the bridge stopped: {e}; the team goes on without it")
        finally:
            if self._fd is not None:
                os.close(self._fd)
                self._fd = None

    def _lead(self, liza: object) -> None:
        every = interval(self.root)
        backoff = 0.0
        while not self._stop.is_set():
            try:
                wait = self._turn(liza, every)
                backoff = 0.0
            except MissingDependency as e:  # githubkit or the token: one line, no bridge
                self.log(f"forge: {e}; the team goes on without the bridge")
                return
            except Exception as e:  # noqa: BLE001 - a dead bridge is built again
                backoff = min(RESTART_MAX, max(every, backoff * 2))
                self.restarts += 1
                self.log(f"forge: the bridge died ({type(e).__name__}: {e}); "
                         f"restarting in {int(backoff)}s")
                self._bridge = None
                wait = backoff
            self._stop.wait(wait)

    def _turn(self, liza: object, every: float) -> float:
        """One turn of the candidate: wait for a forge and the lock, build the bridge, one pass;
        the seconds until the next turn."""
        from gitliza.forge.bridge import Bridge, try_lock
        from gitliza.forge.setup import open_forge
        from gitliza.git.repository import repo_path
        config = liza.board().config  # type: ignore[attr-defined]
        if not config.forge or not config.forge_repo:
            return every
        if self._fd is None:
            self._fd = try_lock(liza.repo)  # type: ignore[attr-defined]
            if self._fd is None:
                if not self._said_other:
                    self.log("forge: another bridge runs for this clone; this team's takes "
                             "over when it stops")
                    self._said_other = True
                return every
        if self._bridge is None:
            forge, source = open_forge(config, repo_path(liza.repo))  # type: ignore[attr-defined]
            to = remote(liza)
            self.log(f"forge: bridge for {config.forge_repo} (token from {source}, "
                     f"pushing heads to {to})")
            self._bridge = Bridge(liza, forge, self.log, remote=to,  # type: ignore[arg-type]
                                  web_url=web_url(liza))
        self._bridge.step()
        self.passes += 1
        return every
