"""Team commands: pause, resume, abort (board ops that every machine sees), wait, agent."""
from __future__ import annotations

from typing import Any, Sequence

from gitliza.commands import Env
from gitliza.commands.board import report
from gitliza.core.ops.control import AbortOp, Pause, Resume


def pause(env: Env, reason: str | None) -> int:
    return report(env, env.liza().do(Pause, reason=reason))


def resume(env: Env, decision: str | None, note: str | None) -> int:
    return report(env, env.liza().do(Resume, decision=decision, note=note))


def abort(env: Env, reason: str | None) -> int:
    return report(env, env.liza().do(AbortOp, reason=reason))


def wait(env: Env, condition: str, task: str | None, status: str | None, since: str | None,
         timeout: float | None) -> int:
    from gitliza.team import wait as w
    cond = w.parse(condition, task=task, status=status, since=since)
    liza = env.liza()
    result = w.wait(liza, cond, timeout)
    env.out.result(result.to_json(), result.describe())
    return 0 if result.met else w.EXIT_TIMEOUT


def agent(env: Env, role: str, cli: str | None, interactive: bool, command: Sequence[str],
          resume_task: str | None, once: bool, takeover: bool) -> int:
    from gitliza.team.supervisor import Supervisor, SupervisorOptions
    opts = SupervisorOptions(role=role, cli=cli, interactive=interactive, command=tuple(command),
                             resume_task=resume_task, once=once, takeover=takeover)

    def open_liza() -> Any:
        # A fresh handle per caller (the heartbeat thread has its own), with the same hooks.
        return Env(path=env.path, agent=env.agent, no_sync=env.no_sync).liza()
    return Supervisor(open_liza, opts).run()
