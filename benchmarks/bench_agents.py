"""Many agents: the most agents one board serves, measured with an open-loop load of agent traffic.

    python benchmarks/bench_agents.py [--quick]     # prints; `benchmarks/run.py --only agents`
                                                    # also writes docs/performance.md

The traffic of N supervisors at the seed's defaults (Config: heartbeat_interval 60 s,
lease_duration 300 s), per agent of a team of coders and reviewers 2:1:

- a heartbeat every heartbeat_interval (the supervisor's heartbeat thread, while its agent works);
- a supervisor token renewal every lease_duration / 2 (team/generation.py `renew_if_due`);
  both are renewals off the audit chain (services/liveness.py `renew`: a commit on the agent's
  own refs/liza/live/<agent>, pushed alone when the remote's copy is a third of a lease old),
  not board commits;
- per coding task of TASK_MINUTES: claim and submit by the coder, then claim-review, verdict
  (approve) and the MERGED record by a reviewer (a review takes REVIEW_MINUTES, hence 2:1).

Thousands of agents cannot run as processes on two cores, so a fixed pool of writer processes
issues their ops, at Poisson arrival times with the total rate N x the per-agent rate (open loop:
an op waits in the queue while every writer is busy, and that wait counts). Latency is from the
scheduled arrival to the op being committed (one repository) or shared on the remote (shared
remote). Each op is the real Op class through the real write path (`Liza.do`: read the tip,
apply, write, CAS the ref, retries; `gen` set as the supervisor sets it). The git side of the
lifecycle commands is not made: no worktree per claim, no work commit, no git merge (the ops
record the integration tip as base, review and merge commit). That work runs on each agent's
machine before its op (lifecycle's claim makes the worktree in phase 2, the CAS is phase 3) and
does not hold the board's ref; on a two-core box it would measure the worktrees of thousands of
simulated agents, not the board.

Agents are registered first (a bulk-load commit, a fixture like run.py's boards), with their
supervisor tokens and the tasks; then real ops (unmeasured) put some agents in every state, so
each kind of op finds agents to act: coders working, tasks waiting for review, reviewers
reviewing, tasks approved. During the window an op moves its agent and task along (a submitted
task becomes reviewable, an approval frees its coder, and so on).

Topologies:
- one repository (tmpfs when /dev/shm exists): every writer on the same repo;
- shared remote: a bare repository served by `git daemon` on 127.0.0.1, three clones, each agent
  bound to one clone (its machine) and each clone with its own writers. Every op is followed at
  once by a real sync (fetch, replay if diverged, push with a lease), as auto-sync does after
  every command (commands/sync.py `after_commit`; the supervisor opens its Liza through
  `Env.liza()`, so its ops sync the same way): a supervisor does not batch. A claim first fetches
  the branches and a claim-review pulls the board first, as lifecycle's claim and claim_review
  do; a claim the stale local board refuses pulls the board and tries again, as lifecycle does.

N grows geometrically until more than 1% of the ops fail (CONCURRENCY_CONFLICT after the
retries; in the shared remote also a sync that gave up, so the op is not shared) or p99 exceeds
1 s; a step that fails is run once more before the ladder stops (the machine is shared). The
largest N that passed is the figure. Each step also measures its floor: one op alone on the
step's board (one repository), a bare `git fetch` + `git push` to the same daemon (shared).
"""
from __future__ import annotations

import argparse
import dataclasses
import math
import multiprocessing
import os
import queue
import random
import resource
import shutil
import sys
import tempfile
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pygit2

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))
sys.path.insert(0, str(HERE.parent))

from gitliza.core import clock  # noqa: E402
from gitliza.core.model import Agent, Config, Supervisor, Task  # noqa: E402
from gitliza.core.states import AgentState, Role, TaskState  # noqa: E402
from benchutil import remote_of  # noqa: E402

TASK_MINUTES = 10  # the spec gives no typical task duration: an assumption, stated in the report
REVIEW_MINUTES = 5
GEN = 1  # every simulated supervisor holds generation 1 of its agent id
REMOTE = "origin"
P99_LIMIT_S = 1.0
FAIL_LIMIT = 0.01
PIPELINE = ("claim", "submit", "claim-review", "verdict", "merge")
OP_NAMES = {"renew": "supervise"}  # the op a kind of traffic writes, where the names differ
LIVENESS = ("heartbeat", "renew")  # renewals off the audit chain: no board commit (_renew)
STATE = "refs/liza/state"


