"""The whole protocol state machine, as data.

Like h11's `_state.py`: every legal task transition, the op that performs it and the roles allowed to
perform it are listed here, in one table (`TASK_TRANSITIONS`); beside it, the agent state pairs
(`AGENT_TRANSITIONS`), who may run each op that moves no task (`BOARD_OPS`: the controls, the
goal, config, registration, the journal's planner entries, keys and seals) and who logs which
anomaly (`ANOMALY_LOGGERS`). The ops (gitliza/core/ops/) ask these tables before they change
anything (`Ctx.transition`, `Ctx.allowed`), and `verify` and the server hook replay through the
same ops, so no op writes a role rule of its own. What stays with an op is who, not which role:
an author never reviews its own work, a task earmarked for one coder is that coder's.
"""
from __future__ import annotations

from dataclasses import dataclass
from enum import StrEnum


class TaskState(StrEnum):
    DRAFT = "DRAFT"
    UNCLAIMED = "UNCLAIMED"
    CLAIMED = "CLAIMED"
    READY_FOR_REVIEW = "READY_FOR_REVIEW"
    REJECTED = "REJECTED"
    APPROVED = "APPROVED"
    BLOCKED = "BLOCKED"
    INTEGRATION_FAILED = "INTEGRATION_FAILED"
    MERGED = "MERGED"
    SUPERSEDED = "SUPERSEDED"
    ABANDONED = "ABANDONED"


class AgentState(StrEnum):
    STARTING = "STARTING"
    IDLE = "IDLE"
    WORKING = "WORKING"
    REVIEWING = "REVIEWING"
    WAITING = "WAITING"
    HANDOFF = "HANDOFF"


class Role(StrEnum):
    PLANNER = "planner"
    CODER = "coder"
    CODE_REVIEWER = "code_reviewer"
    # Not registrable: the reserved actor id `human` (the person at the keyboard) has this role.
    # The spec's human override protocol lets a human inject tasks and force a replan.
    HUMAN = "human"


HUMAN_ACTOR = "human"
REGISTRABLE_ROLES = frozenset({Role.PLANNER, Role.CODER, Role.CODE_REVIEWER})

S = TaskState
TERMINAL: frozenset[TaskState] = frozenset({S.MERGED, S.SUPERSEDED, S.ABANDONED})

# Where no coder or reviewer holds a lease, so the planner may retire the task without stranding one.
_PLANNER_RETIRABLE = (S.DRAFT, S.UNCLAIMED, S.BLOCKED, S.REJECTED, S.INTEGRATION_FAILED)

PLANNING = frozenset({Role.PLANNER, Role.HUMAN})
CODERS = frozenset({Role.CODER})
REVIEWERS = frozenset({Role.CODE_REVIEWER})
MERGERS = frozenset({Role.CODE_REVIEWER, Role.HUMAN})
HUMANS = frozenset({Role.HUMAN})
ANY_ROLE = frozenset(Role)


@dataclass(frozen=True, slots=True)
class Transition:
    """A row of the transition table: an op takes a task from `source` to `target`, for `roles`."""

    op: str
    source: TaskState | None  # None: the task does not exist yet
    target: TaskState
    roles: frozenset[Role]
    note: str = ""


def _t(op: str, sources: tuple[TaskState | None, ...], target: TaskState,
       roles: frozenset[Role], note: str = "") -> list[Transition]:
    return [Transition(op, s, target, roles, note) for s in sources]


