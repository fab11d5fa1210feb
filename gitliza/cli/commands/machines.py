"""`git liza machines`: the machines the team runs on, as the board sees them (core/presence/hosts.py),
and this clone's own contact with its remote (services/sync/follower.py)."""
from __future__ import annotations

import time

from gitliza.cli.commands import Env
from gitliza.core.presence.hosts import machines as rows


def machines(env: Env) -> int:
    from gitliza.services import procinfo
    from gitliza.services.sync import follower
    from gitliza.errors import LizaError
    liza = env.liza()
    remote = liza.sync_remote()
    unreached = None
    if remote is not None:  # a clone nobody follows from may be old: the remote's word first
        from gitliza.services.sync import engine
        try:
            target = liza.sync_target()  # resolved here, once (a name in liza.remote)
            if target is not None:
                engine.pull(liza.store, target)
        except LizaError as e:
            unreached = f"could not pull from {remote} ({e}): this clone's board may be old"
    found = rows(liza.board(), liza.now())
    here = procinfo.host(liza.repo)
    contact = follower.read_contact(liza.repo) if remote is not None else None
    silent = contact.silent_for(time.time()) if contact is not None else 0.0
    data = {"this_machine": here, "remote": remote,
            "remote_silent_s": round(silent) if contact is not None else None,
            "machines": [m.to_json() for m in found]}
    lines = []
    for m in found:
        mark = " (this machine)" if m.host == here else ""
        live = f"; live: {', '.join(m.live_agents)}" if m.live_agents and \
            m.live_agents != m.agents else ""
        held = f"; holds {', '.join(m.tasks)}" if m.tasks else ""
        drain = f" {m.drain}" if m.drain else ""
        labels = f"; labels {', '.join(m.labels)}" if m.labels else ""
        if not m.agents:  # drained before any of its supervisors started
            lines.append(f"{m.host}{mark}:{drain}, not seen on this board yet")
            continue
        lines.append(f"{m.host}{mark}: {m.status}{drain}, last seen {m.last_seen or 'never'}; "
                     f"agents {', '.join(m.agents)}{live}{held}{labels}")
    if not lines:
        lines.append("no machine has run a supervisor on this board yet")
    if contact is not None and contact.error is not None:
        lines.append(f"this machine has not reached {remote} for {silent:.0f}s: "
                     f"{contact.error} (what it shows may be old)")
    if unreached is not None:
        lines.append(unreached)
    data["pull_failed"] = unreached
    env.out.result(data, "\n".join(lines))
    return 0


def drain(env: Env, machine: str, reason: str | None) -> int:
    """`git liza drain MACHINE` (core/ops/control.py Drain)."""
    from gitliza.cli.commands.board import report
    from gitliza.core.ops.control import Drain
    return report(env, env.liza().do(Drain, machine=machine, reason=reason))


def undrain(env: Env, machine: str) -> int:
    from gitliza.cli.commands.board import report
    from gitliza.core.ops.control import Undrain
    return report(env, env.liza().do(Undrain, machine=machine))
