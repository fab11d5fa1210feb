"""`provider-wait`: a supervisor records on its agent that it waits for its model provider (a rate
limit until its reset, a spent quota, a refused login, an outage), or that the wait is over
(`wait` None). `status`, `top`, `watch` and the web board show it (WAITING FOR PROVIDER), and a
refused login, or an outage longer than `alarm_provider_down`, is an alarm (core/reports/alarms.py).
The record is one line (core/agents/faults.py `Wait`)."""
from __future__ import annotations

from dataclasses import dataclass

from gitliza.core.agents import faults
from gitliza.core.ops.base import Ctx, Op, register_op, replace
from gitliza.errors import ValidationError


@register_op
@dataclass(frozen=True, kw_only=True)
class ProviderWaitOp(Op):
    NAME = "provider-wait"
    wait: str | None = None

    def run(self, ctx: Ctx) -> None:
        ctx.allowed()
        me = ctx.require_agent()
        if self.wait is not None and (len(self.wait) > 600 or "\n" in self.wait
                                      or faults.parse_wait(self.wait) is None):
            raise ValidationError(f"provider-wait {self.wait!r} is not `CLI END since TIME "
                                  "[until TIME][: note]`")
        if me.provider_wait == self.wait:
            raise ValidationError("nothing to change")
        ctx.put_agent(replace(me, provider_wait=self.wait))
        ctx.summary = (f"{self.actor} waits for its provider: {self.wait}" if self.wait
                       else f"{self.actor}: provider back")
