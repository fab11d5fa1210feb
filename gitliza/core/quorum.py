"""Review worth trusting: the review quorum, its rules by impact, the diversity of the
approvers, and acceptance evidence. Pure: the verdict op (ops/review.py) asks it, and so does
every reader that shows the votes.

- **Quorum.** A task needs `required(config, task)` approvals of one review commit: the board's
  `review_quorum`, raised by the first matching rules of `quorum_rules` ("label:security=2
  scope:migrations/**=2"; the highest one that matches wins). A `scope:` rule matches the task's
  lock scope, `Task.lock_scope` (the lock-scope field); on a board without that field no scope rule
  matches, so the rule is accepted now and bites when the field exists.
- **Diversity.** `review_diversity` = cli | model: the approvals of one commit come from
  distinct agent CLIs (or models), as the reviewer's supervisor recorded them on each verdict.
- **Evidence.** A task's `criteria` (its done_when, one per line, or a list in a task file):
  an approval gives evidence for each: `path[:line]` in the reviewed commit, a test name, or a
  command and the digest of its output. The core checks the shape; `verify` checks that every
  path exists in the reviewed commit (services/verify/evidence.py).
"""
from __future__ import annotations

import fnmatch
from typing import Iterable

from gitliza.core.encoding.lazyre import lazy
from gitliza.core.model import Config, Evidence, ReviewLease, ReviewVote, Task
from gitliza.errors import ValidationError

DIVERSITY = ("off", "cli", "model")
EVIDENCE_KINDS = ("path", "test", "command")
MAX_QUORUM = 9
_RULE = lazy(r"^(label|scope):([^=\s]+)=([1-9])$")
_DIGEST = lazy(r"^sha256:[0-9a-f]{64}$")
_BULLET = lazy(r"^\s*(?:[-*+]|\d+[.)])\s+")


def rubber_stamp_fix(config: Config) -> str:
    """What the rubber-stamping alarm adds while one approval is enough: the config that fixes
    it; nothing once a quorum of two or more is set."""
    if config.review_quorum >= 2:
        return ""
    return ("; fix: `git liza config review_quorum 2` (two distinct reviewers approve each "
            "review commit; `review_diversity cli` asks for two CLIs)")


def parse_rules(text: str | None) -> tuple[tuple[str, str, int], ...]:
    """`quorum_rules` as (kind, pattern, quorum) triples; a malformed rule is one-line refused."""
    out = []
    for word in (text or "").split():
        m = _RULE.match(word)
        if m is None:
            raise ValidationError(f"quorum rule {word!r} is not label:NAME=N or scope:GLOB=N "
                                  f"(N from 1 to {MAX_QUORUM})")
        out.append((m.group(1), m.group(2), int(m.group(3))))
    return tuple(out)


def canonical_rules(value: object) -> str | None:
    """The stored form of `quorum_rules`: the rules, one space apart; None when there are none."""
    rules = parse_rules(str(value or ""))
    return " ".join(f"{k}:{p}={n}" for k, p, n in rules) or None


def check_diversity(value: object) -> str:
    word = str(value or "").strip().lower()
    if word not in DIVERSITY:
        raise ValidationError(f"config review_diversity must be one of {', '.join(DIVERSITY)}, "
                              f"got {value!r}")
    return word


def _scopes(task: Task) -> tuple[str, ...]:
    """The task's lock scope (globs of the paths it may change): what scope rules match."""
    return task.lock_scope


def _scope_matches(rule: str, scopes: Iterable[str]) -> bool:
    """A rule's glob meets a task's lock scope when either names paths of the other: the same
    glob, a scope inside the rule (`migrations/0001.sql` in `migrations/**`), or a scope that
    covers the rule's paths (`**` takes everything)."""
    return any(s == rule or fnmatch.fnmatchcase(s, rule) or fnmatch.fnmatchcase(rule, s)
               for s in scopes)


