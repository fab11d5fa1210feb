"""A review quorum the registered reviewers cannot meet: a task under review needing
more approvals than the code reviewers who may still give one (registered, not its coder, not
already approving this commit) would wait for ever at 1/2. Said as a warning when `team` starts,
and as the QUORUM_UNREACHABLE alarm of `watch`, `status`, `top` and the web board, naming the
config that fixes it (Gerrit's "needs Code-Review +2"). Pure."""
from __future__ import annotations

from typing import Sequence

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


def team_warning(config: Config, reviewers: int,
                 kinds: Sequence[str | None] = ()) -> str | None:
    """The line `team` prints at start when the reviewers it runs cannot meet the quorum: too
    few of them, or (`kinds`: each reviewer's CLI or model, as `review_diversity` compares them;
    None where unknown) too few different ones for `review_diversity`."""
    if config.review_quorum < 2:
        return None
    if reviewers < config.review_quorum:  # quorum 1 with none here: they may run elsewhere
        return (f"team: review_quorum {config.review_quorum} but {reviewers} code reviewer(s): "
                f"no task can be approved; {_fix(config, None, reviewers)}")
    return _diversity_warning(config, kinds)


def _diversity_warning(config: Config, kinds: Sequence[str | None]) -> str | None:
    """Under `review_diversity cli|model` the approvals of one commit need as many different
    CLIs (models) as the quorum: reviewers that all run one of them can approve nothing past the
    first vote. Said only when every reviewer's kind is known (a model the CLI picks itself is
    known only once it reports it)."""
    what, need = config.review_diversity, config.review_quorum
    if what == "off" or not kinds or any(k is None for k in kinds):
        return None
    distinct = sorted({k for k in kinds if k is not None})
    if len(distinct) >= need:
        return None
    return (f"team: review_diversity {what} asks for {need} different {what}s among a commit's "
            f"approvals, but the {len(kinds)} code reviewer(s) run {', '.join(distinct)}: no task "
            f"can be approved; fix: a different {what} per reviewer slot (`git liza config models "
            f"\"reviewer=... reviewer.2=...\"`), or `git liza config review_diversity off`")


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
