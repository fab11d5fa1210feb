"""Board and planning commands (mutating; no worktree involved)."""
from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, Any, Sequence

from gitliza.cli.commands import Env, read_input_file
from gitliza.core.encoding import codec
from gitliza.core.board import Board
from gitliza.core.ops.base import Op
from gitliza.errors import NoBoard, ValidationError
from gitliza.git.store import Committed
from gitliza.services.transitions import do_discover, do_op, gated_by_specs, transition_data

if TYPE_CHECKING:
    from gitliza.services.api import Liza


def report(env: Env, done: Committed, extra: dict[str, Any] | None = None) -> int:
    """Print what a transition produced; return 0."""
    ev = done.outcome.event
    data = transition_data(done, extra)
    out = env.out
    out.result(data, f"{ev.summary}  [{done.commit[:12]}]")
    if not env.json:
        for n in done.outcome.notices:
            out.notice(n)
    return 0


def _do(env: Env, cls: type[Op], **args: Any) -> int:
    return report(env, env.liza().do(cls, **args))


def init(env: Env, goal: str, integration_branch: str | None, config: Path | None,
         deadline: str | None, spec: str | None = None, force: bool = False) -> int:
    from gitliza.core.ops.goal import Init, next_id
    from gitliza.core.states import HUMAN_ACTOR
    from gitliza.services.goalspec import (branch_warning, fast_forward, goal_spec,
                                           integration_catchup)

    pairs: dict[str, Any] = {}
    if config is not None:
        import tomllib
        try:
            data = tomllib.loads(Path(config).read_text())
        except (OSError, tomllib.TOMLDecodeError, UnicodeDecodeError) as e:
            raise ValidationError(f"cannot read config file {config}: {e}") from None
        data = data.get("config", data)  # accept a bare table or a [config] section
        if not isinstance(data, dict):
            raise ValidationError(f"{config}: expected a table of config values")
        pairs.update(data)
    if integration_branch is not None:
        pairs["integration_branch"] = integration_branch
    for k, v in pairs.items():
        if not isinstance(v, (str, int, bool)) and v is not None:
            raise ValidationError(f"config {k}: unsupported value {v!r}")
    liza = env.liza()
    if not force:
        _refuse_a_second_board(liza)
    cfg = tuple((k, v) for k, v in pairs.items() if v is not None)
    spec_ref, notices = goal_spec(liza.repo, spec)
    warning = branch_warning(liza.repo)

    catchup: list[tuple[str, str | None, str | None]] = []

    def make(board: Board, now: str) -> Op:
        if board.initialized:  # a new goal after the previous one ended (the op checks that)
            branch = str(pairs.get("integration_branch") or board.config.integration_branch)
            target, line = integration_catchup(liza.repo, branch, liza.agent == HUMAN_ACTOR)
            catchup[:] = [(branch, target, line)]
            base = (("integration_base", target),) if target else ()
            return Init(actor=liza.agent, time=now, goal=goal, deadline=deadline,
                        config=cfg + base, goal_id=next_id(board.goal.id, "goal"),
                        sprint_id=next_id(board.sprint.id, "sprint"), spec_ref=spec_ref)
        return Init(actor=liza.agent, time=now, goal=goal, deadline=deadline,
                    config=cfg + _base_pair(liza.repo, pairs), spec_ref=spec_ref)
    done = liza.apply(make)
    _after_init(liza, done.outcome.board)
    code = report(env, done)
    for branch, target, line in catchup:
        if target is not None and not fast_forward(liza.repo, branch, target):
            line = f"{branch} moved meanwhile: not fast-forwarded to {target[:12]}"
        if line:
            notices.append(line)
    for n in ([warning] if warning else []) + notices:
        env.out.notice(n)
    return code


