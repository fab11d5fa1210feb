"""The board's entities, one frozen dataclass per section of `blackboard-schema.md`.

Field order is the order in which fields are written to TOML and YAML. `None` and empty collections
are left out when encoded (TOML has no null), so absent and null mean the same thing, as in the spec.

Not split: longer than the module size limit on purpose, it is the schema, read side by side with
blackboard-schema.md, and nearly all of it is field lists; splitting the entities over modules
would scatter that one page without making any part simpler.
"""
from __future__ import annotations

from dataclasses import dataclass, field
from enum import StrEnum
from typing import Any

from gitliza.core.states import AgentState, Role, TaskState

FORMAT_VERSION = 2  # the storage format of refs/liza/state (the `format` blob; core/encoding/versions.py)
SINCE_V1 = "gitliza.since_v1"


def since_v1(default: Any) -> Any:
    """A field added to an entity after format 1 shipped. The codec leaves it out while it holds
    its default, so that every board written before it existed replays to the same bytes
    (tests/services/test_compat.py); a non-default value is written as usual."""
    return field(default=default, metadata={SINCE_V1: True})


SCHEMA_VERSION = 1  # `version:` of the spec's state.yaml


class GoalStatus(StrEnum):
    IN_PROGRESS = "IN_PROGRESS"
    COMPLETED = "COMPLETED"
    ABORTED = "ABORTED"


class SprintStatus(StrEnum):
    IN_PROGRESS = "IN_PROGRESS"
    CHECKPOINT = "CHECKPOINT"
    COMPLETED = "COMPLETED"
    ABORTED = "ABORTED"


class Severity(StrEnum):
    CRITICAL = "critical"
    HIGH = "high"
    MEDIUM = "medium"
    LOW = "low"


class Urgency(StrEnum):
    IMMEDIATE = "immediate"
    DEFERRED = "deferred"


class CBStatus(StrEnum):
    OK = "OK"
    TRIGGERED = "TRIGGERED"


ANOMALY_REQUIRED: dict[str, tuple[str, ...]] = {
    "retry_loop": ("count", "error_pattern"),
    "trade_off": ("what", "why", "debt_created"),
    "spec_ambiguity": (),
    "external_blocker": ("blocker_service",),
    "assumption_violated": ("assumption", "reality"),
    "scope_deviation": (),
    "workaround": (),
    "debt_created": (),
    "spec_changed": (),
    "hypothesis_exhaustion": (),
    "spec_gap": (),
    "review_deadlock": (),
    "system_ambiguity": ("protocol_section", "question"),
    # gitliza's: a supervisor did not start an agent because its task's token budget is spent
    # (gitliza/core/agents/costs.py); the watcher's BUDGET alarm reads it.
    "budget_exceeded": ("budget", "spent"),
    # gitliza's: a submit refused because its changes left the task's lock scope (docs/locks.md).
    "scope_violation": ("files",),
}
ANOMALY_TYPES = tuple(ANOMALY_REQUIRED)


@dataclass(frozen=True, slots=True)
class HistoryEntry:
    """One entry of a task's `history` (time, event, who, note)."""

    time: str
    event: str
    agent: str | None = None
    commit: str | None = None
    task: str | None = None
    reason: str | None = None
    note: str | None = None


@dataclass(frozen=True, slots=True)
class Evidence:
    """What shows that one acceptance criterion of a task passes (docs/review.md): a path (and line) in
    the reviewed commit, a test name, or a command with a digest of its output."""

    criterion: int  # 1-based, into the task's `criteria`
    kind: str  # path | test | command (gitliza/core/quorum.py EVIDENCE_KINDS)
    ref: str  # `path[:line]`, the test's name, or the command line
    digest: str | None = None  # a command's: `sha256:<hex>` of its output


@dataclass(frozen=True, slots=True)
class ReviewVote:
    """One reviewer's approval of one review commit (gitliza/core/quorum.py). `cli` and `model`
    are what the reviewer's supervisor recorded, never the agent's own word."""

    agent: str
    commit: str
    time: str
    cli: str | None = None
    model: str | None = None
    evidence: tuple[Evidence, ...] = ()


