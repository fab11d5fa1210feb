"""The forge room (docs/forge.md): a window onto the board on a code forge, one folder per forge
behind one small interface (git-bug's bridges are the model): `github/` now; GitLab or Forgejo
would be a sibling folder implementing `Forge`. The board stays the truth: the bridge
(bridge.py) mirrors each task as a pull request and takes back two kinds of events, the forge's
checks and the human's reviews, through the board's own ops (core/ops/forge.py).

Nothing here is imported by `status`, `add` or `heartbeat`: only `git liza forge ...` loads it."""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Protocol

from gitliza.core.forgerules import Check
from gitliza.errors import LizaError


class ForgeUnreachable(LizaError):
    """The forge did not answer (connection refused, timed out, 5xx after retries): the bridge
    says so, raises the FORGE alarm by lagging, and catches up later; the board goes on."""

    code = "FORGE_UNREACHABLE"


class ForgeRateLimited(ForgeUnreachable):
    """The forge's rate limit (primary or secondary): nothing is sent before `until` (epoch)."""

    code = "FORGE_RATE_LIMITED"

    def __init__(self, message: str, until: float) -> None:
        super().__init__(message)
        self.until = until


class ForgeRefused(LizaError):
    """The forge refused a request (4xx other than a rate limit): a wrong repository, a token
    without access, a pull request the forge will not open."""

    code = "FORGE_REFUSED"


@dataclass(frozen=True)
class PullRequest:
    number: int
    node_id: str
    state: str  # open | closed
    draft: bool
    merged: bool
    head_sha: str
    title: str = ""
    body: str = ""
    merge_commit: str | None = None


@dataclass(frozen=True)
class Review:
    id: int
    user: str
    state: str  # APPROVED | CHANGES_REQUESTED | COMMENTED | DISMISSED | PENDING
    body: str
    commit: str | None
    comments: tuple[tuple[str, int | None, str], ...] = field(default=())


class Forge(Protocol):
    """What the bridge asks of a forge: few calls, each one request or a few (the GitHub one's
    endpoints are listed in docs/forge.md)."""

    def access(self) -> str:
        """The repository's full name, if the token may push to it (else ForgeRefused)."""
        ...

    def find_pull(self, head: str) -> PullRequest | None:
        """The pull request (open or closed) whose head is branch `head`, if any."""
        ...

    def open_pull(self, *, title: str, head: str, base: str, body: str) -> PullRequest:
        """A new draft pull request."""
        ...

    def pull(self, number: int) -> PullRequest: ...

    def edit_pull(self, number: int, *, title: str | None = None, body: str | None = None,
                  state: str | None = None) -> None: ...

    def ready_for_review(self, pr: PullRequest) -> None:
        """Out of draft."""
        ...

    def merge_pull(self, number: int, sha: str) -> str:
        """The forge merges exactly `sha` (config forge_merge on); returns its merge commit."""
        ...

    def labels(self, number: int) -> set[str]: ...

    def add_labels(self, number: int, labels: list[str]) -> None: ...

    def remove_label(self, number: int, label: str) -> None: ...

    def reviews(self, number: int) -> list[Review]:
        """Every review, without its line comments (see `review_comments`)."""
        ...

    def review_comments(self, number: int, review: int) -> tuple[tuple[str, int | None, str], ...]:
        ...

    def comment(self, number: int, commit: str, body: str) -> None:
        """A review comment (event COMMENT) on `commit`: the board's verdicts."""
        ...

    def checks(self, ref: str) -> list[Check]:
        """The check runs and the commit statuses on `ref`."""
        ...

    def rate_limit(self) -> tuple[int, int, float]:
        """(remaining, limit, reset epoch) of the core REST budget."""
        ...
