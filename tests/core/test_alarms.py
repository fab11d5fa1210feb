"""Each alarm of tooling.md's table, from a board driven into its condition by real ops."""
from __future__ import annotations

from typing import Any

from gitliza.core import clock

from gitliza.core.reports import alarms
from gitliza.core.reports.alarms import Facts, Level, evaluate, next_deadline, step
from gitliza.core.ops import ConfigSet, Discover, Submit
from gitliza.core.ops.base import replace
from gitliza.core.states import AgentState, TaskState
from tests.core.boards import C1, Runner, add_ready, board_in, claim, team, to_review, verdict

S = TaskState


def kinds(r: Runner, now: str, **facts: Any) -> dict[tuple[str, str], alarms.Alert]:
    return {a.key: a for a in evaluate(r.board, Facts(now=now, **facts))}


def test_a_fresh_board_has_no_alarm() -> None:
    r = team()
    add_ready(r)
    assert kinds(r, r.now(), last_change=r.now()) == {}


def test_lease_expired_after_its_grace_only() -> None:
    r = board_in(S.CLAIMED)
    lease = r.board.task("task-1").lease_expires
    assert ("LEASE_EXPIRED", "task-1") not in kinds(r, clock.plus(lease, 120))
    got = kinds(r, clock.plus(lease, 121))[("LEASE_EXPIRED", "task-1")]
    assert got.text == "LEASE EXPIRED: coder-1 on task-1" and got.level == Level.WARNING


def test_review_lease_expired() -> None:
    r = board_in(S.READY_FOR_REVIEW)
    from gitliza.core.ops import ClaimReview
    r.do(ClaimReview, "reviewer-1", task="task-1")
    lease = r.board.task("task-1").review_lease_expires
    got = kinds(r, clock.plus(lease, 200))[("REVIEW_LEASE_EXPIRED", "task-1")]
    assert got.text.startswith("REVIEW LEASE EXPIRED: reviewer-1 on task-1")


def test_blocked_names_the_reason() -> None:
    r = board_in(S.BLOCKED)
    assert kinds(r, r.now())[("BLOCKED", "task-1")].text == "BLOCKED: task-1 \u2014 spec gap"


def test_orphaned_rejected_waits_for_its_grace_and_spares_a_waiting_coder() -> None:
    r = board_in(S.REJECTED)
    rejected_at = r.now()
    # The coder waits for its re-claim: not orphaned.
    assert ("ORPHANED_REJECTED", "task-1") not in kinds(r, clock.plus(rejected_at, 600))
    # The coder moves on to other work: orphaned, after the grace.
    coder = r.board.agent("coder-1")
    r.board = r.board.with_changes({("agents", "coder-1"): replace(
        coder, status=AgentState.IDLE, current_task=None)})
    assert ("ORPHANED_REJECTED", "task-1") not in kinds(r, clock.plus(rejected_at, 30))
    got = kinds(r, clock.plus(rejected_at, 31))[("ORPHANED_REJECTED", "task-1")]
    assert got.level == Level.CRITICAL and "but agent is IDLE" in got.text


def test_reassigned_when_a_second_coder_claims() -> None:
    r = board_in(S.CLAIMED)
    lease = r.board.task("task-1").lease_expires
    r.minute += 10  # past the lease
    claim(r, "task-1", "coder-2")
    got = kinds(r, r.now())[("REASSIGNED", "task-1")]
    assert got.text == "REASSIGNED: task-1 \u2014 now coder-2 (was coder-1), hypothesis exhaustion risk"
    assert lease < r.now()


def reject_times(n: int, **add: Any) -> Runner:
    r = team()
    add_ready(r, **add)
    for i in range(n):
        to_review(r) if i == 0 else (claim(r), r.do(Submit, "coder-1", task="task-1", commit=C1))
        verdict(r, "reject")
    return r


def test_review_loop_at_the_cliff_and_approaching_before() -> None:
    r = reject_times(1, max_review_cycles=3)
    got = kinds(r, r.now())
    assert got[("APPROACHING_LIMIT", "task-1:review")].text == \
        "APPROACHING LIMIT: task-1 \u2014 review cycle 1/3"
    r = reject_times(3, max_review_cycles=3)
    got = kinds(r, r.now())
    assert got[("REVIEW_LOOP", "task-1")].text == "REVIEW LOOP: task-1 \u2014 3 cycles (at cliff)"
    assert ("APPROACHING_LIMIT", "task-1:review") not in got


def test_integration_failed() -> None:
    r = board_in(S.INTEGRATION_FAILED)
    assert kinds(r, r.now())[("INTEGRATION_FAILED", "task-1")].level == Level.CRITICAL


