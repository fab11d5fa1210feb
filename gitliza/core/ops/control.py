"""Board-level control ops: pause, resume, abort, checkpoint, and the supervisor generation token.

The reference stops and holds a team with files in `.liza/` (PAUSE, ABORT, CHECKPOINT), which only
reach one machine. These ops record the same decisions on the board (the `control` entity and the
sprint status), so every supervisor sees them through sync and `git log` shows who pulled which
lever and why. Supervisors honour both: the files and the board.

`supervise` gives each running `git liza agent` supervisor a generation number for its agent id.
Every op a supervisor (or the agent it started) writes carries that number (`Op.gen`); `apply`
refuses it once another supervisor took the id over, so a stale supervisor stands down at its next
write instead of working on top of the new one.
"""
from __future__ import annotations

from dataclasses import dataclass

from gitliza.core import clock
from gitliza.core.presence.placement import check_labels, check_machine
from gitliza.core.model import Control, SprintStatus, Supervisor
from gitliza.core.ops.base import Ctx, Op, need_text, register_op, replace
from gitliza.errors import ValidationError

CHECKPOINT_TRIGGERS = ("manual", "circuit_breaker", "deadline", "analyze", "sprint_end")
SUPERVISE_MODES = ("start", "takeover", "renew", "end", "free")


def _control(ctx: Ctx) -> Control:
    c: Control | None = ctx.get("control")
    return c if c is not None else Control()


@register_op
@dataclass(frozen=True, kw_only=True)
class Pause(Op):
    NAME = "pause"
    reason: str | None = None

    def run(self, ctx: Ctx) -> None:
        ctx.allowed()
        c = _control(ctx)
        if c.aborted:
            raise ValidationError("the team is aborted; there is nothing to pause")
        if c.paused:
            raise ValidationError(f"already paused by {c.paused_by} at {c.paused_at}",
                                  hint="`git liza resume` releases it")
        ctx.put("control", "", replace(c, paused=True, pause_reason=self.reason,
                                       paused_by=self.actor, paused_at=self.time))
        ctx.reason = self.reason
        ctx.summary = f"pause by {self.actor}" + (f": {self.reason}" if self.reason else "")


@register_op
@dataclass(frozen=True, kw_only=True)
class Resume(Op):
    """Lifts a pause and closes an open checkpoint (the human's decision, with a note)."""

    NAME = "resume"
    decision: str | None = None
    note: str | None = None

    def run(self, ctx: Ctx) -> None:
        ctx.allowed()
        c = _control(ctx)
        sprint = ctx.board.sprint
        at_checkpoint = sprint.status == SprintStatus.CHECKPOINT
        if not c.paused and not at_checkpoint:
            raise ValidationError("the team is neither paused nor at a checkpoint")
        if at_checkpoint:
            ctx.put("sprint", "", replace(sprint, status=SprintStatus.IN_PROGRESS))
        ctx.put("control", "", replace(
            c, paused=False, pause_reason=None, paused_by=None, paused_at=None,
            checkpoint_reason=None, checkpoint_trigger=None, checkpoint_by=None,
            resumed_by=self.actor, resumed_at=self.time, resume_decision=self.decision,
            resume_note=self.note))
        ctx.reason = self.note
        what = " and ".join(w for w, on in (("pause", c.paused), ("checkpoint", at_checkpoint))
                            if on)
        ctx.summary = f"resume ({what}) by {self.actor}" + \
            (f": {self.decision}" if self.decision else "")


@register_op
@dataclass(frozen=True, kw_only=True)
class AbortOp(Op):
    NAME = "abort"
    reason: str | None = None

    def run(self, ctx: Ctx) -> None:
        ctx.allowed()
        c = _control(ctx)
        if c.aborted:
            raise ValidationError(f"already aborted by {c.aborted_by} at {c.aborted_at}")
        ctx.put("control", "", replace(c, aborted=True, abort_reason=self.reason,
                                       aborted_by=self.actor, aborted_at=self.time))
        ctx.reason = self.reason
        ctx.summary = f"abort by {self.actor}" + (f": {self.reason}" if self.reason else "")


