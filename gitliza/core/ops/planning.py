"""Board and planning ops: init, config, register, add, finalize, rescope, abandon, unblock."""
from __future__ import annotations

import dataclasses
import typing
from dataclasses import dataclass

from gitliza.core import clock
from gitliza.core.ids import check_id
from gitliza.core.model import (Agent, Alignment, CircuitBreaker, Config, Goal, GoalStatus,
                                SigningKey, Sprint, SprintStatus, SprintTimeline, Task)
from gitliza.core.ops.base import (Ctx, Op, free_agent, need_text, register_op, replace,
                                   require_goal_open)
from gitliza.core.states import (HUMAN_ACTOR, PLANNING, REGISTRABLE_ROLES, TERMINAL, AgentState,
                                 Role, TaskState)
from gitliza.errors import PermissionDenied, ValidationError

S = TaskState
ConfigValue = str | int | bool
_REF_BAD = (" ", "~", "^", ":", "?", "*", "[", "\\", "..", "@{", "//")


def check_branch(name: str) -> str:
    """A conservative subset of git-check-ref-format, enough to keep a branch name sane."""
    if (not name or name.startswith(("-", "/", ".")) or name.endswith(("/", ".", ".lock"))
            or any(b in name for b in _REF_BAD) or any(ord(c) < 32 or ord(c) == 127 for c in name)):
        raise ValidationError(f"{name!r} is not a valid branch name")
    return name


_CONFIG_TYPES = typing.get_type_hints(Config)
# Upper bounds keep every derived timestamp representable and every limit meaningful.
_CONFIG_MAX = {"lease_duration": 7 * 86400, "heartbeat_interval": 86400,
               "coder_poll_interval": 86400, "coder_max_wait": 7 * 86400,
               "max_coder_iterations": 1000, "max_review_cycles": 1000,
               "planner_max_wait": 7 * 86400, "reviewer_max_wait": 7 * 86400,
               "restart_delay": 3600, "crash_delay": 3600, "crash_delay_max": 86400,
               "max_no_progress_runs": 1000, "max_launches_per_minute": 600,
               "planner_poll_interval": 86400, "reviewer_poll_interval": 86400,
               "archive_after": 365 * 86400}
# Watcher thresholds (optional: unset means the seed's value, see gitliza/core/alarms.py).
_CONFIG_MAX.update({k: 30 * 86400 for k in _CONFIG_TYPES if k.startswith("alarm_")})


def coerce_config(key: str, value: ConfigValue | None) -> ConfigValue | None:
    """Check and convert one config value (from the CLI, a file or a replayed op)."""
    if key not in _CONFIG_TYPES:
        known = ", ".join(f.name for f in dataclasses.fields(Config))
        raise ValidationError(f"unknown config key {key!r}", hint=f"known keys: {known}")
    if key in _CONFIG_MAX:  # the integer settings (alarm thresholds included), each bounded
        try:
            n = int(value) if not isinstance(value, bool) else None  # type: ignore[arg-type]
        except (TypeError, ValueError):
            n = None
        if n is None or n <= 0:
            raise ValidationError(f"config {key} must be a positive integer, got {value!r}")
        if n > _CONFIG_MAX[key]:
            raise ValidationError(f"config {key} must be at most {_CONFIG_MAX[key]}, got {n}")
        return n
    if key == "escalation_webhook":
        return None if value in (None, "", "null", "none") else str(value)
    if key == "signatures":
        from gitliza.core.keys import check_policy_word
        return check_policy_word(value)
    if value is None or str(value) == "":
        raise ValidationError(f"config {key} must not be empty")
    return check_branch(str(value)) if key == "integration_branch" else str(value)


def next_id(current: str, prefix: str) -> str:
    """The id after `current` (goal-1 -> goal-2): a new goal on a board that had one."""
    head, _, num = current.rpartition("-")
    if head == prefix and num.isdigit():
        return f"{prefix}-{int(num) + 1}"
    return f"{prefix}-2" if current != f"{prefix}-2" else f"{prefix}-3"