@dataclass(frozen=True, slots=True)
class ReviewLease:
    """A review lease beside the task's first one (`reviewing_by`): under a review quorum several
    reviewers review one commit at once, one lease each (gitliza/core/quorum.py)."""

    agent: str
    expires: str


@dataclass(frozen=True, slots=True)
class Task:
    """A task (`tasks:` of the schema; terminal ones live in the archive)."""

    id: str
    description: str
    status: TaskState
    created: str
    priority: int = 3
    spec_ref: str | None = None
    done_when: str | None = None
    scope: str | None = None
    depends_on: tuple[str, ...] = ()
    assigned_to: str | None = None
    worktree: str | None = None
    base_commit: str | None = None
    lease_expires: str | None = None
    iteration: int | None = None
    review_commit: str | None = None
    reviewing_by: str | None = None
    review_lease_expires: str | None = None
    approved_by: str | None = None
    rejection_reason: str | None = None
    review_cycles_current: int = 0
    review_cycles_total: int = 0
    blocked_reason: str | None = None
    blocked_questions: tuple[str, ...] = ()
    attempted: tuple[str, ...] = ()
    failed_by: tuple[str, ...] = ()
    integration_fix: bool = False
    integration_failure: str | None = None
    handoff_pending: bool = False
    supersedes: str | None = None
    superseded_by: tuple[str, ...] = ()
    rescope_reason: str | None = None
    abandon_reason: str | None = None
    merge_commit: str | None = None
    max_iterations: int | None = None  # per-task override of config.max_coder_iterations
    max_review_cycles: int | None = None  # per-task override of config.max_review_cycles
    # Seconds; per-task override of config.lease_duration for long operations (blackboard-schema.md
    # "v1 Limitation - Long Operations"), bounded like the config value.
    lease_duration_override: int | None = None
    history: tuple[HistoryEntry, ...] = ()
    # Tokens (input + output) the task's agent runs may spend; per-task override of
    # config.budget_tokens_per_task (gitliza/core/agents/costs.py).
    budget_tokens: int | None = since_v1(None)
    # A BLOCKED task whose questions only the human can answer (`block --for-human`, upstream
    # Liza's ADR-0172 AWAITING HUMAN): listed first everywhere, and the escalation webhook fires.
    awaiting_human: bool = since_v1(False)
    # Review worth trusting (gitliza/core/quorum.py, docs/review.md): labels (a rule of
    # config.quorum_rules may raise the task's quorum by them), the acceptance criteria an
    # approval gives evidence for, the approvals of the current review_commit so far, and the
    # root-cause gate (the note the planner or the human recorded, the review_cycles_total when
    # it was, and whether the task waits for one).
    labels: tuple[str, ...] = since_v1(())
    criteria: tuple[str, ...] = since_v1(())
    review_votes: tuple[ReviewVote, ...] = since_v1(())
    root_cause: str | None = since_v1(None)
    root_cause_at: int = since_v1(0)
    needs_root_cause: bool = since_v1(False)
    co_reviews: tuple[ReviewLease, ...] = since_v1(())
    # Globs of the paths the task will write (core/lockscope.py): held as a lock while the task
    # is in flight, so no two tasks in flight write the same paths.
    lock_scope: tuple[str, ...] = since_v1(())
    # Machine labels a claimer's supervisor must offer (`add --needs gpu`, core/presence/placement.py).
    needs: tuple[str, ...] = since_v1(())
    # The forge bridge (docs/forge.md): the task's pull request on the forge, and the commit whose
    # required checks (config forge_required_checks) all passed there.
    forge_pr: int | None = since_v1(None)
    checks_passed: str | None = since_v1(None)


@dataclass(frozen=True, slots=True)
class SigningKey:
    """A public key an actor signs its board commits with (core/keyring/signers.py): valid from
    `since`; `until` is when a `rekey` retired it (rotated or revoked). Commits made while it was
    valid stay valid."""

    key: str  # `ssh-ed25519 <base64>`, no comment
    since: str
    until: str | None = None


