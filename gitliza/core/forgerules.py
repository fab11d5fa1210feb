"""The forge bridge's rules, pure (docs/forge.md): the human's config keys that name the forge, what a
task's pull request says (title, body, labels, the verdict comments), how the forge's checks are
judged against `forge_required_checks`, what a human's review on the pull request becomes on the
board, and the FORGE alarms. The bridge (gitliza/forge/bridge.py) does the I/O; every decision it
takes about the board is made here, from the board and what the forge answered."""
from __future__ import annotations

from typing import Iterable, NamedTuple

from gitliza.core import clock
from gitliza.core.board import Board
from gitliza.core.model import Config, Task
from gitliza.core.states import TERMINAL, TaskState
from gitliza.errors import ValidationError

S = TaskState
FORGES = ("github",)
KEYS = frozenset({"forge", "forge_repo", "forge_api_url", "forge_required_checks", "forge_merge",
                  "forge_checks_timeout"})
BRANCH_PREFIX = "liza/"  # the head branch of a task's pull request: liza/<task>
LABEL_PREFIX = "liza:"  # the labels the bridge owns (liza:ready_for_review ...); others are left
MARK = "<!-- liza:"  # the marker of what the bridge wrote on the forge (its verdict comments)
LINK_LAG = 300  # seconds a submitted task may lack its pull request before the FORGE alarm
REVIEW_NOTE = "forge review "  # the history note that records which forge review was taken in
# Patterns compiled where a key is set (`status` loads this module for the merge queue's rule).
_REPO = r"^[A-Za-z0-9][A-Za-z0-9-]{0,38}/[A-Za-z0-9._-]{1,100}$"
_URL = r"^https?://[A-Za-z0-9.-]+(:[0-9]{1,5})?(/[A-Za-z0-9._~/-]*)?$"
_CHECK = r"^[^\x00-\x1f\x7f,]{1,200}$"


def coerce(key: str, value: str | int | bool | None) -> str | int | None:
    """One forge key's value checked (config.py hands them here): unset with none/off where the
    key may be unset; a URL with credentials is refused (the token never goes on the board)."""
    import re  # only then: few commands set the forge
    text = "" if value is None else str(value).strip()
    if key == "forge_merge":
        if text.lower() not in ("on", "off"):
            raise ValidationError(f"config forge_merge must be on or off, got {value!r}")
        return text.lower()
    if text.lower() in ("", "none", "null", "off"):
        return None
    if key == "forge":
        if text.lower() not in FORGES:
            raise ValidationError(f"config forge must be one of {', '.join(FORGES)}, got {value!r}")
        return text.lower()
    if key == "forge_repo":
        if not re.match(_REPO, text) or text.endswith((".", "/")) or ".." in text:
            raise ValidationError(f"config forge_repo must be OWNER/NAME, got {value!r}")
        return text
    if key == "forge_api_url":
        if not re.match(_URL, text):
            raise ValidationError(f"config forge_api_url must be an http(s) URL without "
                                  f"credentials, got {value!r}",
                                  hint="e.g. https://github.example.com/api/v3; the token "
                                       "never goes on the board (docs/forge.md)")
        return text.rstrip("/")
    names = [n.strip() for n in text.split(",") if n.strip()]
    bad = [n for n in names if not re.match(_CHECK, n)]
    if not names or bad:
        raise ValidationError(f"config forge_required_checks must name checks separated by "
                              f"commas, got {(bad or [text])[0]!r}")
    return ", ".join(dict.fromkeys(names))


def required(config: Config) -> tuple[str, ...]:
    """The checks an approved commit must pass before it merges (none: no gate)."""
    if not config.forge or not config.forge_required_checks:
        return ()
    return tuple(n.strip() for n in config.forge_required_checks.split(",") if n.strip())


def waits_for_checks(config: Config, t: Task) -> bool:
    """Whether approved `t` may not merge yet: checks are required and have not passed on its
    approved commit (the merge queue leaves it out; the merge op refuses it)."""
    return bool(required(config)) and t.checks_passed != t.review_commit


def forge_merges(config: Config) -> bool:
    """`forge_merge on`: the forge merges approved tasks (the pull request's merge), the board
    records the forge's merge commit once it is checked; the merge queue stands aside."""
    return bool(config.forge) and config.forge_merge == "on"


