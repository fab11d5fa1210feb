"""Applying an op the way the front ends do (the CLI's commands and the MCP tools), and what a
transition produced, as the data the CLI prints with --json and the MCP tools return."""
from __future__ import annotations

from typing import TYPE_CHECKING, Any, Callable

from gitliza.core.encoding import codec
from gitliza.core.board import Board
from gitliza.core.ops.base import Op
from gitliza.git.store import Committed

if TYPE_CHECKING:
    from gitliza.services.api import Liza

if TYPE_CHECKING:  # the lifecycle (worktrees, merges) is imported only by the ops that need it
    from gitliza.services.lifecycle.claim import ClaimResult
    from gitliza.services.lifecycle.common import Done
    from gitliza.services.lifecycle.merge import MergeResult


def transition_data(done: Committed, extra: dict[str, Any] | None = None) -> dict[str, Any]:
    """What a transition produced, as the JSON the CLI prints and the MCP tools return."""
    ev = done.outcome.event
    data: dict[str, Any] = {
        "op": ev.op, "actor": ev.actor, "task": ev.task,
        "from": ev.from_state.value if ev.from_state else None,
        "to": ev.to_state.value if ev.to_state else None,
        "time": ev.time, "state": done.commit, "parent": done.parent,
        "attempts": done.attempts, "notices": list(done.outcome.notices),
    }
    if ev.task:
        t = done.outcome.board.task(ev.task)
        if t is not None:
            data["task_record"] = codec.encode(t)
    data.update(extra or {})
    return data


# Ops after which a task may no longer own a worktree: lifecycle drops it (and its branch).
RELEASING_OPS = frozenset({"finalize", "unblock", "rescope", "abandon"})
MOVING_OPS = frozenset({"reassign"})  # they move a claim and leave its worktree in place
# Args every op of the command layer (the CLI and the MCP tools) records, whose default is the
# format-1 behaviour that replay of older boards needs: journal entries keep append order
# (core/ops/journal.py _append); an agent's heartbeat leaves a pending handoff pending.
FIXED_ARGS: dict[str, dict[str, Any]] = {
    "anomaly": {"ordered": True}, "note": {"ordered": True}, "spec-change": {"ordered": True},
    "heartbeat": {"keep_handoff": True}}


def do_op(liza: Liza, cls: type[Op], **args: Any) -> Committed:
    """`liza.do(cls, **args)`, then the worktree clean-up a releasing op needs (the CLI and the
    MCP server both go through here)."""
    args = {**args, **FIXED_ARGS.get(cls.NAME, {})}
    if cls.NAME in MOVING_OPS and isinstance(args.get("task"), str):
        # The holder's worktree stays where it is for the next coder, its state in the attic
        # first (one safety net before every teardown).
        from gitliza.services.lifecycle.cleanup import keep_state
        from gitliza.services.lifecycle.common import warn
        for note in keep_state(liza, args["task"], f"{cls.NAME} moved the claim"):
            warn(note)
    done: Committed = liza.apply(
        gated_by_specs(liza, lambda _board, now: cls(actor=liza.agent, time=now, **args)))
    if cls.NAME in RELEASING_OPS:
        # Imported here: only a releasing op needs the worktree machinery.
        from gitliza.services.lifecycle.cleanup import cleanup_after
        cleanup_after(liza, done)
    return done


def gated_by_specs(liza: Liza, make: Callable[[Board, str], Op]) -> Callable[[Board, str], Op]:
    from gitliza.services.specs import gated
    return gated(liza.repo, make)


def do_discover(liza: Liza, disc_id: str | None, **fields: Any) -> Committed:
    """Record a discovery; without an id it gets the next free `disc-N` (chosen on every CAS
    attempt, so two agents discovering at once do not collide)."""
    from gitliza.core.ops.journal import Discover

    def make(board: Board, now: str) -> Op:
        ident = disc_id or f"disc-{len(board.keys('discovered')) + 1}"
        return Discover(actor=liza.agent, time=now, id=ident, **fields)
    done: Committed = liza.apply(make)
    return done


# -- what each lifecycle command returns (printed by the CLI with --json, returned by the MCP tools)
# -- what each command returns (printed by the CLI with --json, returned by the MCP tools) -------
def claim_extra(res: ClaimResult) -> dict[str, Any]:
    return {"task": res.task, "status": res.status.value,
            "worktree": str(res.worktree) if res.worktree else None, "branch": res.branch,
            "base_commit": res.base_commit, "reused": res.reused, "notices": list(res.notices)}


def release_extra(done: Done) -> dict[str, Any]:
    return {"notices": list(done.notices)}


def submit_extra(done: Done) -> dict[str, Any]:
    return {"worktree": str(done.worktree)}


def claim_review_extra(done: Done) -> dict[str, Any]:
    tid = done.committed.outcome.event.task
    t = done.committed.outcome.board.task(tid) if tid else None
    return {"worktree": str(done.worktree) if done.worktree else None,
            "review_commit": t.review_commit if t is not None else None}


def merge_extra(res: MergeResult) -> dict[str, Any]:
    m = res.merge
    return {"result": "merged", "branch": res.branch, "kind": m.kind, "old": str(m.old),
            "merge_commit": str(m.new), "integration_tested": m.integration_tested,
            "notices": list(res.notices)}


def claim_refusal(res: ClaimResult) -> str | None:
    """The board recorded the exhaustion (a legitimate transition), but the agent holds no task:
    `git liza claim T && start-coder` must not start a coder on it, so this is a failure."""
    if res.status.value == "CLAIMED":
        return None
    return (f"{res.task} was not claimed: it moved to {res.status.value} (see the notices); "
            "the planner decides what happens to it next")