def _refuse_a_second_board(liza: Liza) -> None:
    """A fresh clone of a repository whose remote holds a board has no refs/liza/state (git clone
    does not fetch it): `init` there would start a second, unrelated board, which the first sync
    then refuses. Refused unless --force; `git liza pull` is what was meant."""
    from gitliza.git.repository import repo_path
    from gitliza.services.sync.remote import remote_board
    found = remote_board(repo_path(liza.repo))
    if found is not None:
        remote, oid = found
        raise ValidationError(
            f"{remote} already holds a board (refs/liza/state at {oid[:12]}); nothing was changed",
            hint="`git liza pull` adopts it; `git liza init --force GOAL` starts a second, "
                 "unrelated board here")


def _base_pair(repo: Any, pairs: dict[str, Any]) -> tuple[tuple[str, Any], ...]:
    """The first board records the integration branch's base: the branch's tip if it exists, else
    HEAD's commit (where `_after_init` creates it). What was there before the board is the
    repository's own history, which a first push to an empty remote carries unreviewed."""
    if pairs.get("integration_base") is not None:
        return ()
    import pygit2

    from gitliza.core.model import Config
    branch = pairs.get("integration_branch") or Config().integration_branch
    ref = repo.references.get(f"refs/heads/{branch}")
    if ref is not None:
        return (("integration_base", str(ref.peel(pygit2.Commit).id)),)
    if repo.head_is_unborn:
        return ()
    return (("integration_base", str(repo.head.peel(pygit2.Commit).id)),)


def _after_init(liza: Liza, board: Board) -> None:
    """The integration branch exists from init on (created at the current HEAD if missing)."""
    from gitliza.services.lifecycle.integration import ensure_integration_branch
    ensure_integration_branch(liza, board.config.integration_branch)


def complete_goal(env: Env, summary: str | None) -> int:
    from gitliza.core.ops.goal import CompleteGoal

    return _do(env, CompleteGoal, summary=summary)


def abort_goal(env: Env, reason: str) -> int:
    from gitliza.core.ops.goal import AbortGoal

    return _do(env, AbortGoal, reason=reason)


def config(env: Env, key: str | None, value: str | None, at: str | None) -> int:
    from gitliza.core.ops.goal import ConfigSet

    if value is not None:
        if at is not None:
            raise ValidationError("--at reads a past board; it cannot be combined with setting")
        assert key is not None
        return _do(env, ConfigSet, key=key, value=value)
    board = env.liza().board(at)
    data = codec.encode(board.config)
    full = {f: getattr(board.config, f) for f in type(board.config).__dataclass_fields__}
    if key is not None:
        if key not in full:
            from gitliza.core.config import unknown_key
            raise unknown_key(key, list(full))
        env.out.result({key: full[key]}, "" if full[key] is None else str(full[key]))
        return 0
    env.out.result(data, "\n".join(f"{k} = {'' if v is None else v}" for k, v in full.items()))
    return 0


def add(env: Env, task: str | None, desc: str | None, spec_ref: str | None, done_when: str | None,
        scope: str | None, priority: int, depends_on: Sequence[str], ready: bool,
        max_iterations: int | None, max_review_cycles: int | None,
        lease_duration_override: int | None = None, from_file: str | None = None,
        budget_tokens: int | None = None, labels: Sequence[str] = (),
        lock_scope: Sequence[str] = (), needs: Sequence[str] = ()) -> int:
    from gitliza.core.ops.planning import Add
    from gitliza.core.quorum import criteria_of

    if from_file is not None:
        if task is not None or desc is not None or lock_scope or needs:
            raise ValidationError("add --from FILE takes its tasks from the file: no TASK or "
                                  "--desc (nor --lock-scope, --needs)")
        return add_from(env, from_file)
    if task is None or desc is None:
        raise ValidationError("add needs a TASK id and --desc TEXT",
                              hint="or `git liza add --from FILE` for a file of tasks")
    liza = env.liza()
    depends_on = split_ids(depends_on)

    def make(board: Board, now: str) -> Op:
        return Add(actor=liza.agent, time=now, task=task, description=desc, spec_ref=spec_ref,
                   done_when=done_when, scope=scope, priority=priority,
                   depends_on=tuple(depends_on), ready=ready, max_iterations=max_iterations,
                   max_review_cycles=max_review_cycles,
                   lease_duration_override=lease_duration_override,
                   budget_tokens=budget_tokens, labels=tuple(split_ids(labels)),
                   criteria=criteria_of(done_when), lock_scope=tuple(lock_scope),
                   needs=tuple(needs))
    return report(env, liza.apply(gated_by_specs(liza, make)))


