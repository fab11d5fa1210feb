"""Read commands: status, show, log, ready, validate. None of them writes anything."""
from __future__ import annotations

from typing import TYPE_CHECKING, Any

from gitliza.cli.commands import Env
from gitliza.cli.commands.statuslines import (control_lines, lock_waits,
                                             queue_line, ready_lines, show_votes, sprint_line,
                                             status_cell)
from gitliza.core import mergequeue
from gitliza.core.agents import costs
from gitliza.core.encoding import codec
from gitliza.core.reports import metrics
from gitliza.core.board import Board
from gitliza.core.reports.queries import notes_for
from gitliza.core.states import TERMINAL
from gitliza.errors import InconsistentState, NoBoard, ValidationError
from gitliza.services.views.data import (agent_logs, find_task, history_log, ready_tasks, show_data,
                                    status_data, task_row, tasks_in_order)

if TYPE_CHECKING:
    from gitliza.services.api import Liza


def _board(env: Env, at: str | None) -> tuple[Board, Any]:
    board: Board
    board, commit = env.liza().store.board(at)
    return board, commit


def status(env: Env, at: str | None) -> int:
    from gitliza.cli.gcpause import paused
    with paused():  # pygit2's import, a whole board decoded: objects that live, no garbage
        from gitliza.git import tablecache
        with tablecache.reading(env.liza().store):
            return _status(env, at)


def _status(env: Env, at: str | None) -> int:
    if env.json:
        env.out.json(status_data(env.liza(), at))
        return 0
    board, commit = _board(env, at)
    goal = board.goal
    live, archived, m = tasks_in_order(board)
    waits = lock_waits(board, live)  # the live tasks' (an ended goal's table adds archived ones)
    agents = list(board.agents())
    out = env.out
    out.line(f"goal {goal.id} [{goal.status}]: {goal.description}")
    out.line(f"state {str(commit.id)[:12] if commit else '-'}  integration branch "
             f"{board.config.integration_branch}  done {m.tasks_done}  in progress "
             f"{m.tasks_in_progress}  blocked {m.tasks_blocked}  archived {len(archived)}")
    out.line(sprint_line(board, m))
    warning = metrics.rubber_stamp_warning(m)
    if warning:
        out.line(warning)
    for line in control_lines(board):
        out.line(line)
    out.line(queue_line(board))
    out.line(mergequeue.figures_line(mergequeue.figures(board, env.liza().now())))
    spent = costs.goal_totals(board)
    if spent.runs:
        out.line(f"usage: {spent.line()}")
    over = costs.goal_over_budget(board)
    if over:
        out.line(f"BUDGET: {over}: no agent run starts until it is raised")
    from gitliza.core.quorumreach import shortfalls  # a quorum nobody can meet
    for _tid, line in shortfalls(board):
        out.line(line)
    if at is None and commit is not None and board.config.seal_every:
        from gitliza.services.autoseal import behind
        far = behind(env.liza().store.repo, commit.id, board.config.seal_every)
        if far is not None:
            out.line(f"seal: none in the last {far} commits (seal_every): a new clone replays "
                     "them all; `git liza seal`, or run `team`/`watch` where the human's key is "
                     "at hand (they seal by themselves)")
    if at is None and _has_view(env):
        from gitliza.services.views.viewstamp import view_edit
        edit = view_edit(env.liza().store)
        if edit is not None:
            out.line(f"WARNING: {edit.message()}")
    if goal.status != "IN_PROGRESS":  # an ended goal: its summary, and its tasks
        live = _ended_goal(env, board, live, archived)
    for t in live:
        if t.awaiting_human:
            out.line(f"AWAITING HUMAN: {t.id}: {' / '.join(t.blocked_questions)}  "
                     f"(`git liza unblock {t.id} --answer TEXT`)")
    out.table("tasks", ["task", "status", "pri", "assigned", "lease/review", "depends on"],
              [[t.id, "AWAITING HUMAN" if t.awaiting_human else status_cell(board, t),
                t.priority, t.assigned_to or "",
                t.review_lease_expires or t.lease_expires or "",
                ", ".join(t.depends_on + ((f"lock:{waits[t.id]}",) if t.id in waits else ()))]
               for t in live])
    # The tip only: a past state's supervisors cannot be judged now.
    now = env.liza().now()
    sups = {}
    if at is None:
        from gitliza.core.presence.supervision import of_agent
        sups = {a.id: of_agent(board, a, now) for a in agents}
    # A wait for a provider (core/agents/faults.py) is seldom on the board: its module is loaded then.
    waiting = [a for a in agents if a.provider_wait] if at is None else []
    if waiting:
        from gitliza.core.agents import faults
    out.table("agents", ["agent", "role", "status", "task", "lease", "supervisor"],
              [[a.id, a.role.value,
                faults.status_word(board, a, now) if a in waiting else a.status.value,
                a.current_task or "", a.lease_expires or "",
                sups[a.id].state.value if a.id in sups else ""]
               for a in agents])
    for sup in sups.values():
        note = sup.line(now)
        if note:
            out.line(note)
    for a in waiting:
        note = faults.wait_line(board, a, now)
        if note:
            out.line(note)
    if at is None:  # the machines behind the agents, when there is news
        from gitliza.core.presence.hosts import label_lines, status_line
        machines = status_line(board, now)
        if machines:
            out.line(machines)
        for line in label_lines(board, now):  # tasks no live machine's labels cover
            out.line(line)
    return 0