TASK_TRANSITIONS: tuple[Transition, ...] = tuple(
    _t("add", (None,), S.DRAFT, PLANNING)
    + _t("add", (None,), S.UNCLAIMED, PLANNING, "add --ready with every gate met")
    + _t("rescope", (None,), S.DRAFT, PLANNING, "a successor task of a rescope")
    + _t("finalize", (S.DRAFT,), S.UNCLAIMED, PLANNING, "definition gates checked")
    + _t("edit", (S.DRAFT,), S.DRAFT, PLANNING, "refine a task nobody holds")
    + _t("edit", (S.UNCLAIMED,), S.UNCLAIMED, PLANNING, "refine a task nobody holds")
    + _t("claim", (S.UNCLAIMED, S.REJECTED, S.INTEGRATION_FAILED), S.CLAIMED, CODERS)
    + _t("claim", (S.CLAIMED,), S.CLAIMED, CODERS, "takeover after the holder's lease expired")
    + _t("claim", (S.CLAIMED, S.REJECTED, S.INTEGRATION_FAILED), S.BLOCKED, CODERS,
         "the claim exhausts the task: max_coder_iterations (or, a format-1 claim, hypothesis "
         "exhaustion)")
    # The human is the highest authority (GitHub's "unassign"): it frees any held task, its
    # worktree kept for the next claim (leftovers go to the attic).
    + _t("release", (S.CLAIMED,), S.UNCLAIMED, CODERS | HUMANS,
         "the holder gives the task back, or the human frees it")
    + _t("release", (S.REJECTED, S.INTEGRATION_FAILED), S.UNCLAIMED, HUMANS,
         "the human requeues a task its coder must rework")
    + _t("release", (S.READY_FOR_REVIEW,), S.READY_FOR_REVIEW, HUMANS,
         "the human frees a review lease: another reviewer may take the review")
    + _t("release", (S.UNCLAIMED,), S.UNCLAIMED, HUMANS,
         "the human takes back a reassignment: any coder may claim the task again")
    # The human gives a task to a coder of its choosing (GitHub's "assign"): the task waits,
    # without a lease, for that coder's supervisor to claim it (the spec's supervisor re-claims a
    # rejected task for its coder the same way); a holder loses it and stands down.
    + _t("reassign", (S.CLAIMED,), S.UNCLAIMED, HUMANS,
         "the human takes a held task from its coder for another one")
    + _t("reassign", (S.UNCLAIMED,), S.UNCLAIMED, HUMANS, "the human earmarks a task for a coder")
    + _t("reassign", (S.REJECTED,), S.REJECTED, HUMANS, "the rework goes to another coder")
    + _t("reassign", (S.INTEGRATION_FAILED,), S.INTEGRATION_FAILED, HUMANS,
         "the integration fix goes to another coder")
    + _t("block", (S.CLAIMED,), S.BLOCKED, CODERS | PLANNING,
         "the holder blocks with a diagnosis, or a human/planner forces a replan")
    + _t("block", (S.UNCLAIMED, S.REJECTED, S.INTEGRATION_FAILED), S.BLOCKED, PLANNING,
         "force replan (human override protocol)")
    + _t("submit", (S.CLAIMED,), S.READY_FOR_REVIEW, CODERS, "clean sync, review_commit")
    + _t("claim-review", (S.READY_FOR_REVIEW,), S.READY_FOR_REVIEW, REVIEWERS, "review lease")
    + _t("verdict", (S.READY_FOR_REVIEW,), S.APPROVED, REVIEWERS)
    + _t("verdict", (S.READY_FOR_REVIEW,), S.REJECTED, REVIEWERS)
    + _t("verdict", (S.READY_FOR_REVIEW,), S.READY_FOR_REVIEW, REVIEWERS,
         "an approval below the review quorum: the vote is counted, the review goes on")
    + _t("verdict", (S.READY_FOR_REVIEW,), S.BLOCKED, REVIEWERS,
         "a rejection that reaches max_review_cycles: review deadlock")
    + _t("merge", (S.APPROVED,), S.MERGED, MERGERS, "exactly review_commit merged")
    + _t("merge", (S.APPROVED,), S.INTEGRATION_FAILED, MERGERS, "conflict or failing test")
    + _t("merge", (S.READY_FOR_REVIEW,), S.INTEGRATION_FAILED, HUMANS,
         "a required forge check failed on the commit in review (the bridge, docs/forge.md)")
    + _t("conflict", (S.READY_FOR_REVIEW, S.APPROVED), S.INTEGRATION_FAILED,
         MERGERS, "no longer merges with the integration branch: back to its coder "
         "before a review or a merge is spent on it")
    + _t("carry-approval", (S.READY_FOR_REVIEW,), S.APPROVED, MERGERS,
         "an integration fix that is git's clean merge of its approved commit: no second review")
    # The forge bridge (docs/forge.md): the human's review on the task's pull request.
    + _t("human-review", (S.READY_FOR_REVIEW, S.APPROVED), S.REJECTED, HUMANS,
         "the human requests changes on the pull request")
    + _t("human-review", (S.READY_FOR_REVIEW,), S.APPROVED, HUMANS,
         "the human's approval on the pull request reaches the review quorum")
    + _t("human-review", (S.READY_FOR_REVIEW,), S.READY_FOR_REVIEW, HUMANS,
         "the human's approval, a vote below the review quorum")
    + _t("unblock", (S.BLOCKED,), S.UNCLAIMED, PLANNING, "keeps failed_by")
    + _t("root-cause", (S.BLOCKED,), S.UNCLAIMED, PLANNING,
         "the root-cause note after repeated rejections; the next coder reads it")
    + _t("rescope", _PLANNER_RETIRABLE, S.SUPERSEDED, PLANNING)
    + _t("abandon", _PLANNER_RETIRABLE, S.ABANDONED, PLANNING)
    # orchestrator-state-machine.md: a cancel from any non-terminal state; the holder's lease (a
    # coder's or a reviewer's) ends with it and its work is kept (cleanup_after, the attic).
    + _t("abandon", (S.CLAIMED, S.READY_FOR_REVIEW, S.APPROVED), S.ABANDONED, PLANNING,
         "cancel: the holder stands down")
)

