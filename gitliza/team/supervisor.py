"""`git liza agent ROLE`: the supervisor loop (the reference's `liza-agent.sh`, without polling).

    ABORT -> exit 0; PAUSE or CHECKPOINT -> wait;
    a reviewer merges what it approved; wait for work for this role (exit 0 after the role's max
    wait, or when the goal is over); a coder claims its task (worktree and all), a reviewer takes
    the review lease, a planner picks the wake trigger; build and save the prompt; run the agent
    with a heartbeat thread, its output in `.liza/agent-logs/`; then judge the run by the board
    (gitliza/core/runs.py): exit 0 with the work done -> more work; a run that leaves the work
    held and the board unmoved (whatever its exit code) is a no-progress run -> restart after a
    backoff, and after max_no_progress_runs in a row give the work up (block the task, record a
    retry_loop anomaly: the watcher's GAVE_UP alarm); 42 -> restart after restart_delay; a crash
    -> restart after a delay that doubles per crash in a row (capped). At most
    max_launches_per_minute launches in any minute.

Waiting blocks on the board ref and `.liza/` (RefWatcher) with a timer only for time-based events
(a lease that expires, the supervisor's own token renewal, the max wait).

One id, one supervisor: at start the supervisor takes a generation token on the board (`supervise`
op); every op it or its agent writes carries the generation, and once another supervisor took the
id over (`--takeover`, or after the token expired), those ops are refused and this supervisor stands
down (exit 1). The agent dies with its supervisor (parent-death signal), and a supervisor that
takes an id stops what the previous generation left running here first (gitliza/team/orphans.py).
SIGINT/SIGTERM stop the agent (SIGTERM to its process group, then SIGKILL), leave its
task to expire (its work stays in its worktree; a later claim keeps leftovers in the attic), give
the token back and exit 0.
"""
from __future__ import annotations

import os
import signal
import socket
import sys
import threading
import time
from dataclasses import dataclass
from pathlib import Path
from types import FrameType
from typing import IO, Any, Callable

from gitliza.services import lifecycle
from gitliza.services.api import AGENT_ENV, GEN_ENV, Liza
from gitliza.core import alarms, clock, prompts, queries, runs, wake
from gitliza.core.board import Board
from gitliza.core.ids import check_agent_id_for_role
from gitliza.core.model import HumanNote
from gitliza.core.ops.control import Supervise
from gitliza.core.ops.journal import AnomalyOp
from gitliza.core.ops.planning import CompleteGoal, Register
from gitliza.core.ops.work import Block, Heartbeat
from gitliza.core.states import HUMAN_ACTOR, Role, TaskState
from gitliza.core.wake import Hold, WakeTrigger
from gitliza.errors import EXIT_VALIDATION, LeaseLost, LizaError, ValidationError
from gitliza.git import worktrees
from gitliza.git.refwatch import RefWatcher
from gitliza.git.worktrees import LIZA_DIR
from gitliza.services import agentlog
from gitliza.team import orphans, profiles, runner
from gitliza.team.heartbeat import HeartbeatThread
from gitliza.services.wait import min_timeout, seconds_until

PROMPTS_DIR = agentlog.PROMPTS_DIR
S = TaskState


@dataclass(frozen=True)
class SupervisorOptions:
    role: str
    cli: str | None = None
    interactive: bool = False
    command: tuple[str, ...] = ()
    resume_task: str | None = None
    once: bool = False  # one agent session, then exit
    takeover: bool = False  # take the id from a supervisor whose token is still live
    mcp: bool = False  # give the agent `git liza mcp`, wired through its CLI's configuration
    permissions: str | None = None  # worktree (default) | bypass | own (gitliza/team/profiles.py)


@dataclass(frozen=True)
class Job:
    """One agent session to run."""

    task: str | None
    worktree: Path
    trigger: WakeTrigger | None = None
    review_commit: str | None = None
    resume: bool = False
    signature: tuple[Any, ...] = ()  # planner: the trigger set this session answers