@register_op
@dataclass(frozen=True, kw_only=True)
class Checkpoint(Op):
    """Opens a checkpoint: the sprint stops at CHECKPOINT until a human resumes it."""

    NAME = "checkpoint"
    reason: str
    trigger: str = "manual"

    def run(self, ctx: Ctx) -> None:
        ctx.allowed()
        need_text(self.reason, "reason")
        if self.trigger not in CHECKPOINT_TRIGGERS:
            raise ValidationError(f"checkpoint trigger {self.trigger!r} is not one of: "
                                  + ", ".join(CHECKPOINT_TRIGGERS))
        sprint = ctx.board.sprint
        if sprint.status != SprintStatus.IN_PROGRESS:
            raise ValidationError(f"sprint {sprint.id} is {sprint.status}; a checkpoint opens "
                                  "only on a sprint IN_PROGRESS")
        ctx.put("sprint", "", replace(sprint, status=SprintStatus.CHECKPOINT,
                                      timeline=replace(sprint.timeline, checkpoint_at=self.time)))
        ctx.put("control", "", replace(_control(ctx), checkpoint_reason=self.reason,
                                       checkpoint_trigger=self.trigger,
                                       checkpoint_by=self.actor))
        ctx.reason = self.reason
        ctx.summary = f"checkpoint ({self.trigger}) by {self.actor}: {self.reason}"


@register_op
@dataclass(frozen=True, kw_only=True)
class Drain(Op):
    """The human drains a machine (docs/multi-machine.md): its agents finish the task they hold
    and claim no new one (core/presence/placement.py; Claim and ClaimReview refuse). A machine not seen on the
    board yet may be drained, so that it starts drained."""

    NAME = "drain"
    machine: str
    reason: str | None = None

    def run(self, ctx: Ctx) -> None:
        ctx.allowed()
        name = check_machine(self.machine)
        c = _control(ctx)
        if name in c.drained:
            raise ValidationError(f"machine {name} is already drained",
                                  hint=f"`git liza undrain {name}` lets it take work again")
        ctx.put("control", "", replace(c, drained=tuple(sorted((*c.drained, name)))))
        ctx.reason = self.reason
        ctx.summary = f"drain {name} by {self.actor}" + (f": {self.reason}" if self.reason else "")
        if not any(getattr(s, "host", None) == name for s in ctx.board.values("supervisors")):
            ctx.notices.append(f"{name} has run no supervisor on this board yet: it will start "
                               "drained")


@register_op
@dataclass(frozen=True, kw_only=True)
class Undrain(Op):
    NAME = "undrain"
    machine: str

    def run(self, ctx: Ctx) -> None:
        ctx.allowed()
        name = check_machine(self.machine)
        c = _control(ctx)
        if name not in c.drained:
            raise ValidationError(f"machine {name} is not drained"
                                  + (f" (drained: {', '.join(c.drained)})" if c.drained else ""))
        ctx.put("control", "", replace(c, drained=tuple(n for n in c.drained if n != name)))
        ctx.summary = f"undrain {name} by {self.actor}"


