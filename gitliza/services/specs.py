"""The planner's spec gate (agent-runtime-reference.md "Task Definition Gates"): a task's
`spec_ref` (PATH or PATH#anchor) must name a file on the integration branch when the task becomes
claimable (`finalize`, `add --ready`, `edit` of an UNCLAIMED task's spec_ref).

It reads git, so it lives in the shell, not in the op: the op records nothing about it and replay
(verify, the server hook, sync) never re-checks it. A spec deleted or renamed later on the
integration branch must not make the history that finalized against it unverifiable, and a replay
on another machine must not depend on which commits of the integration branch it has."""
from __future__ import annotations

from typing import Any, Callable

import pygit2

from gitliza.core.board import Board
from gitliza.core.ops.base import Op
from gitliza.core.ids import check_spec_ref, spec_path
from gitliza.core.states import TaskState
from gitliza.errors import ValidationError
from gitliza.git import treepath


GATED_OPS = frozenset({"add", "add-tasks", "finalize", "edit"})


def gated(repo: pygit2.Repository,
          make_op: Callable[[Board, str], Op]) -> Callable[[Board, str], Op]:
    """`make_op` with the gate checked on the board each attempt sees. The command layer (the CLI
    and the MCP tools, which share it) writes through this; the bare library (`Liza.apply`) and
    replay do not gate: the op records nothing about the check."""
    def make(board: Board, now: str) -> Op:
        op = make_op(board, now)
        if op.NAME in GATED_OPS:
            gate(repo, board, op)
        return op
    return make


def gate(repo: pygit2.Repository, board: Board, op: Op) -> None:
    """`add --ready`, `finalize` of a DRAFT, and `edit` of an UNCLAIMED task's spec_ref make a
    task claimable: its spec must then exist on the integration branch."""
    if not board.initialized:
        return
    name = op.NAME
    if name == "add-tasks":  # each task of the file made ready, its error naming the task
        for new in getattr(op, "tasks", ()):
            if new.ready and new.spec_ref:
                try:
                    require_spec(repo, board.config.integration_branch, new.spec_ref, new.task)
                except ValidationError as e:
                    raise ValidationError(f"task {e.message}", hint=e.hint) from None
        return
    task_id: Any = getattr(op, "task", None)
    spec_ref: Any = None
    if name == "add" and getattr(op, "ready", False):
        spec_ref = getattr(op, "spec_ref", None)
    elif name in ("finalize", "edit") and isinstance(task_id, str):
        t = board.task(task_id)
        if t is None:
            return  # the op itself reports the missing task
        if name == "finalize" and t.status == TaskState.DRAFT:
            spec_ref = t.spec_ref
        elif name == "edit" and t.status == TaskState.UNCLAIMED:
            spec_ref = getattr(op, "spec_ref", None)
    if spec_ref:
        require_spec(repo, board.config.integration_branch, spec_ref, str(task_id))


def spec_problem(repo: pygit2.Repository, branch: str, spec_ref: str) -> str | None:
    """Why `spec_ref` does not name a file on `branch`, or None when it does."""
    try:
        check_spec_ref(spec_ref)
    except ValidationError as e:
        return str(e)
    path = spec_path(spec_ref)
    try:
        tip = repo.lookup_reference(f"refs/heads/{branch}").peel(pygit2.Commit)
    except (KeyError, ValueError, pygit2.GitError):
        return f"integration branch {branch!r} does not exist, so spec {path} cannot be checked"
    try:
        entry = treepath.entry(tip.tree, path)
    except KeyError:
        return f"spec_ref {spec_ref!r}: {path} does not exist on the integration branch {branch!r}"
    if entry.type_str != "blob":
        return f"spec_ref {spec_ref!r}: {path} on {branch!r} is a {entry.type_str}, not a file"
    if entry.filemode == pygit2.enums.FileMode.LINK:  # a blob, but agents would follow it
        return (f"spec_ref {spec_ref!r}: {path} on {branch!r} is a symbolic link, not a "
                "regular file")
    return None


def require_spec(repo: pygit2.Repository, branch: str, spec_ref: str | None, task: str) -> None:
    """Raise a one-line ValidationError (exit 1) when the gate fails. No spec_ref: the op's own
    definition gate reports it as missing."""
    if not spec_ref:
        return
    problem = spec_problem(repo, branch, spec_ref)
    if problem is not None:
        raise ValidationError(f"{task} cannot become claimable: {problem}",
                              hint=f"commit the spec to {branch} first, or fix the task's spec_ref "
                                   f"(`git liza edit {task} --spec-ref PATH`)")
