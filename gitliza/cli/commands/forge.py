"""`git liza forge ...` (docs/forge.md): `github` sets the board's forge (the human's config keys)
and checks the token's access, `status` says what the bridge sees, `sync` runs the bridge loop
(gitliza/forge/bridge.py): one per clone. The forge room is imported only by these commands."""
from __future__ import annotations

import json as jsonlib
import sys
import time

from gitliza.cli.commands import Env
from gitliza.core.states import HUMAN_ACTOR
from gitliza.core.terminal import safe
from gitliza.errors import LizaError, ValidationError


def _human(env: Env) -> Env:
    return Env(path=env.path, agent=HUMAN_ACTOR, json=env.json, no_sync=env.no_sync)


def github(env: Env, repo: str, api_url: str | None) -> int:
    """Set forge=github, forge_repo and forge_api_url (as the human: an agent may not), then check
    that the token (never on the board) reaches the repository."""
    from gitliza.core.forgerules import coerce
    from gitliza.core.ops.goal import ConfigSet
    coerce("forge_repo", repo)  # one clear line before anything is written
    if api_url:
        coerce("forge_api_url", api_url)
    liza = env.liza()
    for key, value in (("forge", "github"), ("forge_repo", repo),
                       ("forge_api_url", api_url or "none")):
        liza.do(ConfigSet, key=key, value=value)
    board = liza.board()
    sys.stdout.write(f"forge: github {board.config.forge_repo}"
                     f"{' at ' + str(board.config.forge_api_url) if board.config.forge_api_url else ''}"
                     " set on the board\n")
    return _check(liza, board.config)


def _check(liza: object, config: object) -> int:
    from gitliza.forge import ForgeRefused, ForgeUnreachable
    from gitliza.forge.setup import open_forge
    from gitliza.git.repository import repo_path
    forge, source = open_forge(config, repo_path(liza.repo))  # type: ignore[arg-type, attr-defined]
    try:
        name = forge.access()
    except (ForgeRefused, ForgeUnreachable) as e:
        sys.stderr.write(f"forge: token from {source}: {safe(str(e))}\n")
        return e.exit_code
    sys.stdout.write(f"forge: token from {source} reaches {safe(name)}\n")
    return 0


def status(env: Env) -> int:
    from gitliza.forge.bridge import read_status
    liza = env.liza()
    board = liza.board()
    c = board.config
    linked = {t.id: t.forge_pr for t in list(board.tasks()) + list(board.values("archive"))
              if t.forge_pr is not None}
    bridge = read_status(liza.repo)
    if env.json:
        sys.stdout.write(jsonlib.dumps({
            "forge": c.forge, "repo": c.forge_repo, "api_url": c.forge_api_url,
            "required_checks": c.forge_required_checks, "merge": c.forge_merge,
            "checks_timeout": c.forge_checks_timeout, "pulls": linked, "bridge": bridge}) + "\n")
        return 0
    if not c.forge:
        sys.stdout.write("forge: none (`git liza forge github --repo OWNER/NAME` sets one)\n")
        return 0
    sys.stdout.write(f"forge: {c.forge} {c.forge_repo}"
                     f"{' at ' + c.forge_api_url if c.forge_api_url else ''}\n"
                     f"required checks: {c.forge_required_checks or 'none'} "
                     f"(timeout {c.forge_checks_timeout}s); merge by the forge: {c.forge_merge}\n"
                     f"pull requests: {len(linked)}"
                     + "".join(f"\n  {tid}: #{n}" for tid, n in sorted(linked.items())) + "\n")
    if bridge:
        age = int(time.time() - float(bridge.get("time") or 0))  # type: ignore[arg-type]
        sys.stdout.write(f"bridge: last pass {age}s ago (pid {bridge.get('pid')}), "
                         f"{bridge.get('requests')} requests"
                         f"{_not_modified(bridge)}"
                         f"{', ' + safe(str(bridge['error'])) if bridge.get('error') else ''}\n")
    else:
        sys.stdout.write("bridge: never ran here (`git liza team` runs it, or `git liza forge sync`)\n")
    return _check(liza, c)


def sync(env: Env, once: bool, interval: float) -> int:
    """The bridge loop for this clone, as the human; until a signal (or one pass with --once)."""
    return _loop(env, once, interval, None)


def serve(env: Env, host: str, port: int, interval: float) -> int:
    """The bridge loop with a webhook receiver: a signed delivery wakes the next pass at once.
    The secret is the environment's LIZA_FORGE_WEBHOOK_SECRET or `git config
    liza.forgeWebhookSecret` (never the board's)."""
    import os
    import threading

    from gitliza.errors import MissingDependency
    from gitliza.forge.webhook import Receiver
    from gitliza.git.gitcmd import local_git
    secret = os.environ.get(SECRET_ENV, "").strip()
    if not secret:
        got = local_git(env.path, "config", "--get", "liza.forgeWebhookSecret")
        secret = got.stdout.strip() if got.returncode == 0 else ""
    if not secret:
        raise MissingDependency(f"no webhook secret: set ${SECRET_ENV} or `git config "
                                "liza.forgeWebhookSecret SECRET` (the one given to GitHub)")
    wake = threading.Event()
    receiver = Receiver(host, port, secret.encode(), wake, _say).start()
    _say(f"forge: webhooks on {receiver.url} (events: pull_request_review, check_run, status)")
    try:
        return _loop(env, False, interval, wake)
    finally:
        receiver.stop()


SECRET_ENV = "LIZA_FORGE_WEBHOOK_SECRET"


def _say(text: str) -> None:
    sys.stderr.write(f"{safe(text)}\n")
    sys.stderr.flush()


def _loop(env: Env, once: bool, interval: float, wake: object) -> int:
    import os
    import threading

    from gitliza.forge import run
    from gitliza.forge.bridge import Bridge, try_lock
    from gitliza.forge.setup import open_forge
    from gitliza.git.repository import repo_path
    if interval <= 0:
        raise ValidationError(f"--interval must be positive, got {interval}")
    liza = _human(env).liza()
    fd = try_lock(liza.repo)
    if fd is None:
        raise ValidationError("another bridge runs for this clone (`git liza forge sync`, "
                              "`forge serve` or a `git liza team`)",
                              hint="one bridge per clone: stop it first")
    try:
        forge, source = open_forge(liza.board().config, repo_path(liza.repo))
        remote = run.remote(liza)
        _say(f"forge: bridge for {liza.board().config.forge_repo} (token from {source}, "
             f"pushing heads to {remote})")
        bridge = Bridge(liza, forge, _say, remote=remote, web_url=run.web_url(liza))
        while True:
            done = bridge.step()
            for tid in done.opened:
                sys.stdout.write(f"opened a pull request for {tid}\n")
            sys.stdout.flush()
            if once:  # 4: a forge merge the board refused (its anomaly is on the board)
                return 4 if done.anomalies else 0 if done.error is None else 3
            if isinstance(wake, threading.Event):
                wake.wait(interval)  # a webhook delivery wakes it early
                wake.clear()
            else:
                time.sleep(interval)
    except KeyboardInterrupt:
        return 130
    finally:
        os.close(fd)


def _not_modified(bridge: dict[str, object]) -> str:
    n = bridge.get("not_modified")
    return f" ({n} answered 304)" if isinstance(n, int) else ""