@register_op
@dataclass(frozen=True, kw_only=True)
class Supervise(Op):
    """A supervisor for agent `actor`: `start` (refused while another supervisor's token is
    live), `takeover` (even so: the human's "I killed it" override), `renew`, `end`; and `free`,
    the human's (`doctor --fix`): the token of agent `agent`, generation `replaces`, whose
    supervisor is dead, is ended for it."""

    NAME = "supervise"
    mode: str = "start"
    host: str | None = None
    pid: int | None = None
    pid_start: int | None = None  # the process's start time on `host` (see model.Supervisor)
    # With `takeover`: only from this generation (the one found dead on this host); refused if
    # the id changed hands meanwhile, so two new supervisors never both take a dead one's id.
    replaces: int | None = None
    agent: str | None = None  # with `free`: whose token
    # With `end`: the supervisor exits, so its agent leaves the board as liza-agent.sh's exit trap
    # removes it (an agent holding work stays, for its lease to run out and the work to be taken
    # over). A supervisor started later registers it again.
    unregister: bool = False
    # With `start`/`takeover`: this supervisor registered the agent (kept on the token, and
    # inherited from a token that says so: see model.Supervisor.registered).
    registered: bool = False
    # With `start`/`takeover`: the labels this supervisor's machine offers (core/presence/placement.py).
    labels: tuple[str, ...] = ()

    def run(self, ctx: Ctx) -> None:
        if self.mode not in SUPERVISE_MODES:
            raise ValidationError(f"supervise mode {self.mode!r} is not one of: "
                                  + ", ".join(SUPERVISE_MODES))
        # Who may run which mode is the role table's (core/states.py BOARD_OPS): `free` is a row
        # of its own, the human's; the other modes are the agent's own supervisor's.
        ctx.allowed("supervise:free" if self.mode == "free" else "supervise",
                    what=f"supervise {self.mode}")
        if self.mode == "free":
            self._free(ctx)
            return
        me = ctx.require_agent()
        cur: Supervisor | None = ctx.get("supervisors", me.id)
        live = cur is not None and cur.expires is not None and cur.expires > self.time
        expires = clock.plus(self.time, ctx.board.config.lease_duration)
        if self.mode in ("renew", "end"):
            if cur is None or self.gen != cur.generation:
                raise ValidationError(f"{self.mode}: this supervisor does not hold {me.id}")
            removed = self.unregister and self.mode == "end" and me.current_task is None
            # Once removed, the registration it made is gone: a later one is someone else's.
            ctx.put("supervisors", me.id, replace(
                cur, expires=expires if self.mode == "renew" else None,
                registered=cur.registered and not removed))
            ctx.summary = f"supervise {self.mode} {me.id} (generation {cur.generation})"
            if removed:
                ctx.put("agents", me.id, None)
                ctx.summary += ", agent removed"
            return
        if self.gen is not None:
            raise ValidationError("a new supervisor carries no generation yet")
        if live and self.mode == "start":
            assert cur is not None
            where = f" (pid {cur.pid} on {cur.host})" if cur.pid is not None else ""
            raise ValidationError(
                f"{me.id} is held by a live supervisor, generation {cur.generation}{where}, "
                f"until {cur.expires}",
                hint="use another --agent id (or --prefix), or, if that supervisor is gone, "
                     "`git liza agent ... --takeover` or `git liza team ... --takeover`")
        if self.replaces is not None and (cur is None or cur.generation != self.replaces):
            now = f"generation {cur.generation}" if cur is not None else "no supervisor"
            raise ValidationError(f"takeover of {me.id} from generation {self.replaces}: the id "
                                  f"changed hands meanwhile ({now} holds it)")
        gen = (cur.generation if cur is not None else 0) + 1
        ctx.put("supervisors", me.id, Supervisor(
            agent=me.id, generation=gen, started=self.time, expires=expires, host=self.host,
            pid=self.pid, pid_start=self.pid_start,
            registered=self.registered or (cur is not None and cur.registered),
            labels=check_labels(self.labels)))
        if live:
            ctx.notices.append(f"supervisor generation {gen - 1} of {me.id} must stand down")
        ctx.summary = f"supervise {self.mode} {me.id} (generation {gen})"

    def _free(self, ctx: Ctx) -> None:
        cur: Supervisor | None = ctx.get("supervisors", self.agent or "")
        if cur is None or cur.expires is None:
            raise ValidationError(f"no supervisor token of {self.agent} to free")
        if self.replaces is not None and cur.generation != self.replaces:
            raise ValidationError(f"free {self.agent} generation {self.replaces}: generation "
                                  f"{cur.generation} holds it now")
        ctx.put("supervisors", cur.agent, replace(cur, expires=None))
        ctx.summary = (f"supervise free {cur.agent} (generation {cur.generation}): its "
                       "supervisor is gone")