@dataclass(frozen=True, slots=True)
class Agent:
    """A registered agent (`agents:`): role, status, current task and lease."""

    id: str
    role: Role
    status: AgentState = AgentState.IDLE
    current_task: str | None = None
    lease_expires: str | None = None
    heartbeat: str | None = None
    terminal: str | None = None
    iterations_total: int = 0
    context_percent: int | None = None
    registered: str | None = None
    keys: tuple[SigningKey, ...] = since_v1(())  # oldest first; the current one has no `until`
    # Its supervisor waits for the model provider (core/agents/faults.py `Wait`, one line): a rate
    # limit, a spent quota, a refused login, an outage. None: not waiting.
    provider_wait: str | None = since_v1(None)


@dataclass(frozen=True, slots=True)
class Alignment:
    """The goal's alignment check (`goal.alignment`)."""

    timestamp: str
    event: str
    summary: str


@dataclass(frozen=True, slots=True)
class Goal:
    """The goal the board works towards (`goal:`)."""

    id: str
    description: str
    created: str
    status: GoalStatus = GoalStatus.IN_PROGRESS
    alignment_history: tuple[Alignment, ...] = ()
    spec_ref: str | None = None  # the goal's spec (liza-init.sh's `spec_ref`); None: the default


@dataclass(frozen=True, slots=True)
class Config:
    """The board's settings (`config:`), seeded with the spec's defaults."""

    max_coder_iterations: int = 10
    max_review_cycles: int = 5
    heartbeat_interval: int = 60
    lease_duration: int = 300
    coder_poll_interval: int = 30
    coder_max_wait: int = 300
    planner_poll_interval: int = since_v1(60)  # written by liza-init.sh; kept for the seed's boards
    reviewer_poll_interval: int = since_v1(30)
    planner_max_wait: int = since_v1(600)
    reviewer_max_wait: int = since_v1(1800)
    restart_delay: int = since_v1(2)  # after an agent's graceful exit (42)
    crash_delay: int = since_v1(5)  # after a crash; doubled per repeated crash up to crash_delay_max
    crash_delay_max: int = since_v1(300)
    # Supervisor limits (core/agents/runs.py): no-progress runs in a row before the supervisor
    # gives the work up, and agent launches per supervisor in any sliding minute.
    max_no_progress_runs: int = since_v1(5)
    max_launches_per_minute: int = since_v1(20)
    # Approved tasks merged per integration test (docs/locks.md "Batches"): 1 tests each merge.
    merge_batch: int = since_v1(1)
    integration_branch: str = "integration"
    escalation_webhook: str | None = None
    # The integration branch's tip when the board was made (recorded by `init`): the repository's
    # own history before the board, which no task's review covers yet is the integration branch's
    # legitimate base (a first push to an empty remote carries it; gitliza/services/verify/
    # approvals.py). None on boards made before it was recorded.
    integration_base: str | None = None
    # Watcher thresholds in seconds (core/reports/alarms.py THRESHOLDS); unset: the seed's values.
    alarm_lease_grace: int | None = None
    alarm_orphan_grace: int | None = None
    alarm_stall: int | None = None
    alarm_stale_draft: int | None = None
    alarm_checkpoint_stale: int | None = None
    alarm_checkpoint_stuck: int | None = None
    alarm_checkpoint_abandoned: int | None = None
    alarm_pause_stale: int | None = None
    alarm_pause_forgotten: int | None = None
    # A model provider refusing a supervisor longer than this (core/agents/faults.py) is an alarm.
    alarm_provider_down: int | None = since_v1(None)
    # Seconds a terminal task stays in the materialized `.liza/state.yaml` before it moves to
    # `.liza/archive/` (blackboard-schema.md: "terminal-state tasks older than threshold").
    archive_after: int = since_v1(86400)
    # Days an attic entry (refs/liza-attic/<task>/<oid>, docs/lifecycle.md "The attic") is kept
    # after it was made; `doctor --fix` and sync drop older ones, here and on the team remote.
    attic_keep: int = since_v1(30)
    # Seconds between the remote follower's checks of the remote's board refs (one `ls-remote`,
    # a fetch only when they moved; gitliza/services/sync/follower.py), when a remote is set.
    follow_interval: int = since_v1(5)
    # Seconds between two snapshots of a running coder's worktree (refs/liza/wip/<task>/<agent>,
    # gitliza/services/wip.py), pushed with the renewals: a dead machine loses at most this.
    wip_snapshot_interval: int = since_v1(60)
    # Signed board commits (docs/enforcement.md): off | warn | required, set only by the human,
    # whose own keys are kept here (the human is not an agent entity); see core/keyring/signers.py.
    signatures: str = since_v1("off")
    human_keys: tuple[SigningKey, ...] = since_v1(())
    # Budgets (gitliza/core/agents/costs.py): tokens (input + output) per task and per goal, and US
    # dollars per goal as a decimal text ("12.50"); unset: no budget. `prices`: the user's price
    # table, USD per million tokens by model or CLI name ("MODEL=IN/OUT[/CACHED] ..."), for runs
    # whose CLI reports no cost. No built-in prices: they would go stale unnoticed.
    budget_tokens_per_task: int | None = since_v1(None)
    budget_tokens_per_goal: int | None = since_v1(None)
    budget_usd_per_goal: str | None = since_v1(None)
    prices: str | None = since_v1(None)
    # A team that sizes itself (core/agents/sizing.py): seconds a pool member (`team --max-coders`)
    # waits for work before it exits; unset: pool.POOL_IDLE_EXIT.
    pool_idle_exit: int | None = since_v1(None)
    # A model per role (core/agents/teammodels.py): "ROLE[.SLOT]=CLI[:MODEL] ..."; unset: the
    # team's --cli for every member.
    models: str | None = since_v1(None)
    # Review worth trusting (core/quorum.py, docs/review.md): approvals of one review commit a
    # task needs; `quorum_rules` raise it by label or lock scope ("label:security=2
    # scope:migrations/**=2"); `review_diversity` (off | cli | model) asks the approvals to come
    # from different agent CLIs or models; a task BLOCKs for a root-cause note after
    # `rca_after_rejections` rejections.
    review_quorum: int = since_v1(1)
    quorum_rules: str | None = since_v1(None)
    review_diversity: str = since_v1("off")
    rca_after_rejections: int = since_v1(4)
    # `team` and `watch`, which run as the human, seal the history when its newest seal is this
    # many commits below the tip (gitliza/services/autoseal.py); 0 (`off`): never by themselves.
    # Not None for off: a None is left out of the blob, and would read back as the default.
    seal_every: int = since_v1(1000)
    # The agent sandbox (gitliza/sandbox/, docs/security.md "Limits"): per agent, its processes
    # and threads, its memory (MB), its /tmp and /dev/shm (MB); unset: the defaults
    # (gitliza/sandbox/policy.py DEFAULT_LIMITS: on). `sandbox_secret_env`: names of variables
    # no agent gets (besides GITLIZA_WEB_TOKEN), separated by spaces or commas.
    sandbox_pids_max: int | None = since_v1(None)
    sandbox_memory_max_mb: int | None = since_v1(None)
    sandbox_tmp_max_mb: int | None = since_v1(None)
    sandbox_secret_env: str | None = since_v1(None)
    # `sandbox_host_ports`: this machine's loopback ports every agent reaches as its own in `on`
    # (a local model server's 11434; gitliza/sandbox/usernet.py), by spaces or commas.
    # `sandbox_checkout_max_mb` / `_files`: the most a tree checked out for a task may hold (the
    # task worktree, the integration test's scratch checkout, the main worktree following a merge,
    # checked before anything is written: core/treerules.py; a running coder's worktree:
    # sandbox/diskwatch.py); unset: 2048 MB and 200,000 files.
    sandbox_host_ports: str | None = since_v1(None)
    sandbox_checkout_max_mb: int | None = since_v1(None)
    sandbox_checkout_max_files: int | None = since_v1(None)
    # The forge bridge (gitliza/forge/, docs/forge.md), the human's keys: which forge mirrors
    # the tasks as pull requests (github), its repository (OWNER/NAME) and API base URL (unset:
    # the forge's public one), the names of the check runs or statuses an approved commit must
    # pass before it merges (by spaces or commas), whether the forge merges (on) or the board
    # (off), and how long an approved task waits for its checks before the FORGE alarm.
    forge: str | None = since_v1(None)
    forge_repo: str | None = since_v1(None)
    forge_api_url: str | None = since_v1(None)
    forge_required_checks: str | None = since_v1(None)
    forge_merge: str = since_v1("off")
    forge_checks_timeout: int = since_v1(3600)