@dataclass(frozen=True)
class Mix:
    """Per-agent traffic at the board's config defaults."""

    heartbeat_s: float
    renew_s: float
    task_s: float
    review_s: float

    @classmethod
    def defaults(cls) -> Mix:
        cfg = Config()
        return cls(heartbeat_s=float(cfg.heartbeat_interval),
                   renew_s=float(max(1, cfg.lease_duration // 2)),
                   task_s=TASK_MINUTES * 60.0, review_s=REVIEW_MINUTES * 60.0)

    def team(self, n: int) -> tuple[int, int]:
        """(coders, reviewers): enough reviewers to review what the coders submit."""
        share = self.review_s / (self.task_s + self.review_s)
        reviewers = max(1, round(n * share))
        return max(1, n - reviewers), reviewers

    def rates(self, n: int) -> dict[str, float]:
        coders, _ = self.team(n)
        task_rate = coders / self.task_s
        out = {"heartbeat": n / self.heartbeat_s, "renew": n / self.renew_s}
        out.update({k: task_rate for k in PIPELINE})
        return out

    def per_agent(self) -> float:
        return sum(self.rates(3000).values()) / 3000

    def describe(self) -> str:
        c, r = self.team(3000)
        return (f"per agent: a heartbeat every {self.heartbeat_s:g} s (heartbeat_interval), a "
                f"supervisor token renewal every {self.renew_s:g} s (lease_duration / 2); coders "
                f"and reviewers {c // 1000}:{r // 1000}, one {TASK_MINUTES}-minute task per coder "
                f"(claim, submit) and one {REVIEW_MINUTES}-minute review per task (claim-review, "
                f"verdict, the MERGED record): {self.per_agent():.4f} ops/s per agent, one op "
                f"every {1 / self.per_agent():.0f} s")


# -- the board ---------------------------------------------------------------------------------
def _cpu_busy() -> tuple[int, int]:
    """(busy, total) jiffies of the whole machine, from /proc/stat (0, 0 elsewhere)."""
    try:
        fields = [int(x) for x in Path("/proc/stat").read_text().split("\n", 1)[0].split()[1:]]
    except OSError:
        return 0, 0
    idle = fields[3] + (fields[4] if len(fields) > 4 else 0)
    return sum(fields) - idle, sum(fields)


def _load_board(path: Path, coders: int, reviewers: int, tasks: int) -> tuple[str, str]:
    """A board with the agents registered, their supervisor tokens and `tasks` open tasks (one
    bulk-load commit, a fixture); returns (integration tip, state tip)."""
    from benchutil import git
    from gitliza.core.ops import Init
    from gitliza.git.store import STATE_REF, Store
    git(path.parent, "init", "-q", "-b", "main", str(path))
    (path / "README").write_text("x\n")
    git(path, "add", "README")
    git(path, "commit", "-q", "-m", "initial")
    git(path, "branch", "integration")
    repo = pygit2.Repository(str(path))
    store = Store(repo)
    now = clock.from_epoch(time.time())
    store.transact(lambda _b, t: Init(actor="human", time=t, goal="bench"), lambda: now)
    far = clock.plus(now, 86400)
    changes: dict[tuple[str, str], Any] = {}
    for aid, role in ([(f"coder-{i}", Role.CODER) for i in range(coders)]
                      + [(f"reviewer-{i}", Role.CODE_REVIEWER) for i in range(reviewers)]):
        changes[("agents", aid)] = Agent(id=aid, role=role, status=AgentState.IDLE, heartbeat=now,
                                         registered=now)
        changes[("supervisors", aid)] = Supervisor(agent=aid, generation=GEN, started=now,
                                                   expires=far, host="bench", pid=1)
    for i in range(tasks):
        changes[("tasks", f"task-{i}")] = Task(
            id=f"task-{i}", description="benchmark task", status=TaskState.UNCLAIMED,
            created=now, spec_ref="s", done_when="w", scope="x")
    tip = store.tip()
    assert tip is not None
    tree = store.build_tree(repo[tip].tree, changes)
    sig = pygit2.Signature("bench", "bench@liza.invalid", 0, 0)
    c = repo.create_commit(None, sig, sig, "bulk load (benchmark fixture)", tree, [tip])
    repo.lookup_reference(STATE_REF).set_target(c)
    integ = repo.lookup_reference("refs/heads/integration").target
    return str(integ), str(c)


# -- the ops ---------------------------------------------------------------------------------------
def _op(kind: str, task: str | None, integ: str) -> tuple[type, dict[str, Any]]:
    from gitliza.core.ops import control, review, work
    if kind == "heartbeat":
        return work.Heartbeat, {"task": task}
    if kind == "renew":
        return control.Supervise, {"mode": "renew", "gen": GEN}
    assert task is not None
    return {
        "claim": (work.Claim, {"task": task, "worktree": work.worktree_path(task),
                               "base_commit": integ}),
        "submit": (work.Submit, {"task": task, "commit": integ}),
        "claim-review": (review.ClaimReview, {"task": task}),
        "verdict": (review.Verdict, {"task": task, "verdict": "approve", "commit": integ}),
        "merge": (review.Merge, {"task": task, "result": "merged", "merge_commit": integ}),
    }[kind]


def do_op(store: Any, kind: str, actor: str, task: str | None, integ: str,
          shared: bool) -> tuple[str, int, str | None]:
    """One agent op through the real write path; (status, attempts or sync rounds, error).

    status: ok; gave_up (CONCURRENCY_CONFLICT after the retries: nothing committed); unshared
    (shared remote: committed locally, but the sync gave up or failed); dropped (the sync
    replayed it and it no longer applied); error (anything else: a flaw in the simulation)."""
    from gitliza.services.sync import engine
    from gitliza.services.sync.replay import fate_of
    from gitliza.services.api import Liza
    from gitliza.errors import ConcurrencyConflict, GitFailure, LizaError, ValidationError
    from gitliza.services.lifecycle.remote import pull_first
    # sync=True: lifecycle's pulls see the team remote (liza.remote); no after-commit hook is
    # installed on this handle, the sync after the op is made below.
    liza = Liza(store, actor, sync=shared)
    liza.gen = GEN
    if kind in LIVENESS:
        return _renew(liza, kind, task)
    cls, args = _op(kind, task, integ)
    try:
        if kind == "claim":
            pull_first(liza, "claim", board=False)  # as lifecycle.claim (a no-op without remote)
        if kind == "claim-review":
            pull_first(liza, "claim-review")  # as lifecycle.claim_review
        try:
            done = liza.do(cls, **args)
        except ValidationError as e:
            if not (shared and kind == "claim") or e.code == "OP_DROPPED":
                raise
            # lifecycle.claim: the local board refused (the approval that freed this coder was
            # made on another machine): pull the board and claim again.
            pull_first(liza, "claim", board=True)
            done = liza.do(cls, **args)
    except ConcurrencyConflict as e:
        return "gave_up", 0, str(e)
    except LizaError as e:
        return "error", 0, f"{kind} {actor} {task}: {e}"
    if not shared:
        return "ok", done.attempts, None
    try:
        rep = engine.sync(store, remote_of(store, REMOTE))
    except (ConcurrencyConflict, GitFailure) as e:
        return "unshared", 0, str(e)
    if fate_of(store, done.commit, done.op, rep) is not None:
        return "dropped", rep.rounds, f"{kind} {actor} {task} dropped"
    return "ok", rep.rounds, None


def _renew(liza: Any, kind: str, task: str | None) -> tuple[str, int, str | None]:
    """A heartbeat or a token renewal as the supervisor makes it now: a renewal off the audit
    chain (services/liveness.py: refs/liza/live/<agent>), pushed alone when the remote's copy is a
    third of a lease old (shared remote), never a board commit."""
    from gitliza.errors import ConcurrencyConflict, LizaError
    from gitliza.services import liveness
    try:
        liveness.renew(liza, task=task if kind == "heartbeat" else None,
                       extend_task=kind == "heartbeat", renew_token=kind == "renew")
    except ConcurrencyConflict as e:
        return "gave_up", 0, str(e)
    except LizaError as e:
        return "error", 0, f"{kind} {liza.agent} {task}: {e}"
    return "ok", 1, None


def _cpu_now() -> float:
    """CPU seconds of this process and its reaped children (the git processes sync runs)."""
    me = resource.getrusage(resource.RUSAGE_SELF)
    kids = resource.getrusage(resource.RUSAGE_CHILDREN)
    return me.ru_utime + me.ru_stime + kids.ru_utime + kids.ru_stime


def _worker(path: str, integ: str, shared: bool, inq: Any, outq: Any) -> None:
    import gitliza.services.api  # noqa: F401  (imported before the CPU count starts: not per-op cost)
    import gitliza.core.ops.control  # noqa: F401
    import gitliza.core.ops.review  # noqa: F401
    import gitliza.core.ops.work  # noqa: F401
    import gitliza.services.sync.engine  # noqa: F401
    from gitliza.git.store import Store
    store = Store.discover(path)
    cpu0 = _cpu_now()
    while True:
        item = inq.get()
        if item is None:
            break
        seq, kind, actor, task, sched = item
        t0 = time.monotonic()
        status, tries, err = do_op(store, kind, actor, task, integ, shared)
        outq.put((seq, kind, status, t0, time.monotonic(), tries, err))
    outq.put(("cpu", _cpu_now() - cpu0))


# -- who does what ---------------------------------------------------------------------------------
class Pool:
    """Keys with values; O(1) add and take-at-random (the agents or tasks ready for one op)."""

    def __init__(self) -> None:
        self.keys: list[str] = []
        self.vals: dict[str, str | None] = {}

    def add(self, key: str, val: str | None = None) -> None:
        if key not in self.vals:
            self.keys.append(key)
        self.vals[key] = val

    def take(self, rng: random.Random) -> tuple[str, str | None] | None:
        if not self.keys:
            return None
        i = rng.randrange(len(self.keys))
        self.keys[i], self.keys[-1] = self.keys[-1], self.keys[i]
        key = self.keys.pop()
        return key, self.vals.pop(key)

    def __len__(self) -> int:
        return len(self.keys)


@dataclass
class Team:
    """Where every simulated agent and task is, as the parent knows it from completed ops."""

    idle_coders: Pool = field(default_factory=Pool)
    working: Pool = field(default_factory=Pool)  # coder -> task
    to_review: Pool = field(default_factory=Pool)  # task -> its coder
    idle_reviewers: Pool = field(default_factory=Pool)
    reviewing: Pool = field(default_factory=Pool)  # reviewer -> task
    approved: Pool = field(default_factory=Pool)  # task -> its reviewer
    unclaimed: list[str] = field(default_factory=list)
    coder_of: dict[str, str] = field(default_factory=dict)
    agents: list[str] = field(default_factory=list)

    def pick(self, kind: str, rng: random.Random) -> tuple[str, str | None] | None:
        """(actor, task) for an op of `kind`, taken out of its pool while the op runs."""
        if kind == "renew":
            return rng.choice(self.agents), None
        if kind == "heartbeat":
            busy = len(self.working) + len(self.reviewing)
            if not busy:
                return None
            pool = self.working if rng.randrange(busy) < len(self.working) else self.reviewing
            return pool.take(rng)
        if kind == "claim":
            if not self.unclaimed:
                return None
            got = self.idle_coders.take(rng)
            return None if got is None else (got[0], self.unclaimed.pop())
        if kind == "submit":
            return self.working.take(rng)
        if kind == "claim-review":
            got = self.to_review.take(rng)
            if got is None:
                return None
            rev = self.idle_reviewers.take(rng)
            if rev is None:
                self.to_review.add(*got)
                return None
            return rev[0], got[0]
        if kind == "verdict":
            return self.reviewing.take(rng)
        got = self.approved.take(rng)
        return None if got is None else (str(got[1]), got[0])

    def done(self, kind: str, actor: str, task: str | None, ok: bool) -> None:
        """Move the agent and the task on (ok) or back where they were (the op failed)."""
        if kind == "renew":
            return
        if kind == "heartbeat":
            (self.working if actor.startswith("coder-") else self.reviewing).add(actor, task)
            return
        assert task is not None
        if kind == "claim":
            if ok:
                self.working.add(actor, task)
                self.coder_of[task] = actor
            else:
                self.idle_coders.add(actor)
                self.unclaimed.append(task)
        elif kind == "submit":
            if ok:
                self.to_review.add(task, actor)
            else:
                self.working.add(actor, task)
        elif kind == "claim-review":
            if ok:
                self.reviewing.add(actor, task)
            else:
                self.idle_reviewers.add(actor)
                self.to_review.add(task, self.coder_of.get(task))
        elif kind == "verdict":
            if ok:
                self.idle_reviewers.add(actor)
                self.approved.add(task, actor)
                self.idle_coders.add(self.coder_of[task])
            else:
                self.reviewing.add(actor, task)
        elif kind == "merge" and not ok:
            self.approved.add(task, actor)


def _prepare(path: Path, coders: int, reviewers: int, per_stage: int, tasks: int
             ) -> tuple[Team, str, str]:
    """Load the board, then put `per_stage` agents in every state with real ops (unmeasured):
    coders working, tasks waiting for review, reviewers reviewing, tasks approved (their coders
    free again). Returns the team, the integration tip and the state tip to measure from."""
    from gitliza.git.store import Store
    integ, _ = _load_board(path, coders, reviewers, tasks)
    store = Store.discover(path)
    team = Team(agents=[f"coder-{i}" for i in range(coders)]
                + [f"reviewer-{i}" for i in range(reviewers)])
    team.unclaimed = [f"task-{i}" for i in reversed(range(tasks))]
    p = per_stage
    for i in range(4 * p):
        c, t = f"coder-{i}", team.unclaimed.pop()
        _setup_op(store, "claim", c, t, integ)
        team.coder_of[t] = c
        if i < p:
            team.working.add(c, t)
            continue
        _setup_op(store, "submit", c, t, integ)
        if i < 2 * p:
            team.to_review.add(t, c)
            continue
        r = f"reviewer-{i - 2 * p}"
        _setup_op(store, "claim-review", r, t, integ)
        if i < 3 * p:
            team.reviewing.add(r, t)
            continue
        _setup_op(store, "verdict", r, t, integ)
        team.approved.add(t, r)
        team.idle_coders.add(c)
    for i in range(4 * p, coders):
        team.idle_coders.add(f"coder-{i}")
    for i in range(p, reviewers):
        team.idle_reviewers.add(f"reviewer-{i}")
    tip = store.tip()
    return team, integ, str(tip)


def _setup_op(store: Any, kind: str, actor: str, task: str, integ: str) -> None:
    status, _, err = do_op(store, kind, actor, task, integ, shared=False)
    if status != "ok":
        raise RuntimeError(f"setup {kind} failed: {err}")


# -- one step: N agents for `seconds` -----------------------------------------------------------
@dataclass
class Step:
    agents: int
    offered: float = 0.0  # ops/s scheduled
    achieved: float = 0.0  # ops/s that succeeded, over the time from the first arrival to the last op
    issued: int = 0
    ok: int = 0
    failed: dict[str, int] = field(default_factory=dict)
    skipped: int = 0  # arrivals that found no agent in the state their op needs
    p50_ms: float = 0.0
    p99_ms: float = 0.0
    service_ms: float = 0.0  # median time an op took once a writer had it (no queueing)
    floor_ms: float = 0.0  # one op alone (one repository); git fetch + git push (shared remote)
    retried: float = 0.0  # share of ops that needed more than one CAS attempt / sync round
    cpu_ms_per_op: float = 0.0  # writer processes and their git children, per op
    writers_cpu: float = 0.0  # share of the machine's CPU the writers used during the step
    machine_busy: float = 0.0  # share of the machine's CPU busy during the step
    errors: list[str] = field(default_factory=list)
    again: bool = False  # the second run of a step that failed once
    board: str = ""  # the repository whose state ref was counted (for the test), not reported
    since: str = ""  # its state tip before the window
    landed: int = 0  # commits on the board (one repository) / the remote after the step
    committed: int = 0  # ops committed (shared or not): what must have landed
    renewed: int = 0  # heartbeats and token renewals made (off the audit chain: no commit)
    by_op: dict[str, int] = field(default_factory=dict)  # committed ops by op name
    p99_by_kind: dict[str, float] = field(default_factory=dict)  # ms, per kind of traffic

    @property
    def failed_share(self) -> float:
        return sum(self.failed.values()) / max(1, self.issued)

    @property
    def passed(self) -> bool:
        return self.failed_share <= FAIL_LIMIT and self.p99_ms <= P99_LIMIT_S * 1000

    def to_json(self) -> dict[str, Any]:
        d = dataclasses.asdict(self)
        del d["board"], d["since"]
        d.update(failed_share=self.failed_share, passed=self.passed)
        return d


def run_step(root: Path, n: int, seconds: float, writers: int, *, shared: bool,
             mix: Mix | None = None, seed: int = 1) -> Step:
    mix = mix or Mix.defaults()
    rng = random.Random(seed)
    rates = mix.rates(n)
    coders, reviewers = mix.team(n)
    per_stage = max(1, min(math.ceil(3 * rates["claim"] * seconds) + 3, coders // 5,
                           reviewers // 3 if reviewers >= 3 else 1))
    tasks = 4 * per_stage + math.ceil(3 * rates["claim"] * seconds) + 10
    base = root / f"{'remote' if shared else 'repo'}-{n}"
    base.mkdir(parents=True)
    seedrepo = base / "seed"
    team, integ, _ = _prepare(seedrepo, coders, reviewers, per_stage, tasks)
    daemon = None
    clones = [seedrepo]
    bare: Path | None = None
    try:
        if shared:
            daemon, bare, clones = _shared_remote(base, seedrepo)
            floor = _git_floor(clones[0])
        else:
            floor = _op_floor(seedrepo, team, integ, rng)
        start_tip = str(pygit2.Repository(str(seedrepo)).lookup_reference(STATE).target)
        step = _drive(team, rng, rates, seconds, clones, writers, integ, shared, n)
        step.floor_ms = floor * 1000
        if shared:
            from gitliza.services.sync import engine
            from gitliza.git.store import Store
            for c in clones:  # what a later sync shares: ops committed locally, not yet pushed
                engine.sync(Store.discover(c), remote_of(Store.discover(c), REMOTE))
        step.board, step.since = str(bare if shared else seedrepo), start_tip
        step.landed = _count(Path(step.board), start_tip)
    finally:
        if daemon is not None:
            daemon.stop()
    return step


def _op_floor(repo: Path, team: Team, integ: str, rng: random.Random, runs: int = 15) -> float:
    """One repository's floor: the median seconds of a heartbeat alone (no other writer, no
    queue), on the step's board."""
    from gitliza.git.store import Store
    store = Store.discover(repo)
    times = []
    for _ in range(runs):
        who = team.pick("heartbeat", rng)
        if who is None:
            break
        t0 = time.perf_counter()
        status, _n, err = do_op(store, "heartbeat", who[0], who[1], integ, shared=False)
        times.append(time.perf_counter() - t0)
        team.done("heartbeat", who[0], who[1], status == "ok")
    return _pct(times, 0.5) if times else 0.0


def _git_floor(clone: Path, runs: int = 5) -> float:
    """The shared remote's floor: the median seconds of a bare `git fetch` of the board plus a
    `git push` of one ref, from a clone to the same daemon."""
    from benchutil import git
    times = []
    for i in range(runs):
        t0 = time.perf_counter()
        git(clone, "fetch", "-q", REMOTE, STATE)
        git(clone, "push", "-q", "--force", REMOTE, f"HEAD:refs/heads/bench-probe-{i % 2}")
        times.append(time.perf_counter() - t0)
    return _pct(times, 0.5)


def _count(repo: Path, since: str) -> int:
    r = pygit2.Repository(str(repo))
    tip = r.lookup_reference(STATE).target
    walker = r.walk(tip)
    walker.hide(pygit2.Oid(hex=since))
    return sum(1 for _ in walker)


def _shared_remote(base: Path, seed: Path) -> tuple[Any, Path, list[Path]]:
    from gitliza.services.sync import engine
    from gitliza.git.store import Store
    from benchutil import git
    from tests.gitdaemon import GitDaemon
    served = base / "daemon"
    served.mkdir()
    daemon = GitDaemon(served)
    daemon.start()
    bare = daemon.init_bare("board.git")
    git(seed, "push", "-q", str(bare), "main", "integration", "refs/liza/state")
    clones = []
    for k in range(3):
        c = base / f"clone-{k}"
        git(base, "clone", "-q", daemon.url("board.git"), str(c))
        git(c, "config", "liza.remote", REMOTE)
        # The board starts with the bulk-load fixture commit, which no op replays: a sync would
        # refuse it (gitliza/services/adopt.py). Each clone takes it as its trusted starting point, as if
        # it had written it; every later sync checks what it fetches from there.
        git(c, "fetch", "-q", REMOTE, "refs/liza/state:refs/liza/state")
        engine.pull(Store.discover(c), remote_of(Store.discover(c), REMOTE))
        clones.append(c)
    return daemon, bare, clones


def _arrivals(rng: random.Random, rates: dict[str, float], seconds: float
              ) -> list[tuple[float, str]]:
    """Poisson arrivals of the total rate over `seconds`, each of a kind drawn by its rate."""
    kinds = list(rates)
    weights = [rates[k] for k in kinds]
    total = sum(weights)
    out = []
    t = rng.expovariate(total)
    while t < seconds:
        out.append((t, rng.choices(kinds, weights)[0]))
        t += rng.expovariate(total)
    return out


@dataclass
class Collector:
    """The results the writers send back, turned into a Step."""

    step: Step
    team: Team
    pending: dict[int, tuple[str, str, str | None, float]] = field(default_factory=dict)
    lat: list[float] = field(default_factory=list)
    by_kind: dict[str, list[float]] = field(default_factory=dict)
    service: list[float] = field(default_factory=list)
    retried: int = 0
    cpu: float = 0.0
    last_done: float = 0.0

    def handle(self, msg: tuple[Any, ...]) -> None:
        if msg[0] == "cpu":
            self.cpu += msg[1]
            return
        seq, kind, status, t0, t1, tries, err = msg
        entry = self.pending.pop(seq, None)
        if entry is None:
            return
        _kind, actor, task, sched = entry
        self.team.done(kind, actor, task, status in ("ok", "unshared"))
        self.lat.append(t1 - sched)
        self.by_kind.setdefault(kind, []).append(t1 - sched)
        self.service.append(t1 - t0)
        self.last_done = max(self.last_done, t1)
        self.retried += tries > 1
        step = self.step
        if status in ("ok", "unshared") and kind in LIVENESS:
            step.renewed += 1  # on the agent's live ref, not a board commit
        elif status in ("ok", "unshared"):
            step.committed += 1
            name = OP_NAMES.get(kind, kind)
            step.by_op[name] = step.by_op.get(name, 0) + 1
        if status == "ok":
            step.ok += 1
        else:
            step.failed[status] = step.failed.get(status, 0) + 1
            if len(step.errors) < 5:
                step.errors.append(str(err))

    def pump(self, outq: Any, until: float) -> None:
        """Take results until `until` (at least those already there)."""
        while True:
            left = until - time.monotonic()
            try:
                self.handle(outq.get(timeout=left) if left > 0 else outq.get_nowait())
            except queue.Empty:
                return

    def finish(self, seconds: float, start: float) -> Step:
        step = self.step
        if self.pending:  # never finished (a writer stuck past the deadline): failed
            step.failed["not done in time"] = len(self.pending)
        for kind, ks in self.by_kind.items():
            step.p99_by_kind[kind] = _pct(ks, 0.99) * 1000
        if self.lat:
            step.p50_ms = _pct(self.lat, 0.5) * 1000
            step.p99_ms = _pct(self.lat, 0.99) * 1000
            step.service_ms = _pct(self.service, 0.5) * 1000
            step.retried = self.retried / len(self.lat)
            step.cpu_ms_per_op = self.cpu * 1000 / len(self.lat)
            span = max(seconds, self.last_done - start)
            step.achieved = step.ok / span
            step.writers_cpu = self.cpu / (span * (os.cpu_count() or 1))
        return step


def _pct(xs: list[float], q: float) -> float:
    xs = sorted(xs)
    return xs[min(len(xs) - 1, int(len(xs) * q))]


def _drive(team: Team, rng: random.Random, rates: dict[str, float], seconds: float,
           clones: list[Path], writers: int, integ: str, shared: bool, n: int) -> Step:
    """Issue the arrivals to the writers of each agent's clone; collect what they report."""
    ctx = multiprocessing.get_context("fork")
    outq = ctx.Queue()
    inqs = [ctx.Queue() for _ in clones]
    procs = []
    for w in range(writers):
        k = w % len(clones)
        p = ctx.Process(target=_worker, args=(str(clones[k]), integ, shared, inqs[k], outq),
                        daemon=True)
        p.start()
        procs.append(p)
    arrivals = _arrivals(rng, rates, seconds)
    got = Collector(Step(agents=n, offered=len(arrivals) / seconds), team)
    busy0 = _cpu_busy()
    start = time.monotonic() + 0.3
    for seq, (at, kind) in enumerate(arrivals):
        got.pump(outq, start + at)
        who = team.pick(kind, rng)
        if who is None:
            got.step.skipped += 1
            continue
        actor, task = who
        got.pending[seq] = (kind, actor, task, start + at)
        home = int(actor.rsplit("-", 1)[1]) % len(clones)
        if actor.startswith("reviewer-"):
            home = (home + 1) % len(clones)  # reviewers sit on other machines than their coders
        inqs[home].put((seq, kind, actor, task, start + at))
        got.step.issued += 1
    deadline = time.monotonic() + max(30.0, seconds)
    while got.pending and time.monotonic() < deadline:
        got.pump(outq, min(deadline, time.monotonic() + 0.5))
    for k, q in enumerate(inqs):
        for _ in range(sum(1 for w in range(writers) if w % len(clones) == k)):
            q.put(None)
    reported = 0
    try:
        while reported < len(procs):  # each writer's last message is its CPU time
            msg = outq.get(timeout=10)
            reported += msg[0] == "cpu"
            got.handle(msg)
    except queue.Empty:
        pass
    for p in procs:
        p.join(timeout=5)
        if p.is_alive():
            p.terminate()
            p.join()
    busy1 = _cpu_busy()
    step = got.finish(seconds, start)
    if busy1[1] > busy0[1]:
        step.machine_busy = (busy1[0] - busy0[0]) / (busy1[1] - busy0[1])
    return step


# -- the ladder ------------------------------------------------------------------------------------
@dataclass(frozen=True)
class Plan:
    start: int
    factor: float
    steps: int
    seconds: float
    writers: int
    confirm: bool = True  # run a failing step once more before stopping (the machine is shared)


PLANS = {
    "one_repo": Plan(start=500, factor=math.sqrt(2), steps=9, seconds=10.0, writers=4),
    # From 70 (the ceiling while every heartbeat and token renewal was a board commit and a sync):
    # renewals off the audit chain are pushed alone, a third of a lease apart (issue 28).
    "shared_remote": Plan(start=70, factor=math.sqrt(2), steps=7, seconds=30.0, writers=6),
}
QUICK = {
    "one_repo": Plan(start=30, factor=2.0, steps=2, seconds=3.0, writers=2, confirm=False),
    "shared_remote": Plan(start=15, factor=2.0, steps=2, seconds=3.0, writers=3, confirm=False),
}


def ladder(root: Path, topology: str, plan: Plan, say: Any = print) -> dict[str, Any]:
    rows: list[Step] = []
    n = plan.start
    for _ in range(plan.steps):
        step = _step(root, topology, n, plan, say)
        rows.append(step)
        if not step.passed and plan.confirm:
            step = _step(root, topology, n, plan, say, again=True)
            rows.append(step)
        if not step.passed:
            break
        n = round(n * plan.factor)
    passed = [r for r in rows if r.passed]
    return {"rows": [r.to_json() for r in rows], "plan": dataclasses.asdict(plan),
            "most": passed[-1].agents if passed else 0,
            "limit": limited_by(topology, rows)}


def _step(root: Path, topology: str, n: int, plan: Plan, say: Any, again: bool = False) -> Step:
    step = run_step(root / ("again" if again else "first"), n, plan.seconds, plan.writers,
                    shared=topology == "shared_remote", seed=2 if again else 1)
    step.again = again
    say(f"[{topology}] N={n}{' (again)' if again else ''}: offered {step.offered:.1f} ops/s, "
        f"achieved {step.achieved:.1f}, p50 {step.p50_ms:.0f} ms, p99 {step.p99_ms:.0f} ms, "
        f"failed {step.failed_share:.2%} {step.failed or ''}, service {step.service_ms:.1f} ms, "
        f"floor {step.floor_ms:.1f} ms, "
        f"retried {step.retried:.1%}, cpu/op {step.cpu_ms_per_op:.1f} ms, writers' cpu "
        f"{step.writers_cpu:.0%}, machine busy {step.machine_busy:.0%}, skipped "
        f"{step.skipped}, landed {step.landed}/{step.committed}"
        + f", p99 by kind {({k: round(v) for k, v in step.p99_by_kind.items()})}"
        + (f", errors {step.errors[:2]}" if step.errors else ""))
    return step


def limited_by(topology: str, rows: list[Step]) -> str:
    """What stopped the ladder, read from the step that failed (its second run, if any)."""
    bad = rows[-1] if rows and not rows[-1].passed else None
    if bad is None:
        return f"nothing yet: every step up to N={rows[-1].agents:,} passed"
    slow = sorted(bad.p99_by_kind.items(), key=lambda kv: -kv[1])[:2]
    why = (f"{bad.failed_share:.1%} of the ops failed ({', '.join(bad.failed)})"
           if bad.failed_share > FAIL_LIMIT else
           f"p99 was {bad.p99_ms:,.0f} ms, slowest "
           + " and ".join(f"{k} {v:,.0f} ms" for k, v in slow))
    if topology == "shared_remote":
        what = (f"the round trips: every op is a sync, a fetch and a push through the daemon "
                f"({bad.service_ms:.0f} ms median once a writer has it; a bare git fetch and git "
                f"push to the same daemon, {bad.floor_ms:.0f} ms), and the syncs of the "
                f"three clones overlap and lose the push lease on the one ref: {bad.retried:.0%} "
                f"needed another round, after a wait of up to 1 s")
    else:
        what = (f"the one ref: writes are serial, and a writer that loses the compare-and-swap "
                f"reads, applies and writes again after 0, 0.1, 0.25 and 0.5 s; in a burst every "
                f"writer is busy and {bad.retried:.0%} of the ops retried"
                + (", some 5 times, then gave up" if bad.failed.get("gave_up") else ""))
    return (f"{what} (at N={bad.agents:,}, {bad.offered:.0f} ops/s offered, {why}; the machine "
            f"was {bad.machine_busy:.0%} busy, the writers using {bad.writers_cpu:.0%} of its "
            f"{os.cpu_count()} cores at {bad.cpu_ms_per_op:.1f} ms of CPU per op)")


def bench(quick: bool = False, say: Any = print, only: str | None = None,
          start: int | None = None, factor: float | None = None) -> dict[str, Any]:
    mix = Mix.defaults()
    say(f"many agents: {mix.describe()}")
    out: dict[str, Any] = {"mix": mix.describe(), "per_agent_ops": mix.per_agent(),
                           "quick": quick}
    plans = QUICK if quick else PLANS
    base = Path("/dev/shm") if Path("/dev/shm").is_dir() else Path(tempfile.gettempdir())
    out["place"] = "tmpfs" if base == Path("/dev/shm") else "disk"
    for topology, plan in plans.items():
        if only is not None and topology != only:
            continue
        if start is not None or factor is not None:
            # A finer ladder where the coarse one stopped (say from 198 by 1.1 after it passed
            # 198 and failed 280): the ceiling between two of its steps.
            plan = dataclasses.replace(plan, start=start or plan.start,
                                       factor=factor or plan.factor)
        root = Path(tempfile.mkdtemp(prefix="gitliza-bench-agents-", dir=base))
        try:
            out[topology] = ladder(root, topology, plan, say)
        finally:
            shutil.rmtree(root, ignore_errors=True)
        say(f"[{topology}] most agents: N={out[topology]['most']}; limited by "
            f"{out[topology]['limit']}")
    return out


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__,
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--quick", action="store_true", help="tiny N, short windows (a smoke run)")
    ap.add_argument("--only", choices=sorted(PLANS), help="one topology")
    ap.add_argument("--start", type=int, help="the ladder's first N (default: the plan's)")
    ap.add_argument("--factor", type=float, help="the ladder's step factor (default: the plan's)")
    args = ap.parse_args()
    bench(args.quick, only=args.only, start=args.start, factor=args.factor)
    return 0


if __name__ == "__main__":
    sys.exit(main())