def definition_gaps(task: Task) -> list[str]:
    """The planner's task definition gates (agent-runtime-reference.md "Task Definition Gates")."""
    gaps = []
    if not task.spec_ref:
        gaps.append("spec_ref")
    if not task.done_when:
        gaps.append("done_when")
    if not task.scope:
        gaps.append("scope")
    return gaps


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
        if "human_keys" in values or "signatures" in values:
            from gitliza.core.keys import check_policy_change
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
    if ctx.role() not in PLANNING:
        raise PermissionDenied(f"a new goal is for the planner or a human, not {ctx.op.actor}")
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


def _require_planning(ctx: Ctx) -> None:
    if ctx.role() not in PLANNING:
        raise PermissionDenied(f"{ctx.op.NAME} is for the planner or a human, not {ctx.op.actor}")


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


@register_op
@dataclass(frozen=True, kw_only=True)
class CompleteGoal(Op):
    NAME = "complete-goal"
    summary: str | None = None

    def run(self, ctx: Ctx) -> None:
        _require_planning(ctx)
        if self.summary is not None:
            need_text(self.summary, "summary")
        open_tasks = [t for t in ctx.board.tasks() if t.status not in TERMINAL]
        if open_tasks:
            shown = ", ".join(f"{t.id} ({t.status.value})" for t in open_tasks[:5])
            more = f" and {len(open_tasks) - 5} more" if len(open_tasks) > 5 else ""
            raise ValidationError(f"goal cannot complete: task(s) not terminal: {shown}{more}",
                                  hint="merge, abandon or rescope them, or `git liza abort-goal`")
        done = sum(1 for t in ctx.board.all_tasks() if t.status == TaskState.MERGED)
        _end_goal(ctx, GoalStatus.COMPLETED, SprintStatus.COMPLETED, "goal_completed",
                  self.summary or f"Goal completed: {done} task(s) merged")
        ctx.summary = f"complete-goal {ctx.board.goal.id} by {self.actor}"


@register_op
@dataclass(frozen=True, kw_only=True)
class AbortGoal(Op):
    NAME = "abort-goal"
    reason: str

    def run(self, ctx: Ctx) -> None:
        _require_planning(ctx)
        need_text(self.reason, "reason")
        _end_goal(ctx, GoalStatus.ABORTED, SprintStatus.ABORTED, "goal_aborted",
                  f"Goal aborted: {self.reason}")
        ctx.reason = self.reason
        ctx.summary = f"abort-goal {ctx.board.goal.id} by {self.actor}"


@register_op
@dataclass(frozen=True, kw_only=True)
class ConfigSet(Op):
    NAME = "config"
    key: str
    value: str

    def run(self, ctx: Ctx) -> None:
        if ctx.role() not in PLANNING:
            raise PermissionDenied(f"config is for the planner or a human, not {self.actor}")
        v = coerce_config(self.key, self.value)
        if self.key in ("signatures", "human_keys"):
            from gitliza.core.keys import check_policy_change
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
    key: str | None = None  # the agent's OpenSSH ed25519 public key (gitliza/core/keys.py)

    def run(self, ctx: Ctx) -> None:
        # Registering gives a role, reviewer included: only the planner or the human may register
        # others, or a coder could register a reviewer and approve its own work. An agent may
        # register itself (its first act), which claims nothing beyond its own id.
        if self.actor != self.agent and ctx.role() not in PLANNING:
            raise PermissionDenied(f"register is for the planner or a human, not {self.actor}")
        check_id(self.agent, "agent id")
        if self.agent == HUMAN_ACTOR:
            raise ValidationError("'human' is reserved for the person at the keyboard")
        try:
            role = Role(self.role)
        except ValueError:
            role = None
        if role not in REGISTRABLE_ROLES:
            raise ValidationError(f"role {self.role!r} is not one of planner, coder, code_reviewer")
        if ctx.agent(self.agent) is not None:
            raise ValidationError(f"agent {self.agent} is already registered",
                                  hint="agent ids are unique; pick another id")
        assert role is not None
        keys: tuple[SigningKey, ...] = ()
        if self.key is not None:
            from gitliza.core.keys import canonical_key
            keys = (SigningKey(key=canonical_key(self.key, ctx.board, self.agent), since=self.time),)
        ctx.put_agent(Agent(id=self.agent, role=role, status=AgentState.IDLE,
                            heartbeat=self.time, registered=self.time, terminal=self.terminal,
                            keys=keys))
        ctx.summary = f"register {self.agent} as {role.value} by {self.actor}"


