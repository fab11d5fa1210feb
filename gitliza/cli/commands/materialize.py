"""`git liza materialize`: write the spec's `.liza/state.yaml` and `.liza/log.yaml` views."""
from __future__ import annotations

from gitliza.cli.commands import Env


def materialize(env: Env, at: str | None) -> int:
    from gitliza.services.views import materialize as m  # ruamel.yaml is imported only by this command
    done = m.materialize(env.liza().store, at)
    if done.cached:
        text = f"{done.directory} already reflects {done.state[:12]}"
    else:
        log = (f"log.yaml rewritten ({done.log_entries} entries)" if done.log_rewritten
               else f"log.yaml +{done.log_appended} ({done.log_entries} entries)")
        text = f"wrote {done.directory}/state.yaml at {done.state[:12]}; {log}"
    env.out.result(done.as_json(), text)
    if done.edited is not None and not env.json:
        env.out.notice(m.edited_notice(done))
    return 0