@dataclass(frozen=True, slots=True)
class SprintScope:
    """The tasks a sprint planned and added (`sprint.scope`)."""

    planned: tuple[str, ...] = ()
    stretch: tuple[str, ...] = ()


@dataclass(frozen=True, slots=True)
class SprintTimeline:
    """When a sprint started, checkpointed and ended (`sprint.timeline`)."""

    started: str | None = None
    deadline: str | None = None
    checkpoint_at: str | None = None
    ended: str | None = None


@dataclass(frozen=True, slots=True)
class Metrics:
    """Derived from the tasks (see metrics.py), never stored: storing it would make every
    transition rewrite one more blob, and a stored copy could drift from the tasks."""

    tasks_done: int = 0
    tasks_in_progress: int = 0
    tasks_blocked: int = 0
    iterations_total: int = 0
    review_cycles_total: int = 0
    review_verdict_approvals: int = 0
    review_verdict_rejections: int = 0
    review_verdict_count: int = 0
    review_verdict_approval_rate_percent: int | None = None
    task_submitted_for_review_count: int = 0
    task_outcome_approval_rate_percent: int | None = None


@dataclass(frozen=True, slots=True)
class Sprint:
    """The current sprint (`sprint:`); its metrics are computed, never stored."""

    id: str
    goal_ref: str
    status: SprintStatus = SprintStatus.IN_PROGRESS
    scope: SprintScope = field(default_factory=SprintScope)
    timeline: SprintTimeline = field(default_factory=SprintTimeline)
    retrospective: str | None = None