def required(config: Config, task: Task) -> int:
    """The approvals of one review commit `task` needs."""
    need = config.review_quorum
    scopes = _scopes(task)
    for kind, pattern, n in parse_rules(config.quorum_rules):
        if kind == "label" and pattern in task.labels or \
                kind == "scope" and _scope_matches(pattern, scopes):
            need = max(need, n)
    return need


def votes_of(task: Task) -> tuple[ReviewVote, ...]:
    """The approvals of the task's current review commit (older ones do not count)."""
    return tuple(v for v in task.review_votes if v.commit == task.review_commit)


def tally(config: Config, task: Task) -> str:
    """`1/2 (reviewer-1)`: the approvals so far over the quorum, for show, status and the web."""
    votes = votes_of(task)
    who = ", ".join(v.agent for v in votes)
    return f"{len(votes)}/{required(config, task)}" + (f" ({who})" if who else "")


# -- review leases: the first in reviewing_by, the others in co_reviews --------------------------
def reviewers(task: Task) -> tuple[str, ...]:
    """Every agent holding a review lease on the task (live or not)."""
    first = (task.reviewing_by,) if task.reviewing_by else ()
    return first + tuple(r.agent for r in task.co_reviews)


def review_lease(task: Task, agent: str) -> str | None:
    """When `agent`'s review lease on the task expires; None when it holds none."""
    if task.reviewing_by == agent:
        return task.review_lease_expires
    return next((r.expires for r in task.co_reviews if r.agent == agent), None)


def with_review_lease(task: Task, agent: str, expires: str | None) -> Task:
    """The task with `agent`'s review lease set to `expires` (None: dropped). The first lease is
    `reviewing_by`, as on every board before review quorums; a second goes to `co_reviews`."""
    from dataclasses import replace
    if task.reviewing_by == agent or task.reviewing_by is None and expires is not None and \
            not any(r.agent == agent for r in task.co_reviews):
        return replace(task, reviewing_by=agent if expires else None,
                       review_lease_expires=expires)
    rest = tuple(r for r in task.co_reviews if r.agent != agent)
    if expires is None:
        return replace(task, co_reviews=rest)
    mine = ReviewLease(agent=agent, expires=expires)
    return replace(task, co_reviews=tuple(r if r.agent != agent else mine
                                          for r in task.co_reviews)
                   if len(rest) < len(task.co_reviews) else task.co_reviews + (mine,))


def room(config: Config, task: Task, agent: str) -> bool:
    """Whether `agent` may take a review lease on the task beside those already held: the
    approvals so far and the leases held leave the quorum short of reviewers, and `agent` holds
    none and has not approved this commit."""
    if agent in reviewers(task) or any(v.agent == agent for v in votes_of(task)):
        return False
    return len(votes_of(task)) + len(reviewers(task)) < required(config, task)


def diversity_key(config: Config, cli: str | None, model: str | None) -> str | None:
    return {"cli": cli, "model": model}.get(config.review_diversity)


def check_vote(config: Config, task: Task, agent: str, cli: str | None,
               model: str | None) -> None:
    """An approval `agent` may add to the task's votes: not twice on one commit, and distinct
    enough under review_diversity."""
    votes = votes_of(task)
    if any(v.agent == agent for v in votes):
        raise ValidationError(f"{agent} already approved {task.id} at "
                              f"{str(task.review_commit)[:12]}: another reviewer must")
    if config.review_diversity == "off":
        return
    mine = diversity_key(config, cli, model)
    if not mine:
        raise ValidationError(f"review_diversity {config.review_diversity}: {agent}'s verdict "
                              f"has no {config.review_diversity} recorded by its supervisor",
                              hint="run reviewers under `git liza agent` (it records them)")
    same = [v.agent for v in votes if diversity_key(config, v.cli, v.model) == mine]
    if same:
        raise ValidationError(f"review_diversity {config.review_diversity}: {same[0]} already "
                              f"approved {task.id} with {config.review_diversity} {mine}; "
                              "the next approval must come from another")


