"""What a push did: its status per ref, and reading it from `git push --porcelain` and the remote.

A lease that no longer holds is STALE and a push that would not fast-forward NON_FAST_FORWARD:
the caller fetches, replays and pushes again (`needs_replay`). A refusal by the remote's hook is
raised as PushRejected, with what the hook printed, because replaying will not change its mind.
"""
from __future__ import annotations

import enum
import re
from dataclasses import dataclass

from gitliza.errors import GitFailure
from gitliza.git.gitcmd import PROGRESS_LINE, Run, error_line


class PushStatus(enum.Enum):
    OK = "ok"  # the remote ref was created or fast-forwarded to local_oid
    UP_TO_DATE = "up-to-date"  # the remote ref already was local_oid
    STALE = "stale"  # the remote ref is not at expected_oid (lease failed or lost race)
    NON_FAST_FORWARD = "non-fast-forward"  # local_oid does not descend from expected_oid: not pushed


class _Outcome:
    """`ok` and `needs_replay` from a push status (a single ref, or a whole atomic push)."""

    status: PushStatus

    @property
    def ok(self) -> bool:
        return self.status in (PushStatus.OK, PushStatus.UP_TO_DATE)

    @property
    def needs_replay(self) -> bool:
        """The remote moved on (or we did not build on it): fetch, replay the local ops, push again."""
        return self.status in (PushStatus.STALE, PushStatus.NON_FAST_FORWARD)


@dataclass(frozen=True)
class PushResult(_Outcome):
    status: PushStatus
    remote: str  # as passed to git: a remote name, a URL or an absolute path
    ref: str
    local_oid: str
    expected_oid: str | None
    summary: str  # git's porcelain summary (e.g. "[rejected] (stale info)"), or why we did not push
    notes: tuple[str, ...] = ()  # what the server hook said for the user (server_notes)


@dataclass(frozen=True)
class MultiPushResult(_Outcome):
    status: PushStatus  # OK / UP_TO_DATE when every ref is; else the first failing ref's status
    remote: str
    results: tuple[PushResult, ...]  # one per update, in order
    notes: tuple[str, ...] = ()


# A line the server hook prints for the pusher on an accepted push (a clock skew): git relays it
# as "remote: gitliza: note: ...".
NOTE = "gitliza: note: "


def server_notes(stderr: str) -> tuple[str, ...]:
    return tuple(dict.fromkeys(line.split(NOTE, 1)[1].strip() for line in stderr.splitlines()
                               if NOTE in line))


class PushRejected(GitFailure):
    """The remote refused the update for a reason a replay will not fix (its hook said no).

    Raised rather than returned: a caller that only checks `needs_replay` must not loop on it, and
    an unchecked refusal must not look like a successful sync. Exit code 3 like any git failure.
    """

    code = "PUSH_REJECTED"

    def __init__(
        self, message: str, *, reason: str, remote_lines: tuple[str, ...], hint: str | None = None
    ) -> None:
        super().__init__(message, hint=hint)
        self.reason = reason
        self.remote_lines = remote_lines


def push_summary(status: PushStatus, old: str | None, new: str) -> str:
    """What `git push --porcelain` says for this outcome (a summary reads the same either way)."""
    if status == PushStatus.STALE:
        return "[rejected] (stale info)"
    if status == PushStatus.UP_TO_DATE:
        return "[up to date]"
    return "[new reference]" if old is None else f"{old[:7]}..{new[:7]}"


def porcelain_status(run: Run, remote: str, ref: str) -> tuple[str, str]:
    """(flag, summary) from `git push --porcelain`'s line for `ref`.

    The line is "<flag> TAB <src>:<dst> TAB <summary>", e.g. "!", "[rejected] (stale info)".
    """
    for line in run.stdout.splitlines():
        parts = line.split("\t")
        if len(parts) == 3 and parts[1].endswith(f":{ref}") and len(parts[0]) == 1:
            return parts[0], parts[2]
    # No status line: git failed before talking refs (unreachable, auth, no such repository).
    raise GitFailure(f"git push to {remote} failed: {error_line(run.stderr)}")


def status_of(remote: str, flag: str, summary: str) -> PushStatus:
    """Status from a porcelain flag: " " fast-forward, "*" new, "=" up to date, "!" rejected."""
    if flag == "=":
        return PushStatus.UP_TO_DATE
    if flag in (" ", "*", "+"):  # "+" (forced) cannot happen: the ancestry check ran first
        return PushStatus.OK
    if flag == "!" and summary.startswith("[rejected]"):
        return _client_side_rejection(remote, summary)
    raise GitFailure(f"git push to {remote} failed: {flag} {summary}")


def remote_rejection(
    remote: str, ref: str, expected: str | None, now: str | None, summary: str, stderr: str
) -> PushStatus:
    if now != expected:
        # The remote moved while we pushed: we lost the race at its ref lock ("failed to update
        # ref", "cannot lock ref ... but expected ..."), whatever the server's wording.
        return PushStatus.STALE
    lines = _remote_lines(stderr)
    reason = "; ".join(lines) or summary
    raise PushRejected(
        f"{remote} refused the update of {ref}: {reason}", reason=reason, remote_lines=lines,
        hint=summary if lines else None,
    )


def _client_side_rejection(remote: str, summary: str) -> PushStatus:
    # git compared the advertised value with our lease (or found the ref where none was expected).
    if any(word in summary for word in ("stale info", "fetch first", "already exists")):
        return PushStatus.STALE
    if "non-fast-forward" in summary:
        return PushStatus.NON_FAST_FORWARD
    raise GitFailure(f"git push to {remote} rejected: {summary}")


def _remote_lines(stderr: str) -> tuple[str, ...]:
    """What the remote's hooks printed (git shows it as `remote: ...`), minus progress noise."""
    lines = []
    for raw in re.split(r"[\r\n]", stderr):
        if raw.startswith("remote:"):
            text = raw[len("remote:"):].strip()
            if text and not PROGRESS_LINE.search(text):
                lines.append(text)
    return tuple(lines)
