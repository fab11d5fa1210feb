"""The bridge loop (docs/forge.md): one per clone (an exclusive flock on
`<git common dir>/liza/forge.lock`, as the remote follower holds its own), run by
`git liza forge sync`. Each pass reads the board and, for every task that was submitted, keeps its
pull request in step:

- opened once, as a draft, when the task is first submitted: the task's review commit pushed to
  branch `liza/<task>` of the forge's git remote, the pull request found by that head first (a
  restart, a second machine or a replay finds the one already open), its number recorded on the
  board (`forge-link`, idempotent);
- title, body and labels from the task; out of draft once approved; every verdict a review
  comment; closed when the board merged (or dropped) the task;
- the forge's events back, through the board's own ops as the human: a required check that failed
  on the task's commit, in review or approved, is `merge --result failed` (the integration test's
  path, counted as one), all of them passed on the approved commit is `forge-checks`; a human's "request changes" is `human-review
  reject` with the review's text and line comments, an approval `human-review approve`.

The forge unreachable or rate limited ends the pass (the next one waits for the forge's reset,
with a growing backoff); the board never waits for the forge, and the next pass catches up. A
decision about the board is made in core/forgerules.py; this module does the I/O."""
from __future__ import annotations

import json
import os
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Callable

from gitliza import atomic
from gitliza.core import forgerules as rules
from gitliza.core.model import Task
from gitliza.core.states import TERMINAL, TaskState
from gitliza.errors import ConcurrencyConflict, GitFailure, LizaError
from gitliza.forge import Forge, ForgeRateLimited, ForgeRefused, ForgeUnreachable, PullRequest
from gitliza.git.gitcmd import run_git
from gitliza.git.repository import common_dir, repo_path

if TYPE_CHECKING:
    from gitliza.core.board import Board
    from gitliza.services.api import Liza

S = TaskState
LOCK = "forge.lock"
STATUS = "forge.json"
BACKOFF_MAX = 300.0  # seconds between two tries of an unreachable forge, at most
PUSH_TIMEOUT = 120.0


@dataclass
class Pass:
    """What one pass did (the loop's log and `forge status`)."""

    opened: list[str] = field(default_factory=list)
    linked: list[str] = field(default_factory=list)
    recorded: list[str] = field(default_factory=list)  # board ops the forge's events made
    anomalies: list[str] = field(default_factory=list)  # forge merges the board refused
    error: str | None = None