def _ended_goal(env: Env, board: Board, live: list[Any], archived: list[Any]) -> list[Any]:
    """The summary line of an ended goal, and the rows its task table shows: the goal's own
    tasks, archived ones included (the goal's end archives them; the table was empty)."""
    from gitliza.core.reports.queries import of_current_goal
    mine = live + sorted((t for t in archived if of_current_goal(board, t)),
                         key=lambda t: (t.priority, t.id))
    ends = [a for a in board.goal.alignment_history
            if a.event in ("goal_completed", "goal_aborted")]
    if ends:
        env.out.line(f"summary ({ends[-1].timestamp}): {ends[-1].summary}")
    return mine


def _has_view(env: Env) -> bool:
    """Whether this clone has a materialized view to compare (viewstamp.py is loaded only then:
    `status` imports what it runs)."""
    from gitliza.git.repository import LIZA_DIR, main_worktree
    root = main_worktree(env.liza().repo)
    return root is not None and (root / LIZA_DIR / "state.yaml").is_file()


def show(env: Env, task: str, at: str | None) -> int:
    if env.json:
        env.out.json(show_data(env.liza(), task, at))
        return 0
    board, _ = _board(env, at)
    t = find_task(board, task)
    data = codec.encode(t)
    notes = notes_for(board, t.id)
    out = env.out
    out.line(f"{t.id} [{t.status}] priority {t.priority}"
             + ("  (archived)" if t.status in TERMINAL else ""))
    for k, v in data.items():
        if k in ("id", "status", "priority", "history", "review_votes"):
            continue
        out.line(f"  {k}: {', '.join(map(str, v)) if isinstance(v, list) else v}")
    if t.review_votes or t.status.value == "READY_FOR_REVIEW" and board.config.review_quorum > 1:
        show_votes(out, board, t)
    out.line("  history:")
    for h in t.history:
        extra = " ".join(f"{k}={v}" for k, v in codec.encode(h).items() if k not in ("time", "event"))
        out.line(f"    {h.time}  {h.event}  {extra}".rstrip())
    if notes:
        out.line("  human notes (read before starting):")
        for n in notes:
            out.line(f"    {n.timestamp}  {n.author or 'human'}: {n.message}")
    handoff = board.get("handoff", t.id)
    if handoff is not None:
        pending = " (pending: not yet given to the next agent)" if t.handoff_pending else ""
        out.line(f"  handoff by {handoff.agent} at {handoff.timestamp}{pending}:")
        for k, v in codec.encode(handoff).items():
            if k not in ("task", "agent", "timestamp"):
                out.line(f"    {k}: {', '.join(map(str, v)) if isinstance(v, list) else v}")
    runs = list(costs.iter_runs(board, t.id))
    if runs:
        out.line(f"  usage ({costs.total(runs).line()}):")
        for u in runs:
            cost = costs.usd_text(u.cost_micro_usd) + (f" ({u.cost_source})" if u.cost_source
                                                       else "")
            out.line(f"    {u.timestamp}  {u.run}  {u.agent} ({u.role})  {u.cli}"
                     f"{'/' + u.model if u.model else ''}  in {u.input_tokens:,} out "
                     f"{u.output_tokens:,} cached {u.cached_tokens:,}  {cost}  {u.duration}s"
                     + (f"  ended: {u.end}" if u.end else ""))
    from gitliza.services.attic import entries
    kept = entries(env.liza().repo, t.id)
    if kept:
        out.line(f"  attic (work kept before a teardown: `git liza attic {t.id} --restore "
                 "COMMIT`):")
        for e in kept:
            out.line(f"    {e.oid[:12]}  {e.subject}")
    logs = agent_logs(env.liza(), t.id)
    if logs:
        out.line("  agent logs (this machine, oldest first):")
        for p in logs:
            out.line(f"    {p}")
    return 0