def test_hypothesis_exhaustion_and_its_warning() -> None:
    r = board_in(S.CLAIMED)
    t = r.board.task("task-1")
    r.board = r.board.with_changes({("tasks", "task-1"): replace(
        t, failed_by=("coder-2",), review_cycles_current=3)})
    got = kinds(r, r.now())
    assert "1 coder failed + 3 review cycles" in got[("APPROACHING_LIMIT", "task-1:failures")].text
    r.board = r.board.with_changes({("tasks", "task-1"): replace(
        t, failed_by=("coder-2", "coder-3"))})
    assert kinds(r, r.now())[("HYPOTHESIS_EXHAUSTION", "task-1")].text == \
        "HYPOTHESIS EXHAUSTION: task-1 \u2014 requires rescope"


def test_approaching_iteration_limit() -> None:
    r = team()
    add_ready(r, max_iterations=3)
    to_review(r)
    verdict(r, "reject")
    claim(r)
    assert kinds(r, r.now())[("APPROACHING_LIMIT", "task-1:iteration")].text == \
        "APPROACHING LIMIT: task-1 \u2014 iteration 2/3"


def test_stalled_counts_from_the_last_change_and_respects_the_threshold_on_the_board() -> None:
    r = board_in(S.UNCLAIMED)
    last = r.now()
    assert ("STALLED", "") not in kinds(r, clock.plus(last, 1800), last_change=last)
    assert kinds(r, clock.plus(last, 3700), last_change=last)[("STALLED", "")].text == \
        "STALLED: no progress for 1h 1m"
    r.do(ConfigSet, "human", key="alarm_stall", value="60")
    last = r.now()
    assert ("STALLED", "") in kinds(r, clock.plus(last, 61), last_change=last)
    # A paused team is not stalled.
    assert ("STALLED", "") not in kinds(r, clock.plus(last, 61), last_change=last,
                                        pause_since=last)


def test_stale_draft() -> None:
    r = board_in(S.DRAFT)
    created = r.board.task("task-1").created
    got = kinds(r, clock.plus(created, 1860))[("STALE_DRAFT", "task-1")]
    assert got.text == "STALE DRAFT: task-1 \u2014 created 31min ago, never finalized (Planner crash?)"


def test_immediate_discovery_until_converted() -> None:
    r = board_in(S.CLAIMED)
    r.do(Discover, "coder-1", id="disc-1", description="auth refresh needed", urgency="immediate",
         severity="critical")
    got = kinds(r, r.now())[("IMMEDIATE_DISCOVERY", "disc-1")]
    assert got.text == "IMMEDIATE DISCOVERY: disc-1 \u2014 auth refresh needed (Planner should wake)"
    d = r.board.get("discovered", "disc-1")
    r.board = r.board.with_changes({("discovered", "disc-1"): replace(d, converted_to_task="task-1")})
    assert ("IMMEDIATE_DISCOVERY", "disc-1") not in kinds(r, r.now())


def test_invalid_state_from_the_invariants_and_from_the_shell() -> None:
    r = board_in(S.CLAIMED)
    t = r.board.task("task-1")
    r.board = r.board.with_changes({("tasks", "task-1"): replace(t, worktree=None)})
    got = kinds(r, r.now())[("INVALID_STATE", "")]
    assert got.text == "INVALID STATE: task task-1: CLAIMED task must have worktree"
    assert kinds(team(), r.now(), invalid="state.yaml: not YAML")[("INVALID_STATE", "")].text == \
        "INVALID STATE: state.yaml: not YAML"


def test_checkpoint_stale_stuck_abandoned_escalate() -> None:
    r = board_in(S.UNCLAIMED)
    since = r.now()
    texts = [kinds(r, clock.plus(since, s), checkpoint_since=since).get(("CHECKPOINT", ""))
             for s in (1800, 1801, 7201, 28801)]
    assert texts[0] is None
    assert [a.stage for a in texts[1:]] == [1, 2, 3]  # type: ignore[union-attr]
    assert texts[1].text == "CHECKPOINT STALE: waiting for human for 30 minutes"  # type: ignore
    assert texts[2].text.startswith("CHECKPOINT STUCK")  # type: ignore[union-attr]
    assert texts[3].text == "CHECKPOINT ABANDONED?: no human response for 8 hours"  # type: ignore


def test_pause_stale_then_forgotten() -> None:
    r = board_in(S.UNCLAIMED)
    since = r.now()
    a = kinds(r, clock.plus(since, 1900), pause_since=since)[("PAUSE", "")]
    b = kinds(r, clock.plus(since, 7300), pause_since=since)[("PAUSE", "")]
    assert a.text == "STALE PAUSE: PAUSE file exists for 31min \u2014 forgotten?"
    assert b.text.startswith("PAUSE FORGOTTEN?") and b.level == Level.CRITICAL


