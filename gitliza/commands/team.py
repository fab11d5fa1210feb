"""Team commands: pause, resume, abort (board ops that every machine sees), wait, agent."""
from __future__ import annotations

from typing import Sequence

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
