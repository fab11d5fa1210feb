"""The human's actions on the web board: each one a real transition of the board, as the human
actor (signed with the human's key where this process holds it, as any command's), through the
same paths the CLI's commands take (gitliza/services/transitions.py do_op, the control ops,
gitliza/governance/checkpoint.py). A refused action raises the same LizaError the CLI would, whose
one line the page shows; the board does not move."""
from __future__ import annotations

import re
from typing import TYPE_CHECKING, Any, Callable, Mapping

from gitliza.errors import ValidationError
from gitliza.git.store import Committed
from gitliza.services.transitions import do_op, transition_data

if TYPE_CHECKING:
    from gitliza.services.api import Liza

Form = Mapping[str, str]


def _need(form: Form, key: str, what: str) -> str:
    value = (form.get(key) or "").strip()
    if not value:
        raise ValidationError(f"{what} is required")
    return value


def _opt(form: Form, key: str) -> str | None:
    return (form.get(key) or "").strip() or None


def pause(liza: Liza, form: Form) -> Committed:
    from gitliza.core.ops.control import Pause
    done: Committed = liza.do(Pause, reason=_opt(form, "reason"))
    return done


def resume(liza: Liza, form: Form) -> Committed:
    from gitliza.core.ops.control import Resume
    done: Committed = liza.do(Resume, decision=_opt(form, "decision"), note=_opt(form, "note"))
    return done


def abort(liza: Liza, form: Form) -> Committed:
    from gitliza.core.ops.control import AbortOp
    done: Committed = liza.do(AbortOp, reason=_opt(form, "reason"))
    return done


def checkpoint(liza: Liza, form: Form) -> Committed:
    from gitliza.governance.checkpoint import open_checkpoint
    opened = open_checkpoint(liza, _opt(form, "reason") or "human review")
    assert opened.done is not None
    return opened.done


def note(liza: Liza, form: Form) -> Committed:
    from gitliza.core.ops.journal import Note
    return do_op(liza, Note, message=_need(form, "message", "a note's message"),
                 for_task=_opt(form, "for_task"))


def unblock(liza: Liza, form: Form) -> Committed:
    """BLOCKED -> UNCLAIMED. An answer to the task's blocked_questions goes in the same
    transition, as a human note for the task (what the next coder's briefing shows): one commit,
    and a refused unblock records nothing."""
    from gitliza.core.ops.planning import Unblock
    task = _need(form, "task", "the task")
    return do_op(liza, Unblock, task=task, answer=_opt(form, "answer"))


def rescope(liza: Liza, form: Form) -> Committed:
    from gitliza.core.ops.planning import Rescope
    into = tuple(x for x in re.split(r"[\s,]+", _need(form, "into", "the successor ids")) if x)
    return do_op(liza, Rescope, task=_need(form, "task", "the task"), into=into,
                 reason=_need(form, "reason", "a reason"))


def abandon(liza: Liza, form: Form) -> Committed:
    from gitliza.core.ops.planning import Abandon
    return do_op(liza, Abandon, task=_need(form, "task", "the task"),
                 reason=_need(form, "reason", "a reason"))


ACTIONS: dict[str, Callable[[Any, Form], Committed]] = {
    "pause": pause, "resume": resume, "abort": abort, "checkpoint": checkpoint, "note": note,
    "unblock": unblock, "rescope": rescope, "abandon": abandon}


def perform(liza: Liza, name: str, form: Form) -> dict[str, Any]:
    """Run action `name`; what it produced as `--json` would print it (LizaError: refused)."""
    act = ACTIONS.get(name)
    if act is None:
        raise ValidationError(f"no action {name!r}", hint="actions: " + ", ".join(ACTIONS))
    done = act(liza, form)
    return transition_data(done)
