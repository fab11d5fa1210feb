"""`git liza agent ROLE`: the supervisor loop (the reference's `liza-agent.sh`, without polling).

    ABORT -> exit 0; PAUSE or CHECKPOINT -> wait;
    a reviewer merges what it approved; wait for work for this role (exit 0 after the role's max
    wait, or when the goal is over); a coder claims its task (worktree and all), a reviewer takes
    the review lease, a planner picks the wake trigger; build and save the prompt; run the agent
    with a heartbeat thread, its output in `.liza/agent-logs/`; then judge the run by the board
    (core/agents/runs.py): exit 0 with the work done -> more work; a run that leaves the work
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
SIGINT/SIGTERM stop the agent (SIGTERM to its process group, SIGKILL 1.5 s later), leave its
task to expire (its work stays in its worktree; a later claim keeps leftovers in the attic), give
the token back and exit 0, with one line. The signal is handled on a relay thread, never in the
main thread's middle (gitliza/team/stopping.py), and a stop that has not ended STOP_DEADLINE seconds
after the signal ends the process anyway (the agent's group killed, the token left to expire).
While the agent runs the main thread feeds a watchdog, and the lease keeper renews only while it
moves (gitliza/team/heartbeat.py).

This module is the loop (waiting, launching, judging a run, giving up, signals); its parts live
beside it: work.py finds and takes the work (a `Job`), sessions.py runs one agent session (its
prompt from briefing.py), heartbeat.py keeps the leases while an agent runs or a restart waits,
and generation.py holds the token.
"""
from __future__ import annotations

import functools
import os
import signal
import sys
import threading
import time
from dataclasses import dataclass
from typing import Any, Callable

from gitliza import agentcli
from gitliza.core.agents import sizing as pool, runs, wake
from gitliza.core.reports import alarms
from gitliza.core.board import Board
from gitliza.core.ids import check_agent_id_for_role
from gitliza.services.views.data import registered_role
from gitliza.core.ops.journal import AnomalyOp
from gitliza.core.ops.work import Block
from gitliza.core.states import HUMAN_ACTOR, Role
from gitliza.core.terminal import safe
from gitliza.core.agents.wake import Hold
from gitliza.errors import EXIT_VALIDATION, LeaseLost, LizaError, ValidationError
from gitliza.git import longlived
from gitliza.git.worktrees import tasktrees as worktrees
from gitliza.git.objects import odbfresh
from gitliza.git.refwatch import RefWatcher
from gitliza.services import leasewatch
from gitliza.services.sync import follower
from gitliza.services.api import Liza
from gitliza.services.wait import min_timeout, seconds_until
from gitliza.sandbox import treerun
from gitliza.sandbox.box import Sandbox, limits
from gitliza.sandbox.policy import SandboxMode
from gitliza.team import fallback, leftovers, orphans, runner, usage
from gitliza.team.generation import Generation, StandDown
from gitliza.team.heartbeat import Watchdog, lease_keeper, watchdog_tick
from gitliza.team.sessions import Sessions
from gitliza.team.stopping import StopSignal
from gitliza.team.work import Job, WorkFinder, max_wait


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
    permissions: str | None = None  # worktree (default) | bypass | own (gitliza/agentcli/launch.py)
    sandbox: SandboxMode = SandboxMode.ON  # the OS sandbox (gitliza/sandbox/), parsed by the CLI
    pool: bool = False  # a member of a self-sizing team: exits after pool_idle_exit idle seconds
    model: str | None = None  # the model the CLI runs (the board's `models`, via `team`)
    labels: tuple[str, ...] = ()  # what this machine offers a task's `needs` (core/presence/placement.py)


# Seconds from SIGINT/SIGTERM to the process's end at the latest: the agent's grace
# (runner.SIGNAL_GRACE), then the token given back; `git liza team` kills what is left at 4 s.
STOP_DEADLINE = 3.5