# A BLOCKED task whose questions are the human's (`block --for-human`, AWAITING HUMAN) belongs to
# the human: of every row above that starts from BLOCKED (unblock, root-cause, rescope,
# abandon), only the human's moves it; a planner answering the human's question is refused.
AWAITING_HUMAN_ROLES = HUMANS


def roles_for(tr: Transition, awaiting_human: bool) -> frozenset[Role]:
    """The roles that may take row `tr` for a task (AWAITING HUMAN narrows it to the human)."""
    if awaiting_human and tr.source == S.BLOCKED:
        return tr.roles & AWAITING_HUMAN_ROLES
    return tr.roles


# Named because the spec names them; each also has no row above, so the table refuses them anyway.
FORBIDDEN: dict[tuple[TaskState, TaskState], str] = {
    (S.DRAFT, S.CLAIMED): "coders cannot claim drafts",
    (S.CLAIMED, S.MERGED): "skipping review",
    (S.CLAIMED, S.APPROVED): "self-approval",
}

_BY_KEY: dict[tuple[str, TaskState | None, TaskState], Transition] = {
    (t.op, t.source, t.target): t for t in TASK_TRANSITIONS
}
_OPS_BY_SOURCE: dict[tuple[str, TaskState | None], tuple[TaskState, ...]] = {}
for _tr in TASK_TRANSITIONS:
    _OPS_BY_SOURCE.setdefault((_tr.op, _tr.source), ())
    _OPS_BY_SOURCE[(_tr.op, _tr.source)] += (_tr.target,)


def lookup(op: str, source: TaskState | None, target: TaskState) -> Transition | None:
    return _BY_KEY.get((op, source, target))


def sources_of(op: str) -> tuple[TaskState | None, ...]:
    """States from which `op` can start (for error messages)."""
    seen: list[TaskState | None] = []
    for t in TASK_TRANSITIONS:
        if t.op == op and t.source not in seen:
            seen.append(t.source)
    return tuple(seen)


def is_legal(source: TaskState, target: TaskState) -> bool:
    """Whether any op may move a task from `source` to `target` (state-level view)."""
    return any(t.source == source and t.target == target for t in TASK_TRANSITIONS)


