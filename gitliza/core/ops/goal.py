"""The board's frame, no task involved: its goal (`init` starts a board's first goal or the next
one; `complete-goal` and `abort-goal` end it), its config (`config`) and its agents (`register`)."""
from __future__ import annotations

from dataclasses import dataclass

from gitliza.core import clock

from gitliza.core.agents import costs
from gitliza.core.config import ConfigValue, coerce_config
from gitliza.core.ids import check_id, check_spec_ref
from gitliza.core.model import (Agent, Alignment, CircuitBreaker, Config, Goal, GoalStatus,
                                SigningKey, Sprint, SprintStatus, SprintTimeline)
from gitliza.core.ops.base import Ctx, Op, need_text, register_op, replace
from gitliza.core.reports.queries import goal_tasks
from gitliza.core.states import (HUMAN_ACTOR, REGISTRABLE_ROLES, TERMINAL, AgentState,
                                 Role, TaskState)
from gitliza.errors import ValidationError


def next_id(current: str, prefix: str) -> str:
    """The id after `current` (goal-1 -> goal-2): a new goal on a board that had one."""
    head, _, num = current.rpartition("-")
    if head == prefix and num.isdigit():
        return f"{prefix}-{int(num) + 1}"
    return f"{prefix}-2" if current != f"{prefix}-2" else f"{prefix}-3"


@register_op
@dataclass(frozen=True, kw_only=True)
class Init(Op):
    NAME = "init"
    goal: str
    goal_id: str = "goal-1"
    sprint_id: str = "sprint-1"
    deadline: str | None = None
    config: tuple[tuple[str, ConfigValue], ...] = ()
    spec_ref: str | None = None  # the goal's spec (liza-init.sh's second argument)

    def run(self, ctx: Ctx) -> None:
        previous = _ended_goal(ctx) if ctx.board.initialized else None
        need_text(self.goal, "goal")
        if self.spec_ref is not None:
            check_spec_ref(self.spec_ref)
        check_id(self.goal_id, "goal id")
        check_id(self.sprint_id, "sprint id")
        if self.deadline is not None:
            clock.check_ts(self.deadline, "deadline")
        values = {k: coerce_config(k, v) for k, v in self.config}
        if previous is not None and "integration_base" in values:
            _base_is_human(ctx)
        if "human_keys" in values or "signatures" in values:
            from gitliza.core.keyring.signers import check_policy_change
            check_policy_change(ctx.board.config, self.actor, dict(values))
        t = self.time
        history: tuple[Alignment, ...] = (Alignment(t, "initialization", self.goal),)
        if previous is None:
            cfg = Config(**values)  # type: ignore[arg-type]
            ctx.put("circuit_breaker", "", CircuitBreaker(last_check=t))
        else:
            # A new goal on the same board: agents, config, circuit breaker and the archive of the
            # old goal's tasks stay; the old goal is named first in the new goal's alignment
            # history (its full record stays in the state history, `git liza status --at`).
            old, sprint = previous, ctx.board.sprint
            if self.goal_id == old.id or self.sprint_id == sprint.id:
                raise ValidationError(f"the new goal needs ids other than {old.id}/{sprint.id}")
            cfg = replace(ctx.board.config, **values)
            ended = next((a.timestamp for a in reversed(old.alignment_history)
                          if a.event in _GOAL_END_EVENTS), None)
            history = (Alignment(t, "previous_goal",
                                 f"{old.id} {old.status.value} (sprint {sprint.id}"
                                 + (f", ended {ended}" if ended else "") + f"): {old.description}"),
                       ) + history
        ctx.put("goal", "", Goal(id=self.goal_id, description=self.goal, created=t,
                                 alignment_history=history, spec_ref=self.spec_ref))
        ctx.put("config", "", cfg)
        ctx.put("sprint", "", Sprint(id=self.sprint_id, goal_ref=self.goal_id,
                                     timeline=SprintTimeline(started=t, deadline=self.deadline)))
        ctx.summary = f"init {self.goal_id} by {self.actor}"


_GOAL_END_EVENTS = ("goal_completed", "goal_aborted")


def _ended_goal(ctx: Ctx) -> Goal:
    """The board's goal, which must have ended (COMPLETED or ABORTED) for a new one to start, with
    no live task left: a new goal never inherits work in flight."""
    ctx.allowed("init", "a new goal")
    old = ctx.board.goal
    if old.status == GoalStatus.IN_PROGRESS:
        raise ValidationError(f"a board already exists here with goal {old.id} in progress",
                              hint="`git liza complete-goal` or `git liza abort-goal --reason "
                                   "TEXT` ends it; then `git liza init GOAL` starts the next")
    live = [t.id for t in ctx.board.tasks() if t.status not in TERMINAL]
    if live:
        raise ValidationError(f"goal {old.id} ended with live task(s) {', '.join(live[:5])}",
                              hint="abandon or rescope them before starting a new goal")
    return old


def _base_is_human(ctx: Ctx) -> None:
    """The integration base (what the integration branch may hold without a review) is recorded
    by the board's first `init`; changing it later is the human's alone, or a planner could
    declare unreviewed work the base."""
    ctx.allowed("config:human-key", "changing integration_base after the first init")


def _end_goal(ctx: Ctx, status: GoalStatus, sprint_status: SprintStatus, event: str,
              summary: str) -> None:
    g, sp = ctx.board.goal, ctx.board.sprint
    if g.status != GoalStatus.IN_PROGRESS:
        raise ValidationError(f"goal {g.id} is already {g.status.value}",
                              hint="`git liza init GOAL` starts a new goal on this board")
    t = ctx.op.time
    ctx.put("goal", "", replace(g, status=status, alignment_history=g.alignment_history + (
        Alignment(t, event, summary),)))
    ctx.put("sprint", "", replace(sp, status=sprint_status,
                                  timeline=replace(sp.timeline, ended=t)))