class StandDown(Exception):
    """Another supervisor holds this agent id now."""


class Supervisor:
    def __init__(self, open_liza: Callable[[], Liza], opts: SupervisorOptions,
                 log: Callable[[str], None] | None = None) -> None:
        self.open_liza = open_liza
        self.opts = opts
        self._log = log
        self.stopping = False
        self._wake = threading.Event()
        self._proc: runner.AgentProcess | None = None
        self._watcher: RefWatcher | None = None
        self._prompts: Path | None = None
        self._token_lock = threading.Lock()
        self._renew_at = ""
        self._last_signature: tuple[Any, ...] = ()
        self.sessions = 0
        role = wake.parse_role(opts.role)
        if role is None:
            raise ValidationError(f"role {opts.role!r} is not planner, coder or code-reviewer")
        self.role: Role = role
        self.liza = open_liza()
        self.agent = self.liza.agent
        if self.agent == HUMAN_ACTOR:
            raise ValidationError("the supervisor needs an agent id: --agent ID or LIZA_AGENT_ID")
        check_agent_id_for_role(self.agent, self.role.value)
        # A wrong --cli or --permissions, or a missing agent executable, is an error now,
        # before the board changes.
        self.profile = profiles.PLAIN if opts.command else profiles.profile(opts.cli)
        self.permissions = profiles.parse_permissions(opts.permissions)
        runner.require(opts.command[0] if opts.command else self.profile.executable)
        self.gen = 0

    # -- the loop -------------------------------------------------------------------------------
    def run(self) -> int:
        self._start()
        restore = self._install_signals()
        try:
            with RefWatcher(self.liza.repo.path) as w:
                self._watcher = w
                return self._loop()
        except (StandDown, LeaseLost) as e:
            self.log(f"standing down: {e}")
            return EXIT_VALIDATION
        finally:
            restore()
            self._end_token()

    def _loop(self) -> int:
        streak = runs.Streak()
        launches: list[float] = []  # monotonic times of the recent launches
        while not self.stopping:
            job = self._next_job()
            if isinstance(job, int):
                return job
            cfg = self.liza.board().config
            wait = runs.launch_wait(launches, time.monotonic(), cfg.max_launches_per_minute)
            if wait > 0:
                self.log(f"{cfg.max_launches_per_minute} agent launches in the last minute "
                         f"(max_launches_per_minute); next launch in {wait:.0f}s")
                self._sleep_holding(job, wait)
                continue
            launches = [*launches[-cfg.max_launches_per_minute:], time.monotonic()]
            before = self._mark(self.liza.board(), job)
            code, lost = self._run_job(job)
            self.sessions += 1
            if self.stopping:
                break
            if lost is not None:
                # Not the agent's failure: its task went elsewhere. No backoff, no retry of the
                # same session: look for work afresh.
                self.log(f"agent stopped ({lost}); looking for other work")
                streak = runs.Streak()
                continue
            board = self.liza.board()
            held = self._holds(board, job, code)
            d = runs.decide(streak, code, held, self._mark(board, job) != before, board.config)
            streak = d.streak
            if d.outcome == runs.Outcome.DONE:
                self._last_signature = job.signature
            if self.opts.once:  # one session: report how it ended, never "restarting"
                self.log(d.line.split("; ")[0] + "; exiting (--once)")
                did = d.outcome == runs.Outcome.DONE and not d.streak.no_progress
                return 0 if did else EXIT_VALIDATION
            self.log(d.line)
            if d.give_up:
                streak = runs.Streak()
                end = self._give_up(job, d.streak.no_progress, code)
                if end is not None:
                    return end
            elif d.delay > 0:
                self._sleep_holding(job, d.delay)
        return 0

    def _holds(self, board: Board, job: Job, code: int) -> bool:
        """Whether the agent still has the work it was started for: a coder its claim, a
        reviewer its review lease, a planner the same triggers (unless it exited 0: then it has
        answered them, and runs again only when they change)."""
        if job.task is None:
            return code != 0 and tuple(wake.planner_triggers(board)) == job.signature
        return wake.still_holds(board, self.agent, job.task, self.role)

    def _mark(self, board: Board, job: Job) -> tuple[Any, ...]:
        tip = None
        if job.task is not None and self.role == Role.CODER:
            ref = self.liza.repo.references.get(f"refs/heads/{worktrees.task_branch(job.task)}")
            tip = str(ref.target) if ref is not None else None
        return runs.progress_mark(board, self.agent, self.role, job.task, tip)

    def _give_up(self, job: Job, runs_in_a_row: int, code: int) -> int | None:
        """The no-progress cap is reached: record why (a retry_loop anomaly) and let go of the
        work, so the watcher raises GAVE_UP and a human or the planner decides. A coder blocks
        its task (it counts as failed by this coder); a reviewer, which cannot hand a review
        back, records the anomaly and exits, leaving its review lease to expire for another
        reviewer; a planner waits until its triggers change. None: go on looking for work."""
        last = "exit 0" if code == 0 else f"exit {code}"
        pattern = f"{runs_in_a_row} agent runs in a row without board progress (last: {last})"
        if job.task is not None and self.role == Role.CODER:
            try:
                self.liza.do(Block, task=job.task,
                             reason=f"supervisor gave up: {pattern}; see the agent logs "
                                    f"(git liza show {job.task})",
                             questions=("Why does the agent make no progress on this task "
                                        "(permissions, credentials, an impossible task)?",))
            except LeaseLost:
                raise
            except LizaError as e:
                self.log(f"give up: block {job.task}: {e}")
        self._anomaly(job, runs_in_a_row, pattern)
        if self.role == Role.CODE_REVIEWER:
            self.log(f"giving up the review of {job.task}; exiting (its review lease expires)")
            return EXIT_VALIDATION
        if job.task is None:
            self._last_signature = job.signature
        return None

    def _anomaly(self, job: Job, count: int, pattern: str) -> None:
        try:
            self.liza.do(AnomalyOp, type="retry_loop", task=job.task,
                         details=(("count", count), ("error_pattern", pattern),
                                  (alarms.GAVE_UP_DETAIL, self.role.value)))
        except LeaseLost:
            raise
        except LizaError as e:
            self.log(f"give up: anomaly: {e}")

    def _next_job(self) -> Job | int:
        """Wait until there is work and take it (claim, review lease); or an exit code."""
        w = self._watcher
        assert w is not None
        idle_since = time.monotonic()
        said = ""
        while not self.stopping:
            board, now = self.liza.board(), self.liza.now()
            self._check_generation(board)
            if wake.goal_over(board):
                self.log(f"goal {board.goal.status}; exiting")
                return 0
            held = wake.hold(board, w.flags())
            if held == Hold.ABORT:
                self.log("ABORT; exiting")
                return 0
            if held is not None:
                if said != held:
                    self.log(f"{held}: waiting")
                    said = held
                idle_since = time.monotonic()
                job: Job | int | None = None
            else:
                said = ""
                job = self._find_work(board, now)
            if job is not None:
                return job
            cfg = board.config
            max_wait = {Role.PLANNER: cfg.planner_max_wait, Role.CODER: cfg.coder_max_wait,
                        Role.CODE_REVIEWER: cfg.reviewer_max_wait}[self.role]
            left = max_wait - (time.monotonic() - idle_since)
            if left <= 0:
                self.log(f"no work for {max_wait}s (max wait); exiting")
                return 0
            deadline = wake.next_deadline(board, now, [self._renew_at])
            w.wait(min_timeout(left, seconds_until(deadline, now)))
            self._renew_if_due(self.liza)
        return 0

    # -- finding work ---------------------------------------------------------------------------
    def _find_work(self, board: Board, now: str) -> Job | int | None:
        if self.role == Role.PLANNER:
            return self._planner_work(board)
        if self.role == Role.CODER:
            return self._coder_work(board, now)
        return self._reviewer_work(board, now)

    def _planner_work(self, board: Board) -> Job | int | None:
        if wake.all_terminal(board):
            return self._complete_goal(board)
        found = wake.planner_triggers(board)
        # The same unresolved triggers do not restart the planner in a loop: it runs again when
        # the set of triggers (or the tasks raising them) changes.
        signature = tuple(found)
        if not found or signature == self._last_signature:
            return None
        return Job(task=None, worktree=lifecycle.main_root(self.liza.repo), trigger=found[0][0],
                   signature=signature)

    def _complete_goal(self, board: Board) -> int:
        """The planner's supervisor marks the goal COMPLETED when every task is terminal (the
        reference's supervisor does the same)."""
        try:
            done = self.liza.do(CompleteGoal)
            self.log(f"every task is terminal: {done.outcome.event.summary}")
        except LeaseLost:
            raise
        except LizaError as e:  # another planner (or the human) completed it first
            self.log(f"complete-goal: {e}")
        return 0

    def _coder_work(self, board: Board, now: str) -> Job | None:
        held = wake.holder_of(board, self.agent)
        if held is not None and held.status == S.CLAIMED and held.assigned_to == self.agent \
                and held.lease_expires is not None and held.lease_expires > now:
            return Job(task=held.id, worktree=lifecycle.task_dir(self.liza.repo, held.id),
                       resume=True)
        if not wake.work_for(board, Role.CODER, self.agent, now):
            return None
        try:
            res = lifecycle.claim(self.liza)
        except LeaseLost:
            raise
        except LizaError as e:  # the task went to another coder first: wait for the next change
            self.log(f"claim: {e}")
            return None
        for n in res.notices:
            self.log(n)
        if res.status != S.CLAIMED or res.worktree is None:
            return None
        self.log(f"claimed {res.task} in {res.worktree}")
        return Job(task=res.task, worktree=res.worktree)

    def _reviewer_work(self, board: Board, now: str) -> Job | None:
        merged = False
        for t in wake.approved_by(board, self.agent):
            merged = True
            try:
                res = lifecycle.merge(self.liza, t.id)
                self.log(f"merged {t.id} into {res.branch} ({res.merge.kind})")
            except lifecycle.MergeFailed as e:
                self.log(f"merge of {t.id} failed (INTEGRATION_FAILED): {e}")
            except LeaseLost:
                raise
            except LizaError as e:
                self.log(f"merge of {t.id}: {e}")
        if merged:
            board, now = self.liza.board(), self.liza.now()
        held = wake.holder_of(board, self.agent)
        if held is not None and wake.still_holds(board, self.agent, held.id, self.role) and \
                held.review_lease_expires is not None and held.review_lease_expires > now:
            return Job(task=held.id, worktree=lifecycle.task_dir(self.liza.repo, held.id),
                       review_commit=held.review_commit, resume=True)
        if not wake.work_for(board, Role.CODE_REVIEWER, self.agent, now):
            return None
        try:
            done = lifecycle.claim_review(self.liza)
        except LeaseLost:
            raise
        except LizaError as e:
            self.log(f"claim-review: {e}")
            return None
        tid = done.committed.outcome.event.task
        rt = done.committed.outcome.board.task(tid) if tid else None
        if rt is None or done.worktree is None:
            return None
        self.log(f"reviewing {rt.id} at {str(rt.review_commit)[:12]}")
        return Job(task=rt.id, worktree=done.worktree, review_commit=rt.review_commit)

    # -- running the agent ----------------------------------------------------------------------
    def _run_job(self, job: Job) -> tuple[int, str | None]:
        """Run one agent session: its exit code, and why the supervisor stopped it (if so)."""
        board = self.liza.board()
        text = self.prompt(board, job)
        path = self._save_prompt(text)
        launch = self._launch(job, path, text)
        if self.opts.interactive:
            self.log(f"interactive: the prompt is saved at {path}; paste it into the session")
            sys.stdout.write(text)
            sys.stdout.flush()
        what = job.task or (job.trigger.value if job.trigger else "planning")
        log_file, out = self._open_log(job, launch.argv, launch.env)
        try:
            proc = self._proc = runner.AgentProcess.start(launch.argv, launch.env, job.worktree,
                                                          self.opts.interactive, launch.stdin,
                                                          output=out)
        finally:
            if out is not None:
                out.close()  # the agent holds its own copy of the descriptor
        orphans.record(self._liza_dir(), self.agent, self.gen, proc.pid, job.task)
        if self.stopping:  # a SIGINT/SIGTERM that came while the work was being claimed
            proc.stop("supervisor stopping")
        self.log(f"started agent (pid {proc.pid}) on {what}; prompt {path}")
        if log_file is not None:
            self.log(f"agent log: {log_file}")
        hb = self._heartbeat(job, lambda why: proc.stop(why)).start()
        try:
            code = proc.wait()
        finally:
            hb.stop()
            self._proc = None
            orphans.forget(self._liza_dir(), self.agent, self.gen)
        self._check_generation(self.liza.board())
        return code, proc.stopped_by

    def _open_log(self, job: Job, argv: list[str],
                  env: dict[str, str]) -> tuple[Path | None, IO[bytes] | None]:
        """The file for this run's stdout and stderr (not in an interactive session, which keeps
        the terminal), its header naming the CLI's own transcript where there is one."""
        if self.opts.interactive:
            return None, None
        d = self._liza_dir() / agentlog.LOGS_DIR
        d.mkdir(parents=True, exist_ok=True)
        agentlog.rotate(d, self.agent, ".log", agentlog.KEEP - 1)
        now = self.liza.now()
        path = agentlog.log_path(d, self.agent, job.task, now)
        where = agentlog.transcript(argv, env, job.worktree)
        header = (f"# {now} {self.agent} ({self.role.value}, generation {self.gen}) on "
                  f"{job.task or 'planning'} in {job.worktree}: {argv[0]}"
                  + (f"; transcript: {where}" if where else ""))
        return path, agentlog.open_log(path, header)

    def prompt(self, board: Board, job: Job) -> str:
        cfg = board.config
        boot = prompts.Bootstrap(role=self.role, agent=self.agent,
                                 project=str(lifecycle.main_root(self.liza.repo)),
                                 goal=board.goal.description,
                                 goal_spec=prompts.goal_spec(board.goal),
                                 integration_branch=cfg.integration_branch)
        text = prompts.base_prompt(boot)
        t = board.task(job.task) if job.task else None
        if self.role == Role.CODER and t is not None:
            handoff = board.get("handoff", t.id) if t.handoff_pending else None
            text += prompts.coder_section(t, str(job.worktree), self._notes(board, t.id), handoff)
            if handoff is not None:
                self._handoff_given(t.id)
        elif self.role == Role.CODE_REVIEWER and t is not None:
            text += prompts.reviewer_section(t, str(job.worktree), self._notes(board, t.id))
        elif self.role == Role.PLANNER:
            text += prompts.planner_section(job.trigger, wake.sprint_state(board),
                                            notes=self._notes(board, None))
        resume = self.opts.resume_task if self.sessions == 0 else None
        if resume or job.resume:
            text += prompts.resume_line(resume or job.task or "")
        return text

    def _handoff_given(self, task: str) -> None:
        """The prompt carries the task's pending handoff: a heartbeat that clears the flag (the
        lease keeper's heartbeats keep it, so it outlives the agent that wrote it)."""
        try:
            self.liza.do(Heartbeat, task=task, gen=self.gen)
        except LizaError as e:
            self.log(f"handoff of {task} stays pending: {e}")

    @staticmethod
    def _notes(board: Board, task: str | None) -> list[HumanNote]:
        if task is not None:
            return queries.notes_for(board, task)
        return [n for n in board.values("human_notes") if n.for_task is None]

    def _prompts_dir(self) -> Path:
        """`.liza/agent-prompts/` of the main worktree (made once): prompts and MCP configs,
        never in the task's worktree, where they would be committed."""
        if self._prompts is None:
            self._prompts = lifecycle.main_root(self.liza.repo) / LIZA_DIR / PROMPTS_DIR
            self._prompts.mkdir(parents=True, exist_ok=True)
        return self._prompts

    def _save_prompt(self, text: str) -> Path:
        d = self._prompts_dir()
        agentlog.rotate(d, self.agent, ".txt", agentlog.KEEP - 1)
        path = agentlog.prompt_path(d, self.agent, self.liza.now())
        path.write_text(text)
        return path

    def _launch(self, job: Job, prompt_file: Path, text: str) -> profiles.Launch:
        """The agent's argv, environment, standard input and per-run files (its CLI's MCP and
        permission configuration), written beside the prompts: never into the task's
        worktree, where they would be committed. The MCP server runs as this agent, role and
        supervisor generation (so its ops stand down with this supervisor)."""
        from gitliza.team import prepare
        main = lifecycle.main_root(self.liza.repo)
        mcp = None
        if self.opts.mcp:
            from gitliza.access import mcp_config
            mcp = mcp_config.server(main, self.agent, prompts.ROLE_WORDS[self.role], gen=self.gen)
        launch = prepare.launch(self.profile, self.permissions, cwd=job.worktree, main=main,
                                run_dir=self._prompts_dir(), agent=self.agent,
                                prompt_file=prompt_file, prompt=text,
                                env=self._env(job, prompt_file), mcp=mcp, role=self.role,
                                command=self.opts.command, interactive=self.opts.interactive)
        if launch.mcp_config is not None:
            launch.env["LIZA_MCP_CONFIG"] = str(launch.mcp_config)
        return launch

    def _liza_dir(self) -> Path:
        return self._prompts_dir().parent

    def _env(self, job: Job, prompt_file: Path) -> dict[str, str]:
        env = dict(os.environ)
        env.update({AGENT_ENV: self.agent, "LIZA_ROLE": prompts.ROLE_WORDS[self.role],
                    "LIZA_PROMPT_FILE": str(prompt_file), GEN_ENV: str(self.gen)})
        for k in ("LIZA_TASK_ID", "LIZA_WORKTREE", "LIZA_REVIEW_COMMIT", "LIZA_WAKE_TRIGGER"):
            env.pop(k, None)
        if job.task is not None:
            env["LIZA_TASK_ID"] = job.task
            env["LIZA_WORKTREE"] = str(job.worktree)
        if job.review_commit is not None:
            env["LIZA_REVIEW_COMMIT"] = job.review_commit
        if job.trigger is not None:
            env["LIZA_WAKE_TRIGGER"] = job.trigger.value
        return env

    def _sleep_holding(self, job: Job, seconds: float) -> None:
        """The restart delay, with the task lease kept alive: a restarted agent resumes its task
        instead of the supervisor having to claim it again (a new iteration)."""
        # An ABORT on the board ends the wait at once (the loop then exits), not after it.
        hb = self._heartbeat(job, lambda _why: self._wake.set(), beat_now=True,
                             wake_on_abort=True).start()
        try:
            self._sleep(seconds)
        finally:
            hb.stop()

    def _heartbeat(self, job: Job, on_lost: Callable[[str], None], *,
                   beat_now: bool = False, wake_on_abort: bool = False) -> HeartbeatThread:
        hb_liza = self.open_liza()  # its own repository handle: pygit2 objects stay per thread
        hb_liza.gen = self.gen
        task = job.task if self.role != Role.PLANNER else None

        def check() -> str | None:
            board = hb_liza.board()
            sup = board.get("supervisors", self.agent)
            if sup is None or sup.generation != self.gen:
                return "another supervisor took over this agent id"
            if wake_on_abort and wake.hold(board) == Hold.ABORT:
                return "ABORT"
            return wake.lost_reason(board, self.agent, task, self.role) if task else None

        def beat() -> str | None:
            try:
                why = check()
                if why is None and task is not None and \
                        wake.still_holds(hb_liza.board(), self.agent, task, self.role):
                    hb_liza.do(Heartbeat, task=task, keep_handoff=True)
                self._renew_if_due(hb_liza)
                return why
            except (LeaseLost, StandDown) as e:
                return str(e)
            except LizaError as e:  # a conflict or a git hiccup: try again at the next beat
                self.log(f"heartbeat: {e}")
                return None

        interval = float(self.liza.board().config.heartbeat_interval)
        return HeartbeatThread(self.liza.repo.path, interval, beat, check, on_lost,
                               beat_now=beat_now)

    # -- the generation token -------------------------------------------------------------------
    def _start(self) -> None:
        board = self.liza.board()
        if not board.initialized:
            raise ValidationError("no board here", hint="run `git liza init GOAL` first")
        me = board.agent(self.agent)
        if me is None:
            self.liza.do(Register, agent=self.agent, role=self.role.value)
        elif me.role != self.role:
            raise ValidationError(f"{self.agent} is registered as {me.role.value}, not "
                                  f"{self.role.value}")
        self.liza.gen = None
        done = self.liza.do(Supervise, mode="takeover" if self.opts.takeover else "start",
                            host=socket.gethostname(), pid=os.getpid())
        sup = done.outcome.board.get("supervisors", self.agent)
        assert sup is not None
        self.gen = sup.generation
        self.liza.gen = self.gen
        # Whatever an earlier generation of this id left running here (its supervisor was
        # killed, or we took over) must stop before an agent of ours works in the same places.
        orphans.stop_previous(self._liza_dir(), self.agent, self.gen, self.log)
        self._renew_at = clock.plus(done.outcome.event.time, board.config.lease_duration // 2)
        self.log(f"supervising {self.agent} ({self.role.value}), generation {self.gen}")

    def _renew_if_due(self, liza: Liza) -> None:
        with self._token_lock:
            now = liza.now()
            if now < self._renew_at:
                return
            try:
                done = liza.do(Supervise, mode="renew", gen=self.gen)
            except LeaseLost as e:
                raise StandDown(str(e)) from None
            except ValidationError as e:
                raise StandDown(str(e)) from None
            lease = done.outcome.board.config.lease_duration
            self._renew_at = clock.plus(now, max(1, lease // 2))

    def _check_generation(self, board: Board) -> None:
        sup = board.get("supervisors", self.agent)
        if sup is None or sup.generation != self.gen:
            raise StandDown(f"generation {self.gen} of {self.agent} was superseded")

    def _end_token(self) -> None:
        if not self.gen:
            return
        try:
            board = self.liza.board()
            sup = board.get("supervisors", self.agent)
            if sup is not None and sup.generation == self.gen:
                self.liza.do(Supervise, mode="end", gen=self.gen, unregister=True)
        except LizaError:
            pass  # the token then simply expires

    # -- signals and sleeping -------------------------------------------------------------------
    def stop(self, why: str = "supervisor stopping") -> None:
        """Stop the agent and the loop (signal handlers, tests, embedding code)."""
        self.stopping = True
        proc = self._proc
        if proc is not None:
            proc.stop(why)
        self._wake.set()
        if self._watcher is not None:
            self._watcher.poke()

    def _install_signals(self) -> Callable[[], None]:
        if threading.current_thread() is not threading.main_thread():
            return lambda: None

        def handler(signum: int, _frame: FrameType | None) -> None:
            self.log(f"{signal.Signals(signum).name}: stopping the agent and exiting")
            self.stop(f"supervisor got {signal.Signals(signum).name}")

        old = {s: signal.signal(s, handler) for s in (signal.SIGINT, signal.SIGTERM)}

        def restore() -> None:
            for s, h in old.items():
                signal.signal(s, h)
        return restore

    def _sleep(self, seconds: float) -> None:
        if seconds > 0:
            self._wake.wait(seconds)
            self._wake.clear()

    def log(self, text: str) -> None:
        if self._log is not None:
            self._log(text)
            return
        sys.stdout.write(f"[{self.agent}] {text}\n")
        sys.stdout.flush()