@dataclass(frozen=True, slots=True)
class CBEntry:
    """One entry of the circuit breaker's history."""

    timestamp: str
    result: str
    pattern: str | None = None
    severity: str | None = None
    resolution: str | None = None  # set by the human when the trigger is resolved
    resolved_at: str | None = None


@dataclass(frozen=True, slots=True)
class CBTrigger:
    """circuit_breaker.current_trigger of the schema (circuit-breaker.md)."""

    timestamp: str
    pattern: str
    severity: str
    report_file: str | None = None


@dataclass(frozen=True, slots=True)
class CircuitBreaker:
    """The circuit breaker's state (`circuit_breaker:`)."""

    status: CBStatus = CBStatus.OK
    last_check: str | None = None
    current_trigger: CBTrigger | None = None
    history: tuple[CBEntry, ...] = ()


@dataclass(frozen=True, slots=True)
class Discovery:
    """Something found while working, outside the task (`discovered:`)."""

    id: str
    by: str
    description: str
    created: str
    during: str | None = None
    severity: Severity = Severity.MEDIUM
    urgency: Urgency = Urgency.DEFERRED
    recommendation: str | None = None
    converted_to_task: str | None = None


@dataclass(frozen=True, slots=True)
class Handoff:
    """A coder's notes for whoever takes the task over (`handoff:`)."""

    task: str
    agent: str
    timestamp: str
    summary: str
    next_action: str
    context_used: str | None = None
    approach: str | None = None
    blockers: str | None = None
    files_modified: tuple[str, ...] = ()
    next_steps: tuple[str, ...] = ()


@dataclass(frozen=True, slots=True)
class HumanNote:
    """A human's note to the team or one task (`human_notes:`)."""

    timestamp: str
    message: str
    for_task: str | None = None  # `for:` in the spec's YAML (a Python keyword)
    author: str | None = None


@dataclass(frozen=True, slots=True)
class SpecChange:
    """A recorded change of a spec (`spec_changes:`)."""

    timestamp: str
    spec: str
    change: str
    triggered_by: str | None = None