def _check_depends(ctx: Ctx, task_id: str, depends_on: tuple[str, ...]) -> None:
    seen = set()
    for dep in depends_on:
        check_id(dep, "dependency id")
        if dep == task_id:
            raise ValidationError(f"{task_id} cannot depend on itself")
        if dep in seen:
            raise ValidationError(f"{task_id} lists dependency {dep} twice")
        seen.add(dep)
        if ctx.task(dep) is None:
            raise ValidationError(f"{task_id} depends on {dep}, which does not exist")
    # A new task has no dependents, so it cannot close a cycle; `edit` checks cycles itself.


def _check_no_cycle(ctx: Ctx, task_id: str, depends_on: tuple[str, ...]) -> None:
    """Refuse dependencies that lead back to `task_id` (an edit can close a cycle: the task may
    already have dependents). Depth-first over depends_on, live and archived tasks alike."""
    stack, seen = list(depends_on), set()
    while stack:
        dep = stack.pop()
        if dep == task_id:
            raise ValidationError(f"{task_id}: these dependencies would form a cycle "
                                  f"({', '.join(depends_on)} lead back to {task_id})")
        if dep in seen:
            continue
        seen.add(dep)
        t = ctx.task(dep)
        if t is not None:
            stack.extend(t.depends_on)


def _check_limits(op: Op) -> None:
    """Per-task overrides: positive, and a lease override bounded like config lease_duration."""
    for name in ("max_iterations", "max_review_cycles", "lease_duration_override"):
        v = getattr(op, name, None)
        if v is not None and v <= 0:
            raise ValidationError(f"{name} must be a positive integer")
    lease = getattr(op, "lease_duration_override", None)
    if lease is not None and lease > _CONFIG_MAX["lease_duration"]:
        raise ValidationError(f"lease_duration_override must be at most "
                              f"{_CONFIG_MAX['lease_duration']} seconds (like config "
                              f"lease_duration), got {lease}")


def check_spec_ref(spec_ref: str) -> str:
    """`path/in/repo.md` with an optional `#anchor`: a relative path inside the repository."""
    path = spec_path(spec_ref)
    parts = path.split("/")
    if not path or path.startswith("/") or any(p in ("", ".", "..") for p in parts) \
            or any(ord(c) < 32 for c in spec_ref):
        raise ValidationError(f"spec_ref {spec_ref!r} is not a relative path (PATH[#anchor])")
    return spec_ref


def spec_path(spec_ref: str) -> str:
    """The file part of a spec_ref (`specs/retry.md#auth` -> `specs/retry.md`)."""
    return spec_ref.partition("#")[0]


@register_op
@dataclass(frozen=True, kw_only=True)
class Add(Op):
    NAME = "add"
    task: str
    description: str
    spec_ref: str | None = None
    done_when: str | None = None
    scope: str | None = None
    priority: int = 3
    depends_on: tuple[str, ...] = ()
    ready: bool = False
    max_iterations: int | None = None
    max_review_cycles: int | None = None
    lease_duration_override: int | None = None

    def run(self, ctx: Ctx) -> None:
        check_id(self.task, "task id")
        require_goal_open(ctx)
        if ctx.task(self.task) is not None:
            raise ValidationError(f"task {self.task} already exists")
        need_text(self.description, "description")
        _check_priority(self.priority)
        _check_limits(self)
        _check_depends(ctx, self.task, self.depends_on)
        task = Task(id=self.task, description=self.description, status=S.DRAFT, created=self.time,
                    priority=self.priority, spec_ref=self.spec_ref, done_when=self.done_when,
                    scope=self.scope, depends_on=self.depends_on,
                    max_iterations=self.max_iterations, max_review_cycles=self.max_review_cycles,
                    lease_duration_override=self.lease_duration_override)
        target = S.DRAFT
        if self.ready:
            gaps = definition_gaps(task)
            if gaps:
                raise ValidationError(f"{self.task} cannot be --ready: missing {', '.join(gaps)}",
                                      hint="give them, or add it as a DRAFT and finalize later")
            target = S.UNCLAIMED
        ctx.transition(None, target, task_id=self.task)
        ctx.put_task(replace(task, status=target,
                             history=(ctx.history(task, "created"))))