def merges_by_forge(board: Board, t: Task) -> bool:
    """Whether the bridge asks the forge to merge `t` now: approved, its required checks (if
    any) passed on its approved commit, forge_merge on, and no forge merge of it since its
    approval that the board refused (a mismatch waits for the human)."""
    config = board.config
    return (t.status == S.APPROVED and forge_merges(config) and not waits_for_checks(config, t)
            and mismatch(board, t) is None)


MISMATCH = "forge_merge_commit"  # the anomaly detail naming the forge's merge the board refused


def mismatch(board: Board, t: Task) -> str | None:
    """The forge's merge commit of `t` that the board refused (the bridge's
    `assumption_violated` anomaly, logged since the task's last approval), if any."""
    approved = _last(t, ("approved", "approval_carried")) or ""
    for a in board.values("anomalies"):
        if a.task != t.id or a.type != "assumption_violated" or a.timestamp < approved:
            continue
        found = dict(a.details).get(MISMATCH)
        if isinstance(found, str):
            return found
    return None


def judges_checks(config: Config, t: Task) -> bool:
    """Whether the bridge reads `t`'s required checks: in review (a failing one sends it back
    before a review is spent on it) or approved and waiting for them."""
    if t.status == S.READY_FOR_REVIEW:
        return bool(required(config)) and t.review_commit is not None
    return t.status == S.APPROVED and waits_for_checks(config, t)


class Check(NamedTuple):
    """A check run or a commit status on the forge, as the bridge read it (a NamedTuple, not a
    dataclass: `status` loads this module, and a dataclass costs a millisecond to make)."""

    name: str
    status: str  # queued | in_progress | completed (a commit status: completed or pending)
    conclusion: str | None  # success | failure | neutral | cancelled | timed_out | ...
    url: str | None = None


PASS = frozenset({"success", "neutral", "skipped"})


class Judged(NamedTuple):
    state: str  # passed | failed | pending
    failed: Check | None = None
    missing: tuple[str, ...] = ()


def judge(names: Iterable[str], checks: Iterable[Check]) -> Judged:
    """The required checks on one commit: failed at the first required one that completed and did
    not pass, passed when each has completed and passed, else pending (a check not reported yet
    counts as pending: GitHub's required checks wait for it too). Several runs of one name: the
    last reported (a re-run) decides."""
    latest: dict[str, Check] = {}
    for c in checks:
        latest[c.name] = c
    missing = []
    for name in names:
        got = latest.get(name)
        if got is None or got.status != "completed":
            missing.append(name)
        elif got.conclusion not in PASS:
            return Judged("failed", got)
    return Judged("pending", missing=tuple(missing)) if missing else Judged("passed")


def failure_reason(c: Check) -> str:
    """The integration failure a failing check records: its name, conclusion and log URL."""
    url = f" ({c.url})" if c.url else ""
    return one_line(f"forge check {c.name!r}: {c.conclusion or 'failed'}{url}")[:1000]


def branch(task: str) -> str:
    return BRANCH_PREFIX + task


def title(t: Task) -> str:
    return one_line(f"[liza {t.id}] {t.description}")[:200]


def body(t: Task, web_url: str | None) -> str:
    """The pull request's body: the task as the board has it (the board stays the truth: an edit
    on the forge is overwritten at the next pass)."""
    parts = [f"{MARK}task {t.id} -->", f"**Task `{t.id}`** ({t.status}) on the gitliza board.", "",
             t.description]
    if t.done_when:
        parts += ["", "**Done when:** " + t.done_when]
    if t.criteria:
        parts += ["", "**Acceptance criteria:**"] + [f"- {c}" for c in t.criteria]
    if t.lock_scope:
        parts += ["", "**Lock scope:** " + ", ".join(f"`{g}`" for g in t.lock_scope)]
    if web_url:
        parts += ["", f"Board: {web_url.rstrip('/')}/task/{t.id}"]
    parts += ["", "_This pull request mirrors the board: the board decides; a human's review here "
              "is taken back to it (request changes rejects, approve votes)._"]
    return "\n".join(parts)[:60000]


def labels(t: Task) -> frozenset[str]:
    return frozenset({LABEL_PREFIX + t.status.lower()})