def completed_summary(merged: int) -> str:
    """complete-goal's summary when none is given."""
    return f"Goal completed: {merged} task(s) merged"


@register_op
@dataclass(frozen=True, kw_only=True)
class CompleteGoal(Op):
    NAME = "complete-goal"
    summary: str | None = None

    def run(self, ctx: Ctx) -> None:
        ctx.allowed()
        if self.summary is not None:
            need_text(self.summary, "summary")
        open_tasks = [t for t in ctx.board.tasks() if t.status not in TERMINAL]
        if open_tasks:
            shown = ", ".join(f"{t.id} ({t.status.value})" for t in open_tasks[:5])
            more = f" and {len(open_tasks) - 5} more" if len(open_tasks) > 5 else ""
            raise ValidationError(f"goal cannot complete: task(s) not terminal: {shown}{more}",
                                  hint="merge, abandon or rescope them, or `git liza abort-goal`")
        # This goal's merges: the archive keeps every earlier goal's tasks too.
        done = sum(1 for t in goal_tasks(ctx.board) if t.status == TaskState.MERGED)
        _end_goal(ctx, GoalStatus.COMPLETED, SprintStatus.COMPLETED, "goal_completed",
                  self.summary or completed_summary(done))
        ctx.summary = f"complete-goal {ctx.board.goal.id} by {self.actor}"


@register_op
@dataclass(frozen=True, kw_only=True)
class AbortGoal(Op):
    NAME = "abort-goal"
    reason: str

    def run(self, ctx: Ctx) -> None:
        ctx.allowed()
        need_text(self.reason, "reason")
        _end_goal(ctx, GoalStatus.ABORTED, SprintStatus.ABORTED, "goal_aborted",
                  f"Goal aborted: {self.reason}")
        ctx.reason = self.reason
        ctx.summary = f"abort-goal {ctx.board.goal.id} by {self.actor}"


# Where the human is told, which models the team runs on, and what review takes to approve
# (core/quorum.py): an agent that could redirect the escalations (or silence them), move the
# team to another model or lower the bar its own work is held to would govern its own governor.
REVIEW_KEYS = frozenset({"review_quorum", "quorum_rules", "review_diversity",
                         "rca_after_rejections"})
# The forge keys (core/forgerules.py): which checks gate a merge, and whether the forge merges, are the
# review bar again; which repository mirrors the board is where the team's work is published.
FORGE_KEYS = frozenset({"forge", "forge_repo", "forge_api_url", "forge_required_checks",
                        "forge_merge", "forge_checks_timeout"})
HUMAN_ONLY = frozenset({"escalation_webhook", "models"}) | REVIEW_KEYS | FORGE_KEYS


@register_op
@dataclass(frozen=True, kw_only=True)
class ConfigSet(Op):
    NAME = "config"
    key: str
    value: str

    def run(self, ctx: Ctx) -> None:
        ctx.allowed()
        if self.key in costs.HUMAN_KEYS or self.key in HUMAN_ONLY:
            doc = ("docs/usage.md" if self.key in costs.HUMAN_KEYS else "docs/review.md"
                   if self.key in REVIEW_KEYS else "docs/forge.md" if self.key in FORGE_KEYS
                   else "docs/governance.md")
            ctx.allowed("config:human-key", f"config {self.key}", hint=f"the human's key: {doc}")
        v = coerce_config(self.key, self.value)
        if self.key == "integration_base":
            _base_is_human(ctx)
        if self.key in ("signatures", "human_keys"):
            from gitliza.core.keyring.signers import check_policy_change
            check_policy_change(ctx.board.config, self.actor, {self.key: v})
        ctx.put("config", "", replace(ctx.board.config, **{self.key: v}))
        ctx.summary = f"config {self.key}={v} by {self.actor}"


@register_op
@dataclass(frozen=True, kw_only=True)
class Register(Op):
    NAME = "register"
    agent: str
    role: str
    terminal: str | None = None
    key: str | None = None  # the agent's OpenSSH ed25519 public key (core/keyring/signers.py)

    def run(self, ctx: Ctx) -> None:
        # An agent registers itself (its first act), or a coder could register a reviewer and
        # approve its own work: another is registered only by those the table names.
        if self.actor != self.agent:
            ctx.allowed("register:another", f"registering {self.agent}")
        check_id(self.agent, "agent id")
        if self.agent == HUMAN_ACTOR:
            raise ValidationError("'human' is reserved for the person at the keyboard")
        try:
            role = Role(self.role)
        except ValueError:
            role = None
        if role not in REGISTRABLE_ROLES:
            raise ValidationError(f"role {self.role!r} is not one of planner, coder, code_reviewer")
        known = ctx.agent(self.agent)
        if known is not None:
            raise ValidationError(f"agent {self.agent} is already registered as "
                                  f"{known.role.value}",
                                  hint="agent ids are unique; pick another id")
        assert role is not None
        keys: tuple[SigningKey, ...] = ()
        if self.key is not None:
            from gitliza.core.keyring.signers import canonical_key
            keys = (SigningKey(key=canonical_key(self.key, ctx.board, self.agent), since=self.time),)
        ctx.put_agent(Agent(id=self.agent, role=role, status=AgentState.IDLE,
                            heartbeat=self.time, registered=self.time, terminal=self.terminal,
                            keys=keys))
        ctx.summary = f"register {self.agent} as {role.value} by {self.actor}"