def _check_priority(priority: int) -> None:
    if not 1 <= priority <= 5:
        raise ValidationError(f"priority must be 1 (highest) to 5 (lowest), got {priority}")


_EDITABLE = ("description", "spec_ref", "done_when", "scope", "priority", "max_iterations",
             "max_review_cycles", "lease_duration_override")


@register_op
@dataclass(frozen=True, kw_only=True)
class Edit(Op):
    """Refine a DRAFT or UNCLAIMED task (planner or human). A field left None is unchanged.
    `depends_on` replaces the list when non-empty; `clear_depends_on` empties it (an empty tuple
    cannot mean "clear": the recorded args leave empty values out, so replay would read it as
    "unchanged")."""

    NAME = "edit"
    task: str
    description: str | None = None
    spec_ref: str | None = None
    done_when: str | None = None
    scope: str | None = None
    priority: int | None = None
    depends_on: tuple[str, ...] | None = None
    clear_depends_on: bool = False
    max_iterations: int | None = None
    max_review_cycles: int | None = None
    lease_duration_override: int | None = None

    def run(self, ctx: Ctx) -> None:
        t = ctx.require_task(self.task)
        ctx.transition(t, t.status)  # DRAFT and UNCLAIMED only, planner or human
        for name in ("description", "done_when", "scope"):
            if getattr(self, name) is not None:
                need_text(getattr(self, name), name)
        if self.spec_ref is not None:
            check_spec_ref(self.spec_ref)
        if self.priority is not None:
            _check_priority(self.priority)
        _check_limits(self)
        fields: dict[str, object] = {n: getattr(self, n) for n in _EDITABLE
                                     if getattr(self, n) is not None}
        if self.depends_on and self.clear_depends_on:
            raise ValidationError("give new dependencies or clear them, not both")
        if self.depends_on:
            _check_depends(ctx, t.id, self.depends_on)
            _check_no_cycle(ctx, t.id, self.depends_on)
            fields["depends_on"] = self.depends_on
        elif self.clear_depends_on:
            fields["depends_on"] = ()
        changed = sorted(k for k, v in fields.items() if getattr(t, k) != v)
        if not changed:
            raise ValidationError(f"edit {t.id}: nothing to change",
                                  hint="give at least one new value (--desc, --done-when, ...)")
        ctx.put_task(replace(t, **fields, history=ctx.history(t, "edited",
                                                              note=", ".join(changed))))
        ctx.summary = f"edit {t.id} ({', '.join(changed)}) by {self.actor}"


@register_op
@dataclass(frozen=True, kw_only=True)
class Finalize(Op):
    NAME = "finalize"
    task: str

    def run(self, ctx: Ctx) -> None:
        t = ctx.require_task(self.task)
        ctx.transition(t, S.UNCLAIMED)
        gaps = definition_gaps(t)
        if gaps:
            raise ValidationError(f"{t.id} cannot leave DRAFT: missing {', '.join(gaps)}")
        ctx.put_task(replace(t, status=S.UNCLAIMED, history=ctx.history(t, "finalized")))