class Supervisor:
    def __init__(self, open_liza: Callable[[], Liza], opts: SupervisorOptions,
                 log: Callable[[str], None] | None = None,
                 stop_signal: StopSignal | None = None) -> None:
        self.open_liza = open_liza
        self.opts = opts
        self._log = log
        self.stopping = False
        self._wake = threading.Event()
        self._watcher: RefWatcher | None = None
        self._follower: follower.RemoteFollower | None = None
        # Installed by the caller as early as it can (a signal during start-up is kept for us).
        self._signals = stop_signal if stop_signal is not None else StopSignal()
        self.watchdog = Watchdog()
        role = wake.parse_role(opts.role)
        if role is None:
            raise ValidationError(f"role {opts.role!r} is not planner, coder or code-reviewer")
        self.role: Role = role
        self.liza = open_liza()
        self.agent = self.liza.agent
        if self.agent == HUMAN_ACTOR:
            raise ValidationError("the supervisor needs an agent id: --agent ID or LIZA_AGENT_ID")
        check_agent_id_for_role(self.agent, self.role.value, registered_role(self.liza, self.agent))
        # A wrong --cli or --permissions, or a missing agent executable, is an error now,
        # before the board changes.
        profiles = fallback.profiles(opts.cli, opts.model, opts.command)  # `--cli claude,codex`
        profile = profiles[0]
        permissions = agentcli.parse_permissions(opts.permissions)
        # The sandbox: bubblewrap checked now (exit 5 naming the fix), or off.
        box = Sandbox(opts.sandbox)
        self.token = Generation(self.agent)
        # The integration test of what this reviewer merges runs in a sandbox of its own too.
        self.work = WorkFinder(self.liza, self.role, self.log,
                               treerun.runner(box.mode, limits(self.liza.board())))
        self.sessions = Sessions(self.liza, open_liza, self.role, self.token, self.log,
                                 profile=profile, permissions=permissions, command=opts.command,
                                 interactive=opts.interactive, mcp=opts.mcp,
                                 resume_task=opts.resume_task, sandbox=box,
                                 watchdog=self.watchdog)
        self.sessions.check_dirs()  # a tracked or linked .liza/ refuses us before any claim
        # A provider's refusal is waited out, shared by this machine's supervisors of the CLI.
        # A fallback list routes around it: the next run with the next CLI (team/fallback.py).
        self.provider = fallback.Fallback(self.liza, profiles, opts.command, self.log,
                                          lambda: self.stopping, self.role)

    # -- the loop -------------------------------------------------------------------------------
    def run(self) -> int:
        signals = self._signals.install()
        signals.deadline = STOP_DEADLINE
        signals.attach(self._on_signal, self._on_deadline)
        try:
            if self.stopping:
                return 0  # stopped before the token was taken: nothing to give back
            self._start()
            # One remote follower per clone (services/sync/follower.py): this is a candidate.
            self._follower = follower.start_for(self.liza, self.log)
            with RefWatcher(self.liza.repo.path) as w:
                self._watcher = w
                return self._loop()
        except (StandDown, LeaseLost) as e:
            self.log(f"standing down: {e}")
            return EXIT_VALIDATION
        finally:
            if self._follower is not None:
                self._follower.stop()
            self.token.end(self.liza)
            signals.close()

    def _loop(self) -> int:
        streak = runs.Streak()
        launches: list[float] = []  # monotonic times of the recent launches
        longlived.install()  # glibc's malloc, pygit2's lookups, libgit2's pack windows
        odbfresh.collect_dropped(first=True)
        while not self.stopping:
            self.watchdog.feed()
            odbfresh.collect_dropped()  # the handles of the last round's claim, session, merge
            job = self._next_job()
            if isinstance(job, int):
                return job
            if self.stopping:
                break  # a signal while the work was being taken: no agent starts
            cfg = self.liza.board().config
            wait = runs.launch_wait(launches, time.monotonic(), cfg.max_launches_per_minute)
            if wait > 0:
                self.log(f"{cfg.max_launches_per_minute} agent launches in the last minute "
                         f"(max_launches_per_minute); next launch in {wait:.0f}s")
                self._sleep_holding(job, wait)
                continue
            stop = usage.stop_for_budget(self.liza, self.token.gen, self.role, job.task, self.log)
            if stop is not None:  # the goal's budget: wait (Hold.BUDGET); a task's: other work
                if self.opts.once:
                    return EXIT_VALIDATION
                continue
            hold = functools.partial(self._sleep_holding, job)  # waits keep the work's lease
            self.provider.route(job, self.sessions)  # a fallback CLI while the first waits
            if self.provider.before(hold):
                break
            launches = [*launches[-cfg.max_launches_per_minute:], time.monotonic()]
            before = self._mark(self.liza.board(), job)
            code, lost = self.sessions.run(job)
            if self.stopping:
                break
            if self.provider.waited(self.sessions.ending, hold, self.opts.once):
                continue  # the provider's fault, nobody's: no streak, no give-up
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
                self.work.answered = job.signature
            if self.opts.once:  # one session: report how it ended, never "restarting"
                if self.role == Role.CODE_REVIEWER:  # its approval merged, as in the loop
                    self.work.merge_approved(self.liza.board())
                self.log(d.line.split("; ")[0] + "; exiting (--once)")
                did = d.outcome == runs.Outcome.DONE and not d.streak.no_progress
                return 0 if did else EXIT_VALIDATION
            self.log(d.line + self.provider.why(self.sessions.ending))
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
            ref = self.liza.repo.references.get(  # interned: pygit2 keeps every name it is given
                sys.intern(f"refs/heads/{worktrees.task_branch(job.task)}"))
            tip = str(ref.target) if ref is not None else None
        return runs.progress_mark(board, self.agent, self.role, job.task, tip)

    def _give_up(self, job: Job, runs_in_a_row: int, code: int) -> int | None:
        """The no-progress cap is reached: record why (a retry_loop anomaly) and let go of the
        work, so the watcher raises GAVE_UP and a human or the planner decides. A coder blocks
        its task (it counts as failed by this coder); a reviewer, which cannot hand a review
        back, records the anomaly and exits, leaving its review lease to expire for another
        reviewer; a planner waits until its triggers change. None: go on looking for work."""
        last = "exit 0" if code == 0 else f"exit {code}"
        said = self.sessions.ending.line if self.sessions.ending is not None else ""
        if said:  # the agent's own last words ("can't open file ..."): the why, for the human
            last += f": {said[:200]}"
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
            self.work.answered = job.signature
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
        said = told = ""  # the hold, and the unshared renewal, last said
        while not self.stopping:
            self.watchdog.feed()
            board, now = self.liza.board(), self.liza.now()
            self.token.check(board)
            if wake.goal_over(board):
                self.log(f"goal {board.goal.status}; exiting")
                return 0
            held = wake.hold(board, w.flags())
            if held == Hold.ABORT:
                self.log("ABORT; exiting")
                return 0
            # Paused, or cut off from the remote (claim nothing another machine may claim).
            cut = follower.hold(self.liza, board) if held is None else None
            job: Job | int | None = None
            if held is not None or cut is not None:
                if said != (held or "cut off"):
                    self.log(f"{held or cut}: waiting")
                    said = held or "cut off"
                idle_since = time.monotonic()
            else:
                said = ""
                job = self.work.find(board, now)
            if job is not None:
                return job
            if self.work.pending is not None:  # a claim the remote has not acknowledged yet
                idle_since = time.monotonic()
            cfg = board.config
            most = max_wait(cfg, self.role)
            why = "max wait"
            # A pool member exits early only holding nothing: a coder waiting on its review
            # would leave a rejection with nobody to take it back (ORPHANED REJECTED).
            if self.opts.pool and pool.idle_exit(cfg) < most and \
                    pool.busy(board, [self.agent]) == 0:
                most, why = pool.idle_exit(cfg), "pool_idle_exit"
            left = most - (time.monotonic() - idle_since)
            if left <= 0:
                self.log(f"no work for {most}s ({why}); exiting")
                return 0
            # A lease expires for this clone on its own clock (services/leasewatch.py), which may
            # be later than the recorded expiry: wake up for that too.
            deadline = wake.next_deadline(board, now, [self.token.renew_at,
                                                       *leasewatch.deadlines(self.liza.repo, board,
                                                                             now)])
            w.wait(min_timeout(left, seconds_until(deadline, now),
                               cfg.follow_interval if cut is not None
                               or self.work.pending is not None else None))
            self.token.renew_if_due(self.liza)
            if self.token.unshared not in (None, told):
                self.log(f"token renewed here, not shared yet: {self.token.unshared}")
            told = self.token.unshared or ""
        return 0

    def _sleep_holding(self, job: Job, seconds: float) -> None:
        """The restart delay, with the task lease kept alive: a restarted agent resumes its task
        instead of the supervisor having to claim it again (a new iteration)."""
        # An ABORT on the board ends the wait at once (the loop then exits), not after it.
        hb = lease_keeper(self.liza, self.open_liza, self.token, self.role, job.task,
                          lambda _why: self._wake.set(), self.log, beat_now=True,
                          wake_on_abort=True, watchdog=self.watchdog).start()
        try:
            self._sleep(seconds)
        finally:
            hb.stop()

    # -- the generation token -------------------------------------------------------------------
    def _start(self) -> None:
        self.token.take(self.liza, self.role, self.opts.takeover, self.log, self.opts.labels)
        # Whatever an earlier generation of this id left running here (its supervisor was
        # killed, or we took over) must stop before an agent of ours works in the same places.
        orphans.stop_previous(self.sessions.liza_dir(), self.agent, self.token.gen, self.log)
        self.log(f"supervising {self.agent} ({self.role.value}), generation {self.token.gen}")
        if self.role == Role.CODER:
            leftovers.keep(self.liza, self.agent, self.log)

    # -- signals and sleeping -------------------------------------------------------------------
    def stop(self, why: str = "supervisor stopping", grace: float | None = None) -> None:
        """Stop the agent and the loop (the signal relay, tests, embedding code); any thread."""
        self.stopping = True
        self.sessions.stop(why, grace)
        self._wake.set()
        if self._watcher is not None:
            self._watcher.poke()

    def _on_signal(self, sig: signal.Signals) -> None:
        """On the relay thread (gitliza/team/stopping.py), once per process. The stop first: the
        line may not get out (a killed `git liza team` took our stdout along)."""
        self.stop(f"supervisor got {sig.name}", runner.SIGNAL_GRACE)
        self.log(f"{sig.name}: stopping the agent and exiting")

    def _on_deadline(self, sig: signal.Signals) -> None:
        """The stop did not end in time (the main loop is stuck): kill the agent's group and
        end the process; the token and the task are left to expire."""
        self.sessions.kill()
        self.log(f"{sig.name}: not stopped after {STOP_DEADLINE}s; killed the agent, exiting "
                 "(its lease and this supervisor's token expire)")
        os._exit(128 + int(sig))

    def _sleep(self, seconds: float) -> None:
        """Sleep (a restart delay, the launch limit) until `seconds` passed or a stop; the
        watchdog is fed meanwhile, since the lease keeper beats during this wait."""
        end = time.monotonic() + seconds
        tick = watchdog_tick(self.liza.board().config)
        while not self.stopping:
            left = end - time.monotonic()
            if left <= 0:
                break
            self.watchdog.feed()
            if self._wake.wait(min(left, tick)):
                break
        self._wake.clear()

    def log(self, text: str) -> None:
        if self._log is not None:
            self._log(text)
            return
        try:
            sys.stdout.write(f"[{self.agent}] {safe(text)}\n")  # board text (reasons) escaped
            sys.stdout.flush()
        except (OSError, ValueError):
            pass  # whoever read our output is gone (a killed team): the work goes on
