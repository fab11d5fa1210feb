"""The planner's task ops: add, edit and finalize a task (its definition gates and dependencies),
rescope, abandon and unblock one."""
from __future__ import annotations

from dataclasses import dataclass

from gitliza.core import lockscope

from gitliza.core.agents import costs
from gitliza.core.config import CONFIG_MAX
from gitliza.core.ids import check_id, check_spec_ref, spec_ref_leaves
from gitliza.core.model import Alignment, Task
from gitliza.core.quorum import check_criteria, criteria_of, reviewers
from gitliza.core.presence.placement import check_labels
from gitliza.core.ops.base import (Ctx, Op, free_agent, need_text, register_op, replace,
                                   require_goal_open)
from gitliza.core.states import HUMAN_ACTOR, TaskState
from gitliza.errors import ValidationError

S = TaskState


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


def _check_limits(op: Op | TaskFields) -> None:
    """Per-task overrides: positive, and a lease override bounded like config lease_duration."""
    for name in ("max_iterations", "max_review_cycles", "lease_duration_override"):
        v = getattr(op, name, None)
        if v is not None and v <= 0:
            raise ValidationError(f"{name} must be a positive integer")
    budget = getattr(op, "budget_tokens", None)
    if budget is not None and not 0 < budget <= CONFIG_MAX["budget_tokens_per_task"]:
        raise ValidationError(f"budget_tokens must be a positive integer at most "
                              f"{CONFIG_MAX['budget_tokens_per_task']:,}, got {budget}")
    lease = getattr(op, "lease_duration_override", None)
    if lease is not None and lease > CONFIG_MAX["lease_duration"]:
        raise ValidationError(f"lease_duration_override must be at most "
                              f"{CONFIG_MAX['lease_duration']} seconds (like config "
                              f"lease_duration), got {lease}")


@dataclass(frozen=True, kw_only=True)
class TaskFields:
    """What defines a new task: the fields of `add`, and of each task of `add-tasks`."""

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
    budget_tokens: int | None = None  # per-task token budget (gitliza/core/agents/costs.py)
    labels: tuple[str, ...] = ()  # a quorum rule may raise the task's quorum by them
    criteria: tuple[str, ...] = ()  # the acceptance criteria an approval gives evidence for
    lock_scope: tuple[str, ...] = ()  # globs of the paths it will write (core/lockscope.py)
    needs: tuple[str, ...] = ()  # machine labels its claimer must offer (core/presence/placement.py)


@register_op
@dataclass(frozen=True, kw_only=True)
class Add(Op, TaskFields):
    NAME = "add"

    def run(self, ctx: Ctx) -> None:
        require_goal_open(ctx)
        _add(ctx, self, "add")


def _add(ctx: Ctx, new: TaskFields, table_op: str) -> None:
    """One new task (`add`, and each of `add-tasks`), judged by the transition table's rows of
    `table_op` (add-tasks is add, for each task of the file, in one commit)."""
    check_id(new.task, "task id")
    if ctx.task(new.task) is not None:
        raise ValidationError(f"task {new.task} already exists")
    need_text(new.description, "description")
    leaves = spec_ref_leaves(new.spec_ref) if new.spec_ref else None
    if leaves:  # a DRAFT too (the spec gate waits for finalize); replay too (verify)
        raise ValidationError(leaves)
    _check_priority(new.priority)
    _check_limits(new)
    costs.check_task_budget(ctx.board, new.budget_tokens, ctx.op.actor == HUMAN_ACTOR)
    _check_depends(ctx, new.task, new.depends_on)
    for label in new.labels:
        check_id(label, "label")
    check_criteria(new.criteria)
    task = Task(id=new.task, description=new.description, status=S.DRAFT, created=ctx.op.time,
                priority=new.priority, spec_ref=new.spec_ref, done_when=new.done_when,
                scope=new.scope, depends_on=new.depends_on,
                max_iterations=new.max_iterations, max_review_cycles=new.max_review_cycles,
                lease_duration_override=new.lease_duration_override,
                budget_tokens=new.budget_tokens, labels=new.labels, criteria=new.criteria,
                lock_scope=lockscope.check_scope(new.lock_scope),
                needs=check_labels(new.needs, "needs"))
    target = S.DRAFT
    if new.ready:
        gaps = definition_gaps(task)
        if gaps:
            raise ValidationError(f"{new.task} cannot be --ready: missing {', '.join(gaps)}",
                                  hint="give them, or add it as a DRAFT and finalize later")
        target = S.UNCLAIMED
    ctx.transition(None, target, task_id=new.task, as_op=table_op)
    ctx.put_task(replace(task, status=target, history=(ctx.history(task, "created"))))


@dataclass(frozen=True, kw_only=True)
class NewTask(TaskFields):
    """One task of `add-tasks`."""


MAX_TASKS_PER_FILE = 500  # a plan, not a data dump: one commit stays small and readable