class Bridge:
    def __init__(self, liza: Liza, forge: Forge, log: Callable[[str], None], *, remote: str,
                 web_url: str | None = None) -> None:
        self.liza = liza
        self.forge = forge
        self.log = log
        self.remote = remote
        self.web_url = web_url
        self.closed: set[str] = set()  # tasks whose pull request is closed for good
        self.seen: dict[str, tuple[object, ...]] = {}  # task -> what the last pass saw of it
        self.pushed: dict[str, str] = {}  # task -> the commit this process pushed to its head
        self.posted: dict[int, set[str]] = {}  # pull request -> verdict comments found there
        self.labelled: dict[int, frozenset[str]] = {}  # pull request -> the labels it was given
        self.merge_waits: dict[str, str] = {}  # task -> why the forge's merge waits (said once)
        self.paused_until = 0.0
        self.backoff = 0.0
        self.last_error: str | None = None
        self.forge_since: str | None = None

    # -- the loop ----------------------------------------------------------------------------
    def step(self) -> Pass:
        """One pass over the board; the forge's faults end it, never raise."""
        out = Pass()
        now = time.time()
        if now < self.paused_until:
            out.error = self.last_error
            return out
        board = self.liza.board()
        try:
            for t in self._tasks(board):
                try:
                    self._task(board, t, out)
                except ForgeRefused as e:  # this task's request; the others go on
                    self.log(f"forge: {t.id}: {e}")
                except GitFailure as e:
                    self.log(f"forge: {t.id}: push of {rules.branch(t.id)}: {e}")
                except (ForgeUnreachable, OSError):
                    raise
                except LizaError as e:  # a board op refused: the task moved on meanwhile
                    self.log(f"forge: {t.id}: the board refused: {e}")
        except ForgeRateLimited as e:
            self._fault(str(e), e.until)
            out.error = str(e)
        except ForgeUnreachable as e:
            self.backoff = min(BACKOFF_MAX, max(2.0, self.backoff * 2))
            self._fault(str(e), time.time() + self.backoff)
            out.error = str(e)
        else:
            if self.last_error is not None:
                self.log("forge: reachable again; caught up")
            self.last_error, self.backoff = None, 0.0
        self._write_status(out)
        return out

    def _fault(self, text: str, until: float) -> None:
        if text != self.last_error:
            self.log(f"forge: {text} (the board goes on; next try in {int(until - time.time())}s)")
        self.last_error, self.paused_until = text, until

    def _tasks(self, board: Board) -> list[Task]:
        """The submitted live tasks, and the terminal ones whose pull request may still be
        open, or that merged without one since the forge was set up (the forge was down or the
        bridge stopped meanwhile: it catches up)."""
        live = [t for t in board.tasks() if t.review_commit]
        done = [t for t in board.values("archive") if t.id not in self.closed and (
            t.forge_pr is not None or t.status == S.MERGED and t.review_commit
            and rules.merged_since(t, self._since()))]
        return sorted(live, key=lambda t: t.id) + sorted(done, key=lambda t: t.id)

    def _since(self) -> str:
        """When the board's forge was set (its newest `config forge`), found once."""
        if self.forge_since is None:
            from gitliza.core.encoding import record
            self.forge_since = ""
            for c in self.liza.store.history():
                try:
                    op = record.parse(c.message).op
                except LizaError:
                    continue
                if op.NAME == "config" and getattr(op, "key", None) == "forge":
                    self.forge_since = op.time
                    break
        return self.forge_since

    # -- one task ----------------------------------------------------------------------------
    def _task(self, board: Board, t: Task, out: Pass) -> None:
        key = _key(t)
        watching = t.status in (S.READY_FOR_REVIEW, S.APPROVED)  # the forge's events matter
        if self.seen.get(t.id) == key:
            if watching and t.forge_pr is not None:  # mirrored already: only the forge's events
                self._events(board, t, t.forge_pr, out)
            return
        if t.forge_pr is None:
            if t.status in TERMINAL and t.status != S.MERGED:
                return  # dropped before the bridge saw it submitted: no pull request
            t = self._open(board, t, out)
        pr = self.forge.pull(int(t.forge_pr or 0))
        if t.status not in TERMINAL and pr.state == "open":
            self._push(t)
            self._mirror(t, pr)
        self._verdicts(t, pr)
        if t.status in TERMINAL:
            if pr.state == "open":
                self.forge.edit_pull(pr.number, state="closed")
            self.closed.add(t.id)
        self._events(board, t, pr.number, out)

    def _events(self, board: Board, t: Task, number: int, out: Pass) -> None:
        """The human's reviews and the required checks of a task the forge may act on. The task
        as mirrored is remembered: while the board shows it unchanged, the next pass asks only
        this; an op recorded here changes it, so the next pass mirrors it again."""
        self.seen[t.id] = _key(t)
        if t.status in (S.READY_FOR_REVIEW, S.APPROVED):
            t = self._reviews(t, number, out) or t
        if rules.judges_checks(board.config, t):
            t = self._checks(board, t, out) or t
        if t.forge_pr is not None and rules.merges_by_forge(board, t):
            self._merge(t, out)

    def _open(self, board: Board, t: Task, out: Pass) -> Task:
        """The task's pull request: found by its head branch first, else opened; its number on
        the board."""
        from gitliza.core.ops.forge import ForgeLink
        self._push(t)
        head = rules.branch(t.id)
        pr = self.forge.find_pull(head)
        if pr is None:
            pr = self.forge.open_pull(title=rules.title(t), head=head,
                                      base=board.config.integration_branch,
                                      body=rules.body(t, self.web_url))
            out.opened.append(t.id)
            self.log(f"forge: {t.id}: opened pull request #{pr.number} (draft)")
        self.liza.do(ForgeLink, task=t.id, number=pr.number)
        out.linked.append(t.id)
        got = self.liza.board()
        return got.task(t.id) or got.get("archive", t.id) or t

    def _push(self, t: Task) -> None:
        """The task's review commit to `liza/<task>` on the forge's remote (forced: a resubmit
        moves it); skipped when this process pushed that commit already."""
        if not t.review_commit or self.pushed.get(t.id) == t.review_commit:
            return
        ref = f"refs/heads/{rules.branch(t.id)}"
        # The board's sync pushes submitted tasks' branches to its remote already (the same
        # ref): when its tracking ref shows the commit there, a second push could only race it.
        tracking = self.liza.repo.references.get(f"refs/remotes/{self.remote}/liza-tasks/{t.id}")
        if tracking is not None and str(tracking.target) == t.review_commit:
            self.pushed[t.id] = t.review_commit
            return
        run = run_git(repo_path(self.liza.repo), ["push", "--force", "--quiet", self.remote,
                                                  f"{t.review_commit}:{ref}"],
                      timeout=PUSH_TIMEOUT)
        if run.returncode != 0:
            raise GitFailure(" ".join(run.stderr.split())[:300] or "git push failed")
        self.pushed[t.id] = t.review_commit

    def _mirror(self, t: Task, pr: PullRequest) -> None:
        title, body = rules.title(t), rules.body(t, self.web_url)
        if pr.title != title or pr.body != body:
            self.forge.edit_pull(pr.number, title=title, body=body)
        want = rules.labels(t)
        if self.labelled.get(pr.number) == want:
            return self._ready(t, pr)
        have = self.forge.labels(pr.number)
        for stale in sorted(x for x in have - want if x.startswith(rules.LABEL_PREFIX)):
            self.forge.remove_label(pr.number, stale)
        if want - have:
            self.forge.add_labels(pr.number, sorted(want - have))
        self.labelled[pr.number] = want  # asked again when the task's state changes
        self._ready(t, pr)

    def _ready(self, t: Task, pr: PullRequest) -> None:
        if pr.draft and t.status == S.APPROVED:
            self.forge.ready_for_review(pr)

    def _verdicts(self, t: Task, pr: PullRequest) -> None:
        wanted = rules.verdicts(t)
        posted = self.posted.setdefault(pr.number, set())
        if all(k in posted for k, _ in wanted):
            return
        for r in self.forge.reviews(pr.number):
            if r.body.startswith(rules.MARK):
                posted.add(r.body[len(rules.MARK):].split(" -->", 1)[0])
        for k, text in wanted:
            if k not in posted:
                commit = next((h.commit for i, h in enumerate(t.history)
                               if f"{t.id}:{i}:{h.event}" == k), None) or t.review_commit
                self.forge.comment(pr.number, str(commit), text)
                posted.add(k)

    def _reviews(self, t: Task, number: int, out: Pass) -> Task | None:
        """The human's reviews of the task's current commit, each taken in once."""
        from gitliza.core.ops.forge import HumanReview
        for r in sorted(self.forge.reviews(number), key=lambda r: r.id):
            if r.state not in ("CHANGES_REQUESTED", "APPROVED") or r.commit != t.review_commit \
                    or r.body.startswith(rules.MARK) or rules.taken(t, r.id):
                continue
            if r.state == "APPROVED" and t.status != S.READY_FOR_REVIEW:
                continue
            if r.state == "CHANGES_REQUESTED":
                reason = rules.review_reason(r.body, self.forge.review_comments(number, r.id))
                self.liza.do(HumanReview, task=t.id, verdict="reject", commit=r.commit,
                             review=r.id, reason=reason)
                self.log(f"forge: {t.id}: {r.user or 'a human'} requested changes on "
                         f"#{number}: rejected")
            else:
                self.liza.do(HumanReview, task=t.id, verdict="approve", commit=r.commit,
                             review=r.id)
                self.log(f"forge: {t.id}: {r.user or 'a human'} approved #{number}")
            out.recorded.append(t.id)
            return self.liza.board().task(t.id)  # one review per pass: the task moved
        return None

    def _checks(self, board: Board, t: Task, out: Pass) -> Task | None:
        from gitliza.core.ops.forge import ForgeChecks
        from gitliza.core.ops.review import Merge
        assert t.review_commit is not None
        got = rules.judge(rules.required(board.config), self.forge.checks(t.review_commit))
        if got.state == "passed" and t.status == S.APPROVED:
            self.liza.do(ForgeChecks, task=t.id, commit=t.review_commit)
            self.log(f"forge: {t.id}: required checks passed on {t.review_commit[:12]}")
            out.recorded.append(t.id)
            return self.liza.board().task(t.id)
        elif got.state == "failed" and got.failed is not None:
            reason = rules.failure_reason(got.failed)
            self.liza.do(Merge, task=t.id, result="failed", reason=reason)
            self.log(f"forge: {t.id}: {reason}: back to its coder (INTEGRATION_FAILED)")
            out.recorded.append(t.id)
        return None

    def _merge(self, t: Task, out: Pass) -> None:
        """forge_merge on: the forge merges the approved task, the board records its merge
        commit once checked (forge/merging.py); a mismatch is an anomaly, nothing recorded."""
        from gitliza.core.ops.journal import AnomalyOp
        from gitliza.forge import merging
        try:
            got = merging.merge(self.liza, self.forge, t, self.remote,
                                lambda line: self.log(f"forge: {t.id}: {line}"))
        except merging.ForgeMergeMismatch as e:
            self.log(f"forge: {t.id}: {e}")
            self.liza.do(AnomalyOp, type="assumption_violated", task=t.id, ordered=True,
                         details=(("assumption", "the forge merges exactly the approved commit "
                                   "into the integration tip the board knows"),
                                  ("reality", str(e)[:1000]), (rules.MISMATCH, e.commit)))
            out.anomalies.append(t.id)
            return
        except (GitFailure, ConcurrencyConflict, ForgeRefused, merging.MergeWaits) as e:
            text = f"forge: {t.id}: the forge's merge waits: {e}"
            if self.merge_waits.get(t.id) != text:  # said once, not at every pass
                self.log(text)
                self.merge_waits[t.id] = text
            return
        self.merge_waits.pop(t.id, None)
        if got is not None:
            self.log(f"forge: {t.id}: merged by the forge as {got[:12]}, recorded")
            out.recorded.append(t.id)

    # -- what `forge status` reads -----------------------------------------------------------
    def _write_status(self, out: Pass) -> None:
        data = {"pid": os.getpid(), "time": time.time(), "error": out.error,
                "paused_until": self.paused_until if out.error else None,
                "requests": getattr(self.forge, "requests", None),
                "not_modified": getattr(self.forge, "not_modified", None)}
        try:
            path = status_path(self.liza.repo)
            atomic.write(path.parent, path.name, (json.dumps(data) + "\n").encode())
        except OSError:
            pass  # the status is for show; the loop goes on


def _key(t: Task) -> tuple[object, ...]:
    """What of a task its pull request mirrors: a change of any of it is mirrored again."""
    return (t.status, t.review_commit, len(t.history), t.forge_pr, t.checks_passed)


def status_path(repo: object) -> Path:
    return common_dir(repo) / "liza" / STATUS  # type: ignore[arg-type]


def read_status(repo: object) -> dict[str, object] | None:
    try:
        data = json.loads(status_path(repo).read_text("utf-8"))
    except (OSError, ValueError):
        return None
    return data if isinstance(data, dict) else None


def try_lock(repo: object) -> int | None:
    """The clone's bridge lock (one bridge per clone), or None when another process holds it:
    the remote follower's kind of lock (the kernel drops a dead holder's)."""
    from gitliza.services.sync.follower import try_lock as lock
    return lock(common_dir(repo) / "liza", LOCK)  # type: ignore[arg-type]