@dataclass(frozen=True, slots=True)
class Anomaly:
    """A recorded anomaly (`anomalies:`): kind, severity, details."""

    timestamp: str
    type: str
    reporter: str
    task: str | None = None
    details: tuple[tuple[str, str | int | bool], ...] = ()  # ordered, hashable mapping

    def detail(self) -> dict[str, str | int | bool]:
        return dict(self.details)


@dataclass(frozen=True, slots=True)
class Usage:
    """What one agent run consumed (`usage/`, append-only, one entry per run): recorded by the
    run's supervisor when the run ends (gitliza/team/usage.py). Tokens: `input` counts every
    input token, cached ones included; `cached` is the part of it read from a cache. Cost in
    millionths of a US dollar (exact sums); `cost_source` says who priced it: the CLI, the
    agent's own report, or the board's price table; None: unknown."""

    timestamp: str  # when the run ended
    agent: str
    role: str
    run: str  # the run's id: AGENT.GENERATION.N ($LIZA_RUN_ID in the agent's environment)
    goal: str
    cli: str
    duration: int  # seconds
    task: str | None = None
    model: str | None = None
    input_tokens: int = 0
    output_tokens: int = 0
    cached_tokens: int = 0
    cost_micro_usd: int | None = None
    cost_source: str | None = None  # cli | report | prices
    end: str | None = since_v1(None)  # why the run ended (core/agents/faults.py End); None: unknown


@dataclass(frozen=True, slots=True)
class UsageTotal:
    """The running total of a goal's or a task's runs (`usage_totals/`, key `goal.ID` or
    `task.ID`), kept by the `usage` op beside each entry, so that a budget check and `status`
    read one blob, not every run's."""

    scope: str  # goal.ID | task.ID
    runs: int = 0
    input_tokens: int = 0
    output_tokens: int = 0
    cached_tokens: int = 0
    cost_micro_usd: int = 0  # of the priced runs
    unpriced: int = 0  # runs without a cost
    duration: int = 0


@dataclass(frozen=True, slots=True)
class Control:
    """Board-wide run control: what the reference keeps as `.liza/PAUSE`, `.liza/ABORT` and
    `.liza/CHECKPOINT` files on one machine, recorded as ops so that it reaches every machine."""

    paused: bool = False
    pause_reason: str | None = None
    paused_by: str | None = None
    paused_at: str | None = None
    aborted: bool = False
    abort_reason: str | None = None
    aborted_by: str | None = None
    aborted_at: str | None = None
    checkpoint_reason: str | None = None  # the open checkpoint (sprint.status CHECKPOINT)
    checkpoint_trigger: str | None = None
    checkpoint_by: str | None = None
    resumed_by: str | None = None
    resumed_at: str | None = None
    resume_decision: str | None = None
    resume_note: str | None = None
    # Machines drained by the human (`git liza drain`, docs/multi-machine.md): their agents finish
    # what they hold and claim nothing new. A name not seen on the board yet may be drained.
    drained: tuple[str, ...] = since_v1(())


@dataclass(frozen=True, slots=True)
class Supervisor:
    """Who runs agent `agent`: the generation token of its live supervisor. A supervisor's ops
    carry its generation; once another supervisor took the id over, they are refused."""

    agent: str
    generation: int
    started: str
    expires: str | None = None  # None: ended cleanly, the id is free
    host: str | None = None
    pid: int | None = None
    # The process's start time on `host` (clock ticks since boot, /proc/PID/stat): a pid that
    # now names another process is a dead supervisor, not a live one.
    pid_start: int | None = None
    # A supervisor registered the agent (not the human): its clean end removes it, whichever
    # generation ends (one that ended holding a task left it registered for the next).
    registered: bool = since_v1(False)
    # The labels its machine offers (`agent --labels`, `team --labels`): a task whose `needs` they
    # do not cover is not this agent's to claim (core/presence/placement.py).
    labels: tuple[str, ...] = since_v1(())


Entity = (Task | Agent | Goal | Config | Sprint | CircuitBreaker | Discovery | Handoff | HumanNote
          | SpecChange | Anomaly | Control | Supervisor | Usage
          | UsageTotal)