def split_ids(values: Sequence[str]) -> list[str]:
    """`--depends-on a,b` and `--depends-on a --depends-on b` alike (ids hold no comma)."""
    return [v.strip() for value in values for v in value.split(",") if v.strip()]


def add_from(env: Env, file: str) -> int:
    """`add --from FILE`: every task of a YAML or Markdown file in one transition (all or none);
    an error names the file and the line of the task it concerns. FILE `-` reads stdin (YAML)."""
    import sys

    from gitliza.core.ops.planning import AddTasks
    from gitliza.errors import LizaError
    from gitliza.interop import taskfile
    if file == "-":
        text, name = sys.stdin.read(), "<stdin>"
    else:
        text, name = read_input_file(env, file)[1], file
    tasks = taskfile.read(text, name)
    liza = env.liza()

    def make(board: Board, now: str) -> Op:
        return AddTasks(actor=liza.agent, time=now, tasks=tasks.tasks)
    try:
        done = liza.apply(gated_by_specs(liza, make))
    except LizaError as e:
        e.message = tasks.place(e.message)
        raise
    return report(env, done, {"tasks": [t.task for t in tasks.tasks]})


def edit(env: Env, task: str, desc: str | None, spec_ref: str | None, done_when: str | None,
         scope: str | None, priority: int | None, depends_on: Sequence[str], no_depends: bool,
         max_iterations: int | None, max_review_cycles: int | None,
         lease_duration_override: int | None, budget_tokens: int | None = None,
         lock_scope: Sequence[str] = (), no_lock_scope: bool = False) -> int:
    from gitliza.core.ops.planning import Edit
    liza = env.liza()
    depends_on = split_ids(depends_on)

    def make(board: Board, now: str) -> Op:
        return Edit(actor=liza.agent, time=now, task=task, description=desc, spec_ref=spec_ref,
                    done_when=done_when, scope=scope, priority=priority,
                    depends_on=tuple(depends_on) or None, clear_depends_on=no_depends,
                    max_iterations=max_iterations, max_review_cycles=max_review_cycles,
                    lease_duration_override=lease_duration_override,
                    budget_tokens=budget_tokens, recount_criteria=done_when is not None,
                    lock_scope=tuple(lock_scope) or None, clear_lock_scope=no_lock_scope)
    return report(env, liza.apply(gated_by_specs(liza, make)))


def simple(env: Env, op: str, task: str, **args: Any) -> int:
    from gitliza.core.ops.planning import Finalize, Unblock
    from gitliza.core.ops.review import RootCause

    cls = {"finalize": Finalize, "unblock": Unblock, "root-cause": RootCause}[op]
    args = {k: v for k, v in args.items() if v is not None}
    return report(env, do_op(env.liza(), cls, task=task, **args))


def rescope(env: Env, task: str, into: Sequence[str], reason: str) -> int:
    from gitliza.core.ops.planning import Rescope

    return report(env, do_op(env.liza(), Rescope, task=task, into=tuple(into), reason=reason))


def reassign(env: Env, task: str, to: str) -> int:
    from gitliza.core.ops.work import Reassign

    return report(env, do_op(env.liza(), Reassign, task=task, to=to))


def abandon(env: Env, task: str, reason: str) -> int:
    from gitliza.core.ops.planning import Abandon

    return report(env, do_op(env.liza(), Abandon, task=task, reason=reason))


def block(env: Env, task: str, reason: str, questions: Sequence[str],
          attempted: Sequence[str], for_human: bool = False) -> int:
    from gitliza.core.ops.work import Block
    return _do(env, Block, task=task, reason=reason, questions=tuple(questions),
               attempted=tuple(attempted), for_human=for_human)