def criteria_of(done_when: str | None) -> tuple[str, ...]:
    """A done_when of several lines as its criteria (one per non-empty line, a list's bullet
    dropped); one line (or none) lists no criteria."""
    lines = [_BULLET.sub("", line).strip() for line in (done_when or "").splitlines()]
    lines = [line for line in lines if line]
    return tuple(lines) if len(lines) > 1 else ()


def check_criteria(criteria: tuple[str, ...]) -> None:
    for c in criteria:
        if not c.strip() or "\n" in c:
            raise ValidationError("each acceptance criterion is one non-empty line")
    if len(criteria) > 50:
        raise ValidationError(f"at most 50 acceptance criteria, got {len(criteria)}")


def parse_evidence(text: str) -> Evidence:
    """`N=path:src/x.py:12`, `N=test:tests/test_x.py::test_y`,
    `N=command:pytest -q@sha256:<hex>` (the CLI's and MCP's `--evidence`)."""
    head, sep, rest = text.partition("=")
    kind, sep2, ref = rest.partition(":")
    if not sep or not sep2 or not head.strip().isdigit():
        raise ValidationError(f"evidence {text!r} is not N=KIND:REF (KIND: "
                              f"{', '.join(EVIDENCE_KINDS)})")
    digest = None
    if kind == "command" and "@" in ref:
        ref, _, digest = ref.rpartition("@")
    ev = Evidence(criterion=int(head), kind=kind, ref=ref.strip(), digest=digest or None)
    check_evidence_shape(ev)
    return ev


def check_evidence_shape(ev: Evidence) -> None:
    if ev.kind not in EVIDENCE_KINDS:
        raise ValidationError(f"evidence kind {ev.kind!r} is not one of "
                              f"{', '.join(EVIDENCE_KINDS)}")
    if not ev.ref or "\n" in ev.ref or len(ev.ref) > 500:
        raise ValidationError(f"criterion {ev.criterion}'s evidence needs a one-line reference")
    if ev.kind == "command":
        if ev.digest is None or not _DIGEST.match(ev.digest):
            raise ValidationError(f"criterion {ev.criterion}: a command's evidence needs the "
                                  "digest of its output, `CMD@sha256:<64 hex>`")
    elif ev.digest is not None:
        raise ValidationError(f"criterion {ev.criterion}: only a command's evidence has a digest")
    if ev.kind == "path":
        path, line = split_path(ev.ref)
        if path.startswith("/") or ".." in path.split("/") or line is not None and line < 1:
            raise ValidationError(f"criterion {ev.criterion}: evidence path {ev.ref!r} must be "
                                  "relative to the repository, with a line from 1")


def split_path(ref: str) -> tuple[str, int | None]:
    """`src/x.py:12` -> ("src/x.py", 12); a path without a line -> (path, None)."""
    path, sep, line = ref.rpartition(":")
    if sep and line.isdigit():
        return path, int(line)
    return ref, None


def check_evidence(task: Task, evidence: tuple[Evidence, ...]) -> None:
    """An approval's evidence: one or more for every criterion of the task, none for others."""
    n = len(task.criteria)
    for ev in evidence:
        check_evidence_shape(ev)
        if not 1 <= ev.criterion <= n:
            raise ValidationError(f"evidence for criterion {ev.criterion}: {task.id} has "
                                  f"{n} acceptance criteria")
    missing = [i for i in range(1, n + 1) if all(ev.criterion != i for ev in evidence)]
    if missing:
        first = task.criteria[missing[0] - 1]
        raise ValidationError(f"{task.id}: no evidence for acceptance criterion "
                              f"{', '.join(map(str, missing))} ({first!r})",
                              hint="--evidence N=path:FILE[:LINE] | N=test:NAME | "
                                   "N=command:CMD@sha256:DIGEST, for each criterion")