def verdicts(t: Task) -> list[tuple[str, str]]:
    """The review comments the task's verdicts make on the pull request: (key, body), one per
    approval or rejection in its history; the key in the body lets the bridge find what it wrote."""
    out = []
    for i, h in enumerate(t.history):
        if h.event not in ("approved", "rejected", "vote") or h.agent == "human":
            continue
        key = f"{t.id}:{i}:{h.event}"
        what = {"approved": "approved", "vote": "approved (a vote toward the quorum)",
                "rejected": "rejected"}[h.event]
        text = [f"{MARK}{key} -->", f"**{h.agent}** {what} `{str(h.commit)[:12]}` at {h.time}."]
        if h.reason:
            text += ["", "> " + "\n> ".join(h.reason.splitlines())]
        if h.event in ("approved", "vote"):
            text += _evidence(t, h.agent)
        out.append((key, "\n".join(text)))
    return out


def _evidence(t: Task, agent: str | None) -> list[str]:
    vote = next((v for v in t.review_votes if v.agent == agent), None)
    if vote is None or not vote.evidence:
        return []
    return ["", "**Evidence:**"] + [f"- criterion {e.criterion}: {e.kind} `{e.ref}`" for e in vote.evidence]


def taken(t: Task, review_id: int) -> bool:
    """Whether the human's forge review `review_id` is on the board already (replay, restart)."""
    return any(h.note == f"{REVIEW_NOTE}{review_id}" for h in t.history)


def review_reason(text: str, comments: Iterable[tuple[str, int | None, str]]) -> str:
    """A human's "request changes" as the rejection's reason: the review's text, then its line
    comments as review notes (path:line: text). Quoted as the human's words wherever it is shown
    (core/agents/prompts.py quoted)."""
    out = text.strip() or "changes requested on the pull request"
    notes = [f"{path}:{line or '-'}: {' '.join(c.split())}" for path, line, c in comments]
    if notes:
        out += "\n\nReview notes (line comments):\n" + "\n".join(notes)
    return out[:3900]


def one_line(text: str) -> str:
    return " ".join(text.split())


def alarms(board: Board, now: str) -> list[tuple[str, str]]:
    """(task, text) of the FORGE alarms: a submitted task still without its pull request
    LINK_LAG seconds after its submit (the forge unreachable or the bridge not running: the
    board goes on, the forge catches up), an approved task waiting for its required checks, or
    (forge_merge on) for the forge's merge, longer than forge_checks_timeout, and a forge merge
    the board refused."""
    config = board.config
    if not config.forge:
        return []
    out = []
    for t in sorted(board.tasks(), key=lambda t: t.id):
        if t.status in TERMINAL or t.review_commit is None:
            continue
        if t.forge_pr is None:
            since = _last(t, ("ready_for_review",))
            if since and _age(since, now) > LINK_LAG:
                out.append((t.id, f"FORGE: {t.id} submitted {_age(since, now) // 60} min ago has "
                            "no pull request yet (forge unreachable or `git liza forge sync` "
                            "not running)"))
        elif t.status == S.APPROVED and (refused := mismatch(board, t)) is not None:
            out.append((t.id, f"FORGE: the forge merged {t.id} as {refused[:12]}, which is not "
                        "the merge of the board's integration tip and its approved commit: "
                        "nothing was recorded; the human must look (docs/forge.md)"))
        elif t.status == S.APPROVED and forge_merges(config) and not waits_for_checks(config, t):
            since = _last(t, ("checks_passed", "approved", "approval_carried"))
            if since and _age(since, now) > config.forge_checks_timeout:
                out.append((t.id, f"FORGE: {t.id} waits for the forge to merge it since {since} "
                            f"(forge_merge on; forge_checks_timeout {config.forge_checks_timeout}s)"))
        elif t.status == S.APPROVED and waits_for_checks(config, t):
            since = _last(t, ("approved", "approval_carried"))
            if since and _age(since, now) > config.forge_checks_timeout:
                out.append((t.id, f"FORGE: {t.id} waits for its required checks "
                            f"({config.forge_required_checks}) since {since} "
                            f"(forge_checks_timeout {config.forge_checks_timeout}s)"))
    return out


def merged_since(t: Task, since: str) -> bool:
    """Whether `t` merged at or after `since` (an ISO time; empty: never)."""
    merged = _last(t, ("merged",))
    return bool(since) and merged is not None and merged >= since


def _last(t: Task, events: tuple[str, ...]) -> str | None:
    for h in reversed(t.history):
        if h.event in events:
            return h.time
    return None


def _age(since: str, now: str) -> int:
    return max(0, clock.to_epoch(now) - clock.to_epoch(since))
