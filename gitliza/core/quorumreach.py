"""A review quorum the registered reviewers cannot meet (issue 49): a task under review needing
more approvals than the code reviewers who may still give one (registered, not its coder, not
already approving this commit) would wait for ever at 1/2. Said as a warning when `team` starts,
and as the QUORUM_UNREACHABLE alarm of `watch`, `status`, `top` and the web board, naming the
config that fixes it (Gerrit's "needs Code-Review +2"). Pure."""
from __future__ import annotations

from gitliza.core.board import Board
from gitliza.core.model import Config, Task
from gitliza.core.quorum import parse_rules, required, votes_of
from gitliza.core.states import Role, TaskState


def _fix(config: Config, task: Task | None, reviewers: int) -> str:
    """The config that fixes it: fewer approvals (the rule that raised it, or the quorum), or
    more reviewers."""
    need = config.review_quorum if task is None else required(config, task)
    by_rule = task is not None and need > config.review_quorum and parse_rules(config.quorum_rules)
    lower = ("`git liza config quorum_rules ...` (its rule asks for "
             f"{need})" if by_rule else f"`git liza config review_quorum {max(1, reviewers)}`")
    return f"fix: {lower}, or run {need} code reviewers (`git liza team --reviewers {need}`)"


def team_warning(config: Config, reviewers: int) -> str | None:
    """The line `team` prints at start when the reviewers it runs cannot meet the quorum."""
    if config.review_quorum < 2 or reviewers >= config.review_quorum:
        return None  # quorum 1 with no reviewer here: reviewers may run on another machine
    return (f"team: review_quorum {config.review_quorum} but {reviewers} code reviewer(s): no "
            f"task can be approved; {_fix(config, None, reviewers)}")


def shortfalls(board: Board) -> list[tuple[str, str]]:
    """(task id, line) for each task under review whose quorum the registered code reviewers
    cannot meet; nothing while no reviewer is registered (no team runs: nothing waits yet)."""
    reviewers = sorted(a.id for a in board.agents() if a.role == Role.CODE_REVIEWER)
    if not reviewers:
        return []
    out = []
    for t in sorted(board.tasks(), key=lambda t: t.id):
        if t.status != TaskState.READY_FOR_REVIEW:
            continue
        need = required(board.config, t)
        voted = {v.agent for v in votes_of(t)}
        able = [r for r in reviewers if r != t.assigned_to and r not in voted]
        if len(voted) + len(able) < need:
            out.append((t.id, f"QUORUM UNREACHABLE: {t.id} needs {need} approvals, has "
                        f"{len(voted)}, and {len(able)} registered code reviewer(s) may give "
                        f"one ({', '.join(able) or 'none'}); "
                        f"{_fix(board.config, t, len(voted) + len(able))}"))
    return out