def log(env: Env, n: int | None, task: str | None, by: str | None, at: str | None,
        op: list[str] | None = None, since: str | None = None, until: str | None = None,
        all: bool = False) -> int:
    """The transitions, newest first, one line each: `STATE TIME ACTOR OP TASK FROM -> TO`
    (the summary where the op moves no task); bookkeeping (supervise, usage) and liveness only
    with --all (or --op naming it)."""
    from gitliza.core import clock
    if op:  # only then: loading every op module is most of a `log` start otherwise
        from gitliza.core.ops import OPS, load_all
        load_all()
        for name in op:
            if name not in OPS:
                raise ValidationError(f"--op {name!r} is not an op",
                                      hint="one of: " + ", ".join(sorted(OPS)))
    liza = env.liza()
    now = liza.now()
    lo = None if since is None else clock.bound(since, now, "--since")
    hi = None if until is None else clock.bound(until, now, "--until")
    entries = history_log(liza, n=n, task=task, by=by, at=at, ops=op or (), since=lo, until=hi,
                          liveness=all)
    if env.json:
        env.out.json(list(entries))
        return 0
    from gitliza.cli.output import page, pager_command
    pager = pager_command(_core_pager(liza))
    page((_log_line(e) for e in entries), pager)
    _say_boundary(env, liza, at)
    return 0


def _say_boundary(env: Env, liza: Liza, at: str | None) -> None:
    """A clone that joined at a seal holds the history from a boundary on: say where the walk
    stopped (only such a clone has git's shallow file, so the usual clone pays one stat)."""
    from gitliza.git.repository import common_dir
    repo = liza.store.repo
    if not (common_dir(repo) / "shallow").exists():
        return
    from gitliza.git.remotes import shallow
    commit = liza.store.resolve(at)
    line = shallow.note(repo, None if commit is None else commit.id)
    if line is not None:
        env.out.notice(line)


def _log_line(e: dict[str, Any]) -> str:
    if "error" in e:
        return f"{e['state'][:10]}  {e['error']}"
    moved = f"{e['from'] or '-'} -> {e['to']}" if e.get("to") else e["summary"]
    return (f"{e['state'][:10]}  {e['time']}  {e['actor']:<14} {e['op']:<13} "
            f"{e.get('task') or '-':<12} {moved}")


def _core_pager(liza: Liza) -> str | None:
    """core.pager from the repository's git config, looked up only on a terminal."""
    import sys
    if not sys.stdout.isatty():
        return None
    try:
        value = liza.store.repo.config["core.pager"]
        return None if value is None else str(value)
    except KeyError:
        return None


def ready(env: Env, at: str | None) -> int:
    liza = env.liza()
    kind, tasks = ready_tasks(liza, at)
    if env.json:
        env.out.json([task_row(t) for t in tasks])
        return 0
    if not tasks:  # a header alone says nothing: say where the tasks are
        from gitliza.core.reports.queries import why_nothing_ready
        board, _ = liza.store.board(at)
        if not board.initialized:
            raise NoBoard()
        env.out.line(why_nothing_ready(board, kind))
        for line in ready_lines(board, kind, liza.now(), liza.agent):
            env.out.line(line)
        return 0
    env.out.table(kind,
                  ["task", "status", "pri", "description"],
                  [[t.id, t.status.value, t.priority, t.description[:60]] for t in tasks])
    for line in ready_lines(liza.store.board(at)[0], kind, liza.now(), liza.agent):
        env.out.line(line)
    return 0


