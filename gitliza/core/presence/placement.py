"""Which work an agent may take given the machine it runs on: a drained machine's agents
finish what they hold and take nothing new (`git liza drain`), and a task that `needs` labels goes
only to an agent whose supervisor offers them all (`team --labels gpu`, `add --needs gpu`).

An agent's machine and labels are those its supervisor recorded on its generation token (the
`supervise` op): an agent run by no supervisor is on no machine and offers no label. The claim
ops ask these rules (so a sandboxed agent cannot get round them by claiming by hand), and so do
`claimable` and `reviewable` (so a supervisor does not try).

Pure: the board in, the answers out.
"""
from __future__ import annotations

from gitliza.core.encoding.lazyre import lazy
from gitliza.core.board import Board
from gitliza.core.model import Supervisor, Task
from gitliza.errors import ValidationError

LABEL = lazy(r"[A-Za-z0-9][A-Za-z0-9_.:-]{0,63}")
MACHINE = lazy(r"[^\s,]{1,253}")

def check_labels(labels: tuple[str, ...] | list[str], what: str = "label") -> tuple[str, ...]:
    """Labels split on commas, stripped, each checked; sorted without duplicates."""
    out: set[str] = set()
    for item in labels:
        for part in str(item).split(","):
            part = part.strip()
            if not part:
                continue
            if not LABEL.fullmatch(part):
                raise ValidationError(f"{what} {part!r} is not a label (letters, digits, "
                                      "'_', '.', ':', '-'; at most 64)")
            out.add(part)
    return tuple(sorted(out))

def check_machine(name: str) -> str:
    name = name.strip()
    if not MACHINE.fullmatch(name):
        raise ValidationError(f"machine {name!r} is not a machine name (a host name or "
                              "`liza.machine`: no spaces or commas)")
    return name

def _token(board: Board, agent: str) -> Supervisor | None:
    sup = board.get("supervisors", agent)
    return sup if isinstance(sup, Supervisor) else None

def machine_of(board: Board, agent: str) -> str | None:
    sup = _token(board, agent)
    return sup.host if sup is not None else None

def labels_of(board: Board, agent: str) -> tuple[str, ...]:
    sup = _token(board, agent)
    return sup.labels if sup is not None else ()

def drained_machine(board: Board, agent: str) -> str | None:
    """The machine `agent` runs on if the human drained it, else None."""
    host = machine_of(board, agent)
    return host if host is not None and host in board.control.drained else None

def unmet(board: Board, agent: str, task: Task) -> list[str]:
    """The labels `task` needs that `agent`'s supervisor does not offer."""
    if not task.needs:
        return []
    have = set(labels_of(board, agent))
    return [n for n in task.needs if n not in have]

def may_take(board: Board, agent: str, task: Task) -> bool:
    """Whether `agent` may take `task` as far as its machine goes: a drained machine's agent only
    continues a task that is already its own; the task's needs covered."""
    if drained_machine(board, agent) is not None and task.assigned_to != agent:
        return False
    return not unmet(board, agent, task)

def offered(board: Board, now: str) -> set[str]:
    """The labels some live supervisor on an undrained machine offers now."""
    drained = set(board.control.drained)
    out: set[str] = set()
    for sup in board.values("supervisors"):
        assert isinstance(sup, Supervisor)
        if sup.expires is not None and sup.expires > now and sup.host not in drained:
            out.update(sup.labels)
    return out

def label_waits(board: Board, now: str, tasks: list[Task]) -> list[tuple[Task, list[str]]]:
    """Of `tasks`, those that need a label no live, undrained supervisor offers, and which."""
    have = offered(board, now)
    out = []
    for t in tasks:
        missing = [n for n in t.needs if n not in have]
        if missing:
            out.append((t, missing))
    return out