def heartbeat(env: Env, task: str | None = None) -> int:
    """A renewal off the audit chain (refs/liza/live/<agent>, services/liveness.py): no
    commit on refs/liza/state."""
    from gitliza.services import liveness
    r = liveness.renew(env.liza(), task=task)
    data = liveness.renewal_data(r)
    text = f"heartbeat {r.agent}" + (f" on {r.task} (lease until {r.lease_expires})"
                                     if r.task else "")
    env.out.result(data, f"{text}  [live {(r.commit or '')[:12]}]")
    return 0


def discover(env: Env, description: str, disc_id: str | None, during: str | None,
             severity: str, urgency: str, recommendation: str | None) -> int:
    return report(env, do_discover(env.liza(), disc_id, description=description, during=during,
                                   severity=severity, urgency=urgency,
                                   recommendation=recommendation))


def parse_details(items: Sequence[str]) -> tuple[tuple[str, str | int | bool], ...]:
    out: list[tuple[str, str | int | bool]] = []
    for item in items:
        key, sep, raw = item.partition("=")
        if not sep or not key.strip():
            raise ValidationError(f"--detail {item!r} is not KEY=VALUE")
        value: str | int | bool = raw
        if raw in ("true", "false"):
            value = raw == "true"
        elif raw.lstrip("-").isdigit():
            value = int(raw)
        out.append((key.strip(), value))
    return tuple(out)


def convert(env: Env, discovery: str, task: str) -> int:
    from gitliza.core.ops.journal import Convert
    return _do(env, Convert, discovery=discovery, task=task)


def anomaly(env: Env, type_: str, details: Sequence[str], task: str | None) -> int:
    from gitliza.core.ops.journal import AnomalyOp
    return report(env, do_op(env.liza(), AnomalyOp, type=type_, details=parse_details(details),
                             task=task))


def note(env: Env, message: str, for_task: str | None) -> int:
    from gitliza.core.ops.journal import Note
    return report(env, do_op(env.liza(), Note, message=message, for_task=for_task))


def spec_change(env: Env, spec: str, change: str, triggered_by: str | None) -> int:
    from gitliza.core.ops.journal import SpecChangeOp
    return report(env, do_op(env.liza(), SpecChangeOp, spec=spec, change=change,
                             triggered_by=triggered_by))


def handoff(env: Env, task: str, summary: str, next_action: str, context_used: str | None,
            approach: str | None, blockers: str | None, files: Sequence[str],
            next_steps: Sequence[str]) -> int:
    from gitliza.core.ops.work import HandoffOp
    return _do(env, HandoffOp, task=task, summary=summary, next_action=next_action,
               context_used=context_used, approach=approach, blockers=blockers,
               files_modified=tuple(files), next_steps=tuple(next_steps))


def sprint_scope(env: Env, planned: Sequence[str], stretch: Sequence[str]) -> int:
    from gitliza.core.ops.sprint import SprintScopeOp
    return _do(env, SprintScopeOp, planned=tuple(planned), stretch=tuple(stretch))


def upgrade(env: Env) -> int:
    """`git liza upgrade`: move the board to this gitliza's storage format (docs/upgrading.md),
    or say it is there already (exit 0, nothing written)."""
    from gitliza.core.encoding import versions
    from gitliza.core.ops.upgrade import Upgrade
    liza = env.liza()
    board = liza.board()
    if not board.initialized:
        raise NoBoard()
    have = board.format_version or versions.FORMAT_VERSION
    if have >= versions.FORMAT_VERSION:
        env.out.result({"upgraded": False, "format": have},
                       f"the board is in storage format {have} already: nothing to upgrade")
        return 0
    steps = versions.path(have)
    done = liza.do(Upgrade, source=have, target=versions.FORMAT_VERSION)
    code = report(env, done, {"upgraded": True, "format": versions.FORMAT_VERSION,
                              "migrations": [f"{m.source} -> {m.target}: {m.what}" for m in steps]})
    if not env.json:
        for m in steps:
            env.out.notice(f"format {m.target}: {m.what}")
    return code