def test_step_fires_once_escalates_and_resolves() -> None:
    r = board_in(S.UNCLAIMED)
    since = r.now()
    state: dict[Any, Any] = {}
    seen = []
    for s in (1801, 1900, 7201, 7300):
        state, reports = step(state, evaluate(r.board, Facts(now=clock.plus(since, s),
                                                             checkpoint_since=since)), "t")
        seen.append([x.event for x in reports])
    assert seen == [["fired"], [], ["escalated"], []]
    state, reports = step(state, [], "t")
    assert [x.event for x in reports] == ["resolved"] and state == {}
    assert reports[0].line().startswith("\u2705 RESOLVED: CHECKPOINT STUCK")


def test_next_deadline_is_the_earliest_pending_threshold() -> None:
    r = board_in(S.CLAIMED)
    lease = r.board.task("task-1").lease_expires
    last = r.now()
    facts = [Facts(now=last, last_change=last)]
    deadlines = []
    for _ in range(2):
        nd = next_deadline(r.board, facts[-1])
        assert nd is not None
        deadlines.append(nd)
        facts.append(Facts(now=nd, last_change=last))
    # The task lease alarm (120 s), the stall. An expired WORKING lease is no INVALID STATE (the
    # original's validator only warns of it: a crashed agent).
    assert deadlines == [clock.plus(lease, 121), clock.plus(last, 1801)]
    assert ("LEASE_EXPIRED", "task-1") in kinds(r, deadlines[0])
    assert ("INVALID_STATE", "") not in kinds(r, deadlines[0])


def test_escalation_file_text() -> None:
    r = board_in(S.CLAIMED)
    since = r.now()
    a = alarms._checkpoint_alert(since, alarms.THRESHOLDS, clock.plus(since, 7300))
    assert a is not None
    text = alarms.escalation_text(r.board, a, since, clock.plus(since, 8100))
    assert text.splitlines()[0] == f"CHECKPOINT_STUCK since {since} (2h 15m)"
    assert "Tasks waiting: 1 (task-1 CLAIMED)" in text



def test_gave_up_while_nothing_happened_to_the_task_since() -> None:
    """A supervisor that gave a task up (blocked it, recorded a retry_loop anomaly with its
    marker) raises GAVE_UP until the task moves on; a retry_loop anomaly an agent files itself
    is not a give-up."""
    from gitliza.core.ops import AnomalyOp, Unblock
    from gitliza.core.ops.work import Block
    r = board_in(S.CLAIMED)
    r.do(AnomalyOp, "coder-1", type="retry_loop", task="task-1",
         details=(("count", 2), ("error_pattern", "tests fail")))
    assert ("GAVE_UP", "task-1") not in kinds(r, r.now())
    r.do(Block, "coder-1", task="task-1", reason="supervisor gave up", questions=("why?",))
    r.do(AnomalyOp, "coder-1", type="retry_loop", task="task-1",
         details=(("count", 3), ("error_pattern", "3 agent runs in a row without progress"),
                  (alarms.GAVE_UP_DETAIL, "coder")))
    got = kinds(r, r.now())[("GAVE_UP", "task-1")]
    assert got.level == Level.CRITICAL
    assert got.text == ("GAVE UP: coder-1's supervisor on task-1 \u2014 3 agent runs in a row "
                        "without progress")
    r.do(Unblock, "planner-1", task="task-1")
    assert ("GAVE_UP", "task-1") not in kinds(r, r.now())


def test_a_supervisor_that_stopped_renewing_raises_supervisor_silent() -> None:
    from gitliza.core.ops.control import Supervise
    r = team()
    r.do(Supervise, "coder-1", host="vm", pid=27575)
    exp = r.board.get("supervisors", "coder-1").expires
    assert ("SUPERVISOR_SILENT", "coder-1") not in kinds(r, clock.plus(exp, 120))
    assert next_deadline(r.board, Facts(now=r.now())) == clock.plus(exp, 121)
    got = kinds(r, clock.plus(exp, 121))[("SUPERVISOR_SILENT", "coder-1")]
    assert got.level == Level.WARNING and got.text.startswith(
        "SUPERVISOR SILENT: coder-1's supervisor (generation 1, pid 27575 on vm) stopped "
        f"renewing its token at {exp}")
    # A token given back (a clean stop) or freed is silent no more.
    r.do(Supervise, "human", mode="free", agent="coder-1", replaces=1)
    assert ("SUPERVISOR_SILENT", "coder-1") not in kinds(r, clock.plus(exp, 500))
