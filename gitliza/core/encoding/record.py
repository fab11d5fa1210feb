"""The commit message of a transition: a human subject line and `Liza-*` trailers (public format).

    claim task-3 (UNCLAIMED -> CLAIMED) by coder-1

    Liza-Op: claim
    Liza-Actor: coder-1
    Liza-Task: task-3
    Liza-From: UNCLAIMED
    Liza-To: CLAIMED
    Liza-Time: 2025-01-17T14:06:00Z
    Liza-Args: {"base_commit":"...","task":"task-3","worktree":".worktrees/task-3"}

`git interpret-trailers --parse` and `git log --format=%(trailers)` read it. Liza-Args is compact
JSON with ASCII escapes, so it is always one line whatever the op's text contains.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from gitliza.core.terminal import safe
from gitliza.errors import ValidationError

if TYPE_CHECKING:  # the ops load where a record is parsed: `status` asks `is_seal_message` only
    from gitliza.core.ops.base import Event, Op

TRAILER_KEYS = ("Liza-Op", "Liza-Actor", "Liza-Task", "Liza-From", "Liza-To", "Liza-Time",
                "Liza-Args")
_REQUIRED = ("Liza-Op", "Liza-Actor", "Liza-Time", "Liza-Args")


def _one_line(text: str, limit: int = 200) -> str:
    text = " ".join(text.split())
    return text if len(text) <= limit else text[: limit - 3] + "..."


def args_json(args: dict[str, Any]) -> str:
    import json  # here, not at the top: a command that only reads the board never needs it

    return json.dumps(args, sort_keys=True, separators=(",", ":"), ensure_ascii=True)


def message(op: Op, event: Event, legacy_subject: bool = False) -> str:
    """The commit message. The subject is board text (a reason, a description) that stock `git
    log` prints raw: its control characters are escaped (core/terminal.py), so an escape
    sequence never reaches a terminal through it. `legacy_subject`: the subject as gitliza wrote
    it before that (verify still accepts it, reported as legacy)."""
    trailers = [("Liza-Op", op.NAME), ("Liza-Actor", op.actor)]
    if event.task:
        trailers.append(("Liza-Task", event.task))
    if event.from_state is not None:
        trailers.append(("Liza-From", event.from_state.value))
    if event.to_state is not None:
        trailers.append(("Liza-To", event.to_state.value))
    trailers += [("Liza-Time", op.time), ("Liza-Args", args_json(op.args()))]
    body = "\n".join(f"{k}: {v}" for k, v in trailers)
    subject = _one_line(event.summary if legacy_subject else safe(event.summary))
    return f"{subject}\n\n{body}\n"


@dataclass(frozen=True)
class Record:
    """An op read back from its commit: the op, its trailers and the subject line."""

    op: Op
    trailers: dict[str, str]
    subject: str

    @property
    def task(self) -> str | None:
        return self.trailers.get("Liza-Task")


def parse(msg: str) -> Record:
    """The op a commit recorded. Strict: every Liza-* trailer once, args valid for the op."""
    paragraphs = [p for p in msg.strip("\n").split("\n\n") if p.strip()]
    if len(paragraphs) < 2:
        raise ValidationError("commit message has no Liza-* trailers")
    trailers: dict[str, str] = {}
    for line in paragraphs[-1].splitlines():
        key, sep, value = line.partition(": ")
        if not sep or not key.startswith("Liza-"):
            raise ValidationError(f"unexpected trailer line {line[:60]!r}")
        if key in trailers:
            raise ValidationError(f"trailer {key} appears twice")
        if key not in TRAILER_KEYS:
            raise ValidationError(f"unknown trailer {key}")
        trailers[key] = value
    missing = [k for k in _REQUIRED if k not in trailers]
    if missing:
        raise ValidationError(f"missing trailer(s) {', '.join(missing)}")
    import json

    try:
        args = json.loads(trailers["Liza-Args"])
    except json.JSONDecodeError as e:
        raise ValidationError(f"Liza-Args is not JSON: {e}") from None
    from gitliza.core.ops.base import op_from_record
    op = op_from_record(trailers["Liza-Op"], trailers["Liza-Actor"], trailers["Liza-Time"], args)
    return Record(op=op, trailers=trailers, subject=paragraphs[0].strip())


def check_consistent(rec: Record, event: Event) -> None:
    """The descriptive trailers (task, from, to) must say what replaying the op did."""
    want = {"Liza-Task": event.task,
            "Liza-From": event.from_state.value if event.from_state else None,
            "Liza-To": event.to_state.value if event.to_state else None}
    for key, value in want.items():
        if rec.trailers.get(key) != value:
            raise ValidationError(f"trailer {key} says {rec.trailers.get(key)!r}, "
                                  f"replay says {value!r}")


# Liveness, not protocol: a coder's or reviewer's lease extended, a supervisor's token renewed.
# They make most of the commits of a running team; `git liza log` leaves them out unless --all.
LIVENESS = {"heartbeat": None, "supervise": "renew"}  # op -> the mode that is liveness (None: any)


def is_seal_message(message: str) -> bool:
    """Whether a state commit's message records the `seal` op (cheap: no parse)."""
    return "\nLiza-Op: seal\n" in message


# Rows that say how the team ran, not what happened to the work: a supervisor's start and end,
# an agent run's usage. `log` and the web timeline show them when asked (they were
# nearly half of a small team's commits).
BOOKKEEPING = frozenset({"supervise", "usage"})


def is_bookkeeping(op: str | None, args: dict[str, Any] | None) -> bool:
    """Liveness, or a supervisor's start/end, or a run's usage record."""
    return op in BOOKKEEPING or is_liveness(op, args)


def is_liveness(op: str | None, args: dict[str, Any] | None) -> bool:
    """Whether a transition (its Liza-Op and Liza-Args) only keeps a lease or a token alive."""
    if op not in LIVENESS:
        return False
    mode = LIVENESS[op]
    return mode is None or (args or {}).get("mode") == mode

