"""The clone's record of local ops a sync dropped: acknowledged work is never dropped
silently.

A sync that replays this clone's ops on the remote's board drops those that no longer apply (a
partition healed: another machine did the same work first). Whichever process ran that sync (an
agent's auto-sync, the remote follower, a human's `git liza sync`), the drop is appended to
`<git common dir>/liza/dropped.jsonl`, one line per sync, with the rescue ref that keeps the
dropped work (rescue.py) or, where no branch held any, the dropped ops' original commits. From
there it reaches the human three ways: the clone's remote follower prints each new line in the
team's output (follower.py), and the watcher raises a DROPPED_OPS alarm (`alerts`: the alarm is
about this clone's files, not the board, so it is built here rather than in core/reports/alarms.py) while
the entry is younger than a day and its rescue ref is still there, which `git liza watch` prints
and the team's watcher sends to the escalation webhook.
"""
from __future__ import annotations

import json
import os
import time
from pathlib import Path
from typing import Any, Iterable

from gitliza.core.reports.alarms import Alert, Level
from gitliza.git.repository import common_dir

FILE = "dropped.jsonl"
WINDOW = 86400  # seconds an entry raises its alarm (unless its rescue ref was deleted sooner)


def _path(repo: Any) -> Path:
    return common_dir(repo) / "liza" / FILE


def record(repo: Any, remote: str, dropped: Iterable[Any], rescued: str | None,
           now: float, supersedes: str | None = None) -> str | None:
    """Append one sync's drops (`Dropped` records); a write failure loses only the record.
    Returns the entry's id (None: nothing dropped). The sync records its drops as soon as the
    board has moved, then once more with the rescue ref that keeps their work, `supersedes`
    naming the first record: only the newer one is said and alarmed."""
    ops = [{"op": d.op, "actor": d.actor, "task": d.task, "time": d.time,
            "original": d.original, "reason": d.reason} for d in dropped]
    if not ops:
        return None
    ident = f"{now:.6f}-{ops[0]['original'][:12]}"
    entry: dict[str, Any] = {"id": ident, "at": now, "remote": remote, "rescued": rescued,
                             "ops": ops}
    if supersedes:
        entry["supersedes"] = supersedes
    line = json.dumps(entry, sort_keys=True) + "\n"
    path = _path(repo)
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        fd = os.open(path, os.O_WRONLY | os.O_APPEND | os.O_CREAT | os.O_CLOEXEC, 0o644)
        try:
            os.write(fd, line.encode())  # one write of one line: O_APPEND keeps lines whole
        finally:
            os.close(fd)
    except OSError:
        pass
    return ident


def size(repo: Any) -> int:
    """The record's size now: where a reader that wants only new entries starts."""
    try:
        return _path(repo).stat().st_size
    except OSError:
        return 0


def read(repo: Any, offset: int = 0) -> tuple[list[dict[str, Any]], int]:
    """The whole entries from `offset` on, and the offset after the last whole line."""
    try:
        with open(_path(repo), "rb") as f:
            f.seek(offset)
            data = f.read()
    except OSError:
        return [], offset
    out: list[dict[str, Any]] = []
    end = data.rfind(b"\n") + 1  # a line being written is read next time
    for raw in data[:end].splitlines():
        try:
            e = json.loads(raw)
            if isinstance(e, dict) and isinstance(e.get("ops"), list):
                out.append(e)
        except ValueError:
            continue
    return out, offset + end


def current(entries: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """The entries no later one supersedes (the record a sync rewrote with its rescue ref)."""
    gone = {e.get("supersedes") for e in entries} - {None}
    return [e for e in entries if e.get("id") is None or e.get("id") not in gone]


def describe(entry: dict[str, Any]) -> str:
    """One line: what was dropped, at which sync, and where its work is kept."""
    ops = entry["ops"]
    names = ", ".join(f"{o['op']}{' ' + o['task'] if o.get('task') else ''} by {o['actor']}"
                      for o in ops[:5]) + (f" (+{len(ops) - 5} more)" if len(ops) > 5 else "")
    text = (f"{len(ops)} acknowledged op(s) of this clone dropped at the sync with "
            f"{entry['remote']}: {names}; first reason: {ops[0]['reason']}")
    if entry.get("rescued"):
        return text + f"; their work is kept on {entry['rescued']} (docs/multi-machine.md)"
    commits = " ".join(str(o["original"])[:12] for o in ops[:5])
    return text + f"; no branch held their work; their records: git show {commits}"


def alerts(repo: Any, now: float | None = None) -> list[Alert]:
    """The DROPPED_OPS alarms active now (critical: acknowledged work left the board)."""
    return [Alert("DROPPED_OPS", subject, Level.CRITICAL, f"DROPPED OPS: {text}")
            for subject, text in active(repo, time.time() if now is None else now)]


def active(repo: Any, now: float) -> tuple[tuple[str, str], ...]:
    """(subject, text) of the entries that still raise the DROPPED_OPS alarm."""
    entries, _ = read(repo)
    out: list[tuple[str, str]] = []
    for e in current(entries):
        try:
            if now - float(e["at"]) > WINDOW:
                continue
            rescued = e.get("rescued")
            if rescued and repo.references.get(rescued) is None:
                continue  # the human dealt with it (restored, or let it go)
            subject = rescued or str(e["ops"][0]["original"])[:12]
            out.append((subject, describe(e)))
        except (KeyError, TypeError, ValueError, IndexError):
            continue
    return tuple(out)