def validate(env: Env, at: str | None, file: str | None = None) -> int:
    """The live board's invariants (exit 4 when broken: the board is inconsistent), or with FILE a
    seed-schema state.yaml (exit 1 when it breaks the schema, as liza-validate.sh)."""
    if file is not None:
        if at is not None:
            raise ValidationError("validate FILE reads the file; --at reads a board: not both")
        return _validate_file(env, file)
    liza = env.liza()
    board, commit = liza.store.board(at)
    from gitliza.git.repository import main_worktree
    root = main_worktree(liza.store.repo)
    if commit is None:
        seed = None if root is None else root / ".liza" / "state.yaml"
        if seed is not None and seed.is_file():
            raise ValidationError(
                f"no board here ({liza.store.ref} does not exist); {seed} was not read",
                hint="`git liza validate .liza/state.yaml` checks the file against the schema")
        raise NoBoard(f"no board here ({liza.store.ref} does not exist)")
    exists = None if root is None else (lambda rel: (root / rel).is_dir())
    from gitliza.git.worktrees.listing import held_here
    repo = liza.store.repo

    def here(tid: str) -> bool:
        return held_here(repo, tid)
    from gitliza.core.invariants import check_board  # validate's, not every read command's
    found = check_board(board, liza.now(), exists, here)
    problems = [str(p) for p in found if not p.warning]
    elsewhere = [] if root is None else [
        t for t in board.tasks() if t.status.value == "CLAIMED" and t.worktree and not here(t.id)]
    if not env.json:
        for t in elsewhere:
            env.out.line(f"note: {t.id} is CLAIMED by {t.assigned_to} on another machine (no "
                         "branch or worktree of it in this clone): its worktree is not judged here")
    _judged(env, {"state": str(commit.id) if commit else None,
                  "elsewhere": [t.id for t in elsewhere]}, problems,
            [str(p) for p in found if p.warning])
    if problems:
        raise InconsistentState(f"{len(problems)} invariant violation(s); first: {problems[0]}")
    return 0


def _judged(env: Env, head: dict[str, Any], problems: list[str], warnings: list[str]) -> None:
    """validate's report, liza-validate.sh's lines: WARNING: ..., INVALID: ..., or VALID."""
    if env.json:
        env.out.json({**head, "valid": not problems, "violations": problems,
                      "warnings": warnings})
        return
    for w in warnings:
        env.out.line(f"WARNING: {w}")
    for p in problems:
        env.out.line(f"INVALID: {p}")
    if not problems:
        env.out.line("VALID")


def _validate_file(env: Env, file: str) -> int:
    """A seed-schema file, read with the strict reader of `git liza import`."""
    from gitliza.cli.commands import read_input_file
    from gitliza.interop.seed import read_state
    path, text = read_input_file(env, file)
    text = _with_archive(text, path)
    seed = read_state(text, path.name)  # ValidationError (exit 1) with the place in the file
    from gitliza.services.api import now_utc  # the clock only: FILE need not be in a repository
    from gitliza.interop import filechecks
    board = seed.board()
    from gitliza.core.invariants import check_board
    found = check_board(board, now_utc())
    problems = [str(p) for p in found if not p.warning] + filechecks.problems(
        board, _project_of(path, env.path))
    _judged(env, {"file": str(path)}, problems, [str(p) for p in found if p.warning])
    if problems:
        raise ValidationError(f"{file}: {len(problems)} schema violation(s); first: {problems[0]}")
    return 0


def _project_of(path: Any, cwd: Any) -> Any:
    """Where a file's spec_refs (paths in the repository) are resolved: the repository that holds
    the file, wherever the file sits in it; else <project>/.liza/state.yaml's project, as
    liza-validate.sh takes it; else the repository the command runs in."""
    from pathlib import Path

    import pygit2

    def workdir(start: Path) -> Path | None:
        found = pygit2.discover_repository(str(start))
        wd = None if found is None else pygit2.Repository(found).workdir
        return Path(wd) if wd else None
    folder = path.resolve().parent
    here = workdir(folder)
    if here is not None:
        return here
    if folder.name == ".liza":
        return folder.parent
    return workdir(cwd) or folder.parent


def _with_archive(text: str, path: Any) -> str:
    """A materialized state.yaml keeps live tasks only; the archived ones it may reference
    (depends_on, notes...) are in `archive/<id>.yaml` beside it. Read them in too, so that the file
    is judged as the board it shows. A plain seed file (no such directory) is read as it is."""
    archive = path.parent / "archive"
    files = sorted(archive.glob("*.yaml")) if archive.is_dir() else []
    if not files:
        return text
    import io

    from ruamel.yaml import YAML
    from ruamel.yaml.error import YAMLError
    yaml = YAML(typ="rt")
    try:
        doc = yaml.load(text)
        if not isinstance(doc, dict):
            return text
        tasks = doc.get("tasks") or []
        listed = {t.get("id") for t in tasks if isinstance(t, dict)}
        for f in files:
            if f.stem not in listed:  # a recent or referenced task is in state.yaml as well
                tasks.append(yaml.load(f.read_text(encoding="utf-8")))
        doc["tasks"] = tasks
    except (YAMLError, OSError, UnicodeDecodeError, AttributeError):
        return text  # the reader reports the file's own problem, with its line
    buf = io.StringIO()
    yaml.dump(doc, buf)
    return buf.getvalue()