# Agent state machine: (from, to) pairs that ops may produce. REGISTER enters at IDLE.
AGENT_TRANSITIONS: frozenset[tuple[AgentState, AgentState]] = frozenset({
    (AgentState.STARTING, AgentState.IDLE),
    (AgentState.IDLE, AgentState.WORKING),        # claim
    (AgentState.WAITING, AgentState.WORKING),     # re-claim after a rejection
    (AgentState.WORKING, AgentState.WORKING),     # heartbeat, takeover of the same task
    (AgentState.WORKING, AgentState.WAITING),     # submit
    (AgentState.HANDOFF, AgentState.WAITING),     # submit by the agent that took over a handoff
    (AgentState.WORKING, AgentState.IDLE),        # release, block
    (AgentState.WAITING, AgentState.IDLE),        # approved, reassigned, exhausted
    (AgentState.IDLE, AgentState.WAITING),        # the human reassigned a task to it
    (AgentState.IDLE, AgentState.REVIEWING),      # claim-review
    (AgentState.REVIEWING, AgentState.REVIEWING),  # heartbeat
    (AgentState.REVIEWING, AgentState.IDLE),      # verdict
    (AgentState.WORKING, AgentState.HANDOFF),     # handoff on context exhaustion
    (AgentState.REVIEWING, AgentState.HANDOFF),
    (AgentState.HANDOFF, AgentState.IDLE),
    (AgentState.HANDOFF, AgentState.WORKING),
})

# The ops that move no task: who may run each (a rule of an op's own, `op:what`, beside it).
BOARD_OPS: dict[str, frozenset[Role]] = {
    # The human override protocol's levers (the planner may pull them too).
    "pause": PLANNING,
    "resume": PLANNING,
    "abort": PLANNING,
    "checkpoint": PLANNING,
    # Which machines take work: the human's (an agent that drained its peers' machines would take
    # the team's work for itself; docs/multi-machine.md).
    "drain": HUMANS,
    "undrain": HUMANS,
    # The agent's own supervisor taking, renewing or ending its generation token (`start`,
    # `takeover`, `renew`, `end`): an agent's, never the human's, who has no supervisor ...
    "supervise": REGISTRABLE_ROLES,
    # ... but who ends the token of one found dead (`supervise free`, what `doctor --fix` runs).
    "supervise:free": HUMANS,
    # Its supervisor saying the agent waits for its model provider (core/agents/faults.py).
    "provider-wait": REGISTRABLE_ROLES,
    # The board's frame.
    "init": PLANNING,  # a new goal once the last one ended (the first init has no board to ask)
    "complete-goal": PLANNING,
    "abort-goal": PLANNING,
    "config": PLANNING,
    # Where the human is told, the models, the review bar, the sandbox's limits, the integration
    # base: an agent that set these would govern its own governor (core/ops/goal.py names them).
    "config:human-key": HUMANS,
    # Registering gives a role, reviewer included: an agent registers itself (its first act, which
    # claims nothing beyond its own id), only the planner or the human registers another.
    "register:another": PLANNING,
    "circuit": PLANNING,
    "circuit:resolve": HUMANS,
    "convert": PLANNING,
    "spec-change": PLANNING,
    "sprint-scope": PLANNING,
    # Keys decide who a commit proves to be its author, a seal where a new clone's trust starts:
    # only the human speaks for them.
    "rekey": HUMANS,
    "seal": HUMANS,
    # The forge bridge runs as the human who set it up (docs/forge.md): a task's pull request
    # number, and its required checks passed on the approved commit (which lets it merge).
    "forge-link": HUMANS,
    "forge-checks": HUMANS,
}

# Who logs which anomaly (blackboard-schema.md "Anomaly Types"); the human may log any.
ANOMALY_LOGGERS: dict[str, frozenset[Role]] = {
    "retry_loop": frozenset({Role.CODER, Role.CODE_REVIEWER}),
    "trade_off": frozenset({Role.CODER}), "spec_ambiguity": frozenset({Role.CODER}),
    "external_blocker": frozenset({Role.CODER}),
    "assumption_violated": frozenset({Role.CODER, Role.CODE_REVIEWER}),
    "scope_deviation": frozenset({Role.CODE_REVIEWER}),
    "workaround": frozenset({Role.CODE_REVIEWER}), "debt_created": frozenset({Role.CODE_REVIEWER}),
    "spec_changed": frozenset({Role.CODE_REVIEWER}),
    "hypothesis_exhaustion": frozenset({Role.PLANNER}), "spec_gap": frozenset({Role.PLANNER}),
    "review_deadlock": frozenset({Role.PLANNER}),
    "system_ambiguity": frozenset(Role),
    "budget_exceeded": frozenset(Role),  # a supervisor of any role (gitliza/team/usage.py)
    "scope_violation": frozenset({Role.CODER}),  # its refused submit (services/lifecycle)
}