@register_op
@dataclass(frozen=True, kw_only=True)
class AddTasks(Op):
    """Add the tasks of a file (`git liza add --from FILE`) in one transition: all or none.
    A dependency may name a task on the board or one of the file (in any order); every error
    names its task (`task ID: ...`), which the CLI turns into the task's line in the file."""

    NAME = "add-tasks"
    tasks: tuple[NewTask, ...]

    def run(self, ctx: Ctx) -> None:
        require_goal_open(ctx)
        if not self.tasks:
            raise ValidationError("no task to add")
        if len(self.tasks) > MAX_TASKS_PER_FILE:
            raise ValidationError(f"{len(self.tasks)} tasks in one file; at most "
                                  f"{MAX_TASKS_PER_FILE}", hint="split the file")
        for new in _dependency_order(self.tasks):
            try:
                _add(ctx, new, "add")
            except ValidationError as e:
                rest = e.message.removeprefix(f"task {new.task} ").removeprefix(f"{new.task} ")
                raise type(e)(f"task {new.task}: {rest}", hint=e.hint) from None
        # Many tasks, one commit: no single task or state names the transition.
        ctx.task_id = ctx.from_state = ctx.to_state = None
        ids = [t.task for t in self.tasks]
        shown = ", ".join(ids[:5]) + (f" and {len(ids) - 5} more" if len(ids) > 5 else "")
        ctx.summary = f"add-tasks {len(ids)} task(s) ({shown}) by {self.actor}"


def _dependency_order(tasks: tuple[NewTask, ...]) -> list[NewTask]:
    """The file's tasks with each after the file's tasks it depends on (else in file order), so
    that a dependency may come later in the file; a task listed twice or a cycle among them is
    refused, naming the task."""
    by_id: dict[str, NewTask] = {}
    for t in tasks:
        if t.task in by_id:
            raise ValidationError(f"task {t.task}: listed twice in the file")
        by_id[t.task] = t
    out: list[NewTask] = []
    done: set[str] = set()
    visiting: list[str] = []

    def visit(t: NewTask) -> None:
        if t.task in done:
            return
        if t.task in visiting:
            cycle = visiting[visiting.index(t.task):] + [t.task]
            raise ValidationError(f"task {t.task}: these dependencies would form a cycle "
                                  f"({' -> '.join(cycle)})")
        visiting.append(t.task)
        for dep in t.depends_on:
            if dep in by_id:
                visit(by_id[dep])
        visiting.pop()
        done.add(t.task)
        out.append(t)
    for t in tasks:
        visit(t)
    return out


def _check_priority(priority: int) -> None:
    if not 1 <= priority <= 5:
        raise ValidationError(f"priority must be 1 (highest) to 5 (lowest), got {priority}")


_EDITABLE = ("description", "spec_ref", "done_when", "scope", "priority", "max_iterations",
             "max_review_cycles", "lease_duration_override", "budget_tokens")


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
    budget_tokens: int | None = None
    # Issue 40: a new done_when lists the task's acceptance criteria anew (quorum.criteria_of).
    # Set by the command layer; an edit recorded before it leaves the criteria as they were.
    recount_criteria: bool = False
    # Replaces the lock scope when non-empty; `clear_lock_scope` empties it (as depends_on).
    lock_scope: tuple[str, ...] | None = None
    clear_lock_scope: bool = False

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
        costs.check_task_budget(ctx.board, self.budget_tokens, self.actor == HUMAN_ACTOR,
                                t.budget_tokens)
        fields: dict[str, object] = {n: getattr(self, n) for n in _EDITABLE
                                     if getattr(self, n) is not None}
        if self.recount_criteria and self.done_when is not None:
            fields["criteria"] = criteria_of(self.done_when)
        if self.depends_on and self.clear_depends_on:
            raise ValidationError("give new dependencies or clear them, not both")
        if self.depends_on:
            _check_depends(ctx, t.id, self.depends_on)
            _check_no_cycle(ctx, t.id, self.depends_on)
            fields["depends_on"] = self.depends_on
        elif self.clear_depends_on:
            fields["depends_on"] = ()
        if self.lock_scope and self.clear_lock_scope:
            raise ValidationError("give a new lock scope or clear it, not both")
        if self.lock_scope:
            fields["lock_scope"] = lockscope.check_scope(self.lock_scope)
        elif self.clear_lock_scope:
            fields["lock_scope"] = ()
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
    for reviewer in reviewers(t):
        free_agent(ctx, t, reviewer)
    retired: Task = replace(t, worktree=None, lease_expires=None, reviewing_by=None,
                            review_lease_expires=None, co_reviews=(), **fields)
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
                        lease_duration_override=t.lease_duration_override,
                        budget_tokens=t.budget_tokens)
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
    # The answer to the blocked questions: a human note for the task in this same transition
    # (the next agent's briefing shows it).
    answer: str | None = None

    def run(self, ctx: Ctx) -> None:
        t = ctx.require_task(self.task)
        ctx.transition(t, S.UNCLAIMED)
        if t.needs_root_cause:
            raise ValidationError(f"{t.id} waits for a root-cause note, not an unblock",
                                  hint=f"`git liza root-cause {t.id} NOTE`")
        if self.answer is not None:
            need_text(self.answer, "answer")
            from gitliza.core.ops.blocking import answer_note
            answer_note(ctx, t.id, self.answer)
        # A fresh start: the next coder claims from the integration tip. failed_by is kept, so
        # coders who already failed cannot take it again (hypothesis exhaustion).
        ctx.put_task(replace(t, status=S.UNCLAIMED, blocked_reason=None, blocked_questions=(),
                             assigned_to=None, worktree=None, base_commit=None,
                             lease_expires=None, awaiting_human=False,
                             history=ctx.history(t, "unblocked")))