def _retire(ctx: Ctx, t: Task, **fields: object) -> Task:
    """Common end of rescope/abandon: the holder is freed, the worktree is let go."""
    free_agent(ctx, t, t.assigned_to)
    free_agent(ctx, t, t.reviewing_by)
    retired: Task = replace(t, worktree=None, lease_expires=None, reviewing_by=None,
                            review_lease_expires=None, **fields)
    return retired


@register_op
@dataclass(frozen=True, kw_only=True)
class Rescope(Op):
    NAME = "rescope"
    task: str
    into: tuple[str, ...]
    reason: str

    def run(self, ctx: Ctx) -> None:
        t = ctx.require_task(self.task)
        need_text(self.reason, "reason")
        ctx.transition(t, S.SUPERSEDED, reason=self.reason)
        if not self.into:
            raise ValidationError("rescope needs at least one successor (--into NEW)")
        if len(set(self.into)) != len(self.into):
            raise ValidationError("successor ids must be distinct")
        for new in self.into:
            check_id(new, "task id")
            if ctx.task(new) is not None:
                raise ValidationError(f"task {new} already exists")
        ctx.put_task(_retire(ctx, t, status=S.SUPERSEDED, superseded_by=self.into,
                             rescope_reason=self.reason,
                             history=ctx.history(t, "superseded", reason=self.reason)))
        for new in self.into:
            succ = Task(id=new, description=t.description, status=S.DRAFT, created=self.time,
                        priority=t.priority, spec_ref=t.spec_ref, done_when=t.done_when,
                        scope=t.scope, depends_on=t.depends_on, supersedes=t.id,
                        max_iterations=t.max_iterations, max_review_cycles=t.max_review_cycles,
                        lease_duration_override=t.lease_duration_override)
            ctx.put_task(replace(succ, history=ctx.history(succ, "created",
                                                            note=f"rescoped from {t.id}")))
        # Dependents of the original now wait for all of its successors instead: waiting for a
        # SUPERSEDED task would block them forever. This scans the live tasks, but rescope is rare.
        for other in list(ctx.board.tasks()):
            if t.id in other.depends_on and other.id not in self.into:
                deps = tuple(d for d in other.depends_on if d != t.id) + self.into
                ctx.put_task(replace(other, depends_on=tuple(dict.fromkeys(deps))))
        g = ctx.board.goal
        ctx.put("goal", "", replace(g, alignment_history=g.alignment_history + (Alignment(
            self.time, f"rescope_{t.id}",
            f"{t.id} SUPERSEDED -> {', '.join(self.into)}: {self.reason}"),)))
        ctx.summary = f"rescope {t.id} ({t.status} -> SUPERSEDED) into {', '.join(self.into)} by {self.actor}"


@register_op
@dataclass(frozen=True, kw_only=True)
class Abandon(Op):
    NAME = "abandon"
    task: str
    reason: str

    def run(self, ctx: Ctx) -> None:
        t = ctx.require_task(self.task)
        need_text(self.reason, "reason")
        ctx.transition(t, S.ABANDONED, reason=self.reason)
        ctx.put_task(_retire(ctx, t, status=S.ABANDONED, abandon_reason=self.reason,
                             history=ctx.history(t, "abandoned", reason=self.reason)))
        waiting = [o.id for o in ctx.board.tasks() if t.id in o.depends_on]
        if waiting:
            ctx.notices.append(f"{', '.join(waiting)} depend on {t.id} and can no longer become "
                               "claimable: rescope or abandon them")


@register_op
@dataclass(frozen=True, kw_only=True)
class Unblock(Op):
    NAME = "unblock"
    task: str

    def run(self, ctx: Ctx) -> None:
        t = ctx.require_task(self.task)
        ctx.transition(t, S.UNCLAIMED)
        # A fresh start: the next coder claims from the integration tip. failed_by is kept, so
        # coders who already failed cannot take it again (hypothesis exhaustion).
        ctx.put_task(replace(t, status=S.UNCLAIMED, blocked_reason=None, blocked_questions=(),
                             assigned_to=None, worktree=None, base_commit=None,
                             lease_expires=None, history=ctx.history(t, "unblocked")))
