"""One error hierarchy, mapped to the spec's exit-code taxonomy in one place.

Every failure that reaches the user is a LizaError subclass; the CLI prints `str(err)` as one line on
stderr and exits with `err.exit_code`. Nothing else in the package chooses exit codes.
"""
from __future__ import annotations

OK = 0
EXIT_VALIDATION = 1
EXIT_CONFLICT = 2
EXIT_GIT = 3
EXIT_INCONSISTENT = 4
EXIT_DEPENDENCY = 5
# Not a failure of ours: the reader of stdout went away (`git liza status | head`). Quietly, with
# the status a shell gives a process SIGPIPE ended (128 + 13), as git's own commands end then.
EXIT_BROKEN_PIPE = 141


class LizaError(Exception):
    """Base class. `hint` is appended to the message as the 'what to do' part."""

    exit_code = EXIT_VALIDATION
    code = "ERROR"

    def __init__(self, message: str, *, hint: str | None = None) -> None:
        super().__init__(message)
        self.message = message
        self.hint = hint

    def __str__(self) -> str:
        one = " ".join(self.message.split())  # always one line
        return f"{one} ({self.hint})" if self.hint else one


class ValidationError(LizaError):
    """Bad input or a precondition that does not hold. Nothing was changed."""

    exit_code = EXIT_VALIDATION
    code = "VALIDATION"


class IllegalTransition(ValidationError):
    """The transition table (or a guard on it) forbids this op. Nothing was changed."""

    code = "INVALID_TRANSITION"


class PermissionDenied(ValidationError):
    """The actor's role may not perform this op."""

    code = "NOT_ALLOWED"


class LeaseLost(ValidationError):
    """The actor's lease expired or was taken over: it must stand down."""

    code = "LEASE_LOST"


class NotFound(ValidationError):
    code = "NOT_FOUND"


class ConcurrencyConflict(LizaError):
    """CAS lost after every retry, or a ref lock stayed held. Nothing was changed."""

    exit_code = EXIT_CONFLICT
    code = "CONCURRENCY_CONFLICT"


class GitFailure(LizaError):
    """A git operation failed (merge conflict, worktree, transport...)."""

    exit_code = EXIT_GIT
    code = "GIT_FAILURE"


class InconsistentState(LizaError):
    """A broken invariant or a history that does not replay."""

    exit_code = EXIT_INCONSISTENT
    code = "INCONSISTENT_STATE"


class MissingDependency(LizaError):
    """An external program or library is missing."""

    exit_code = EXIT_DEPENDENCY
    code = "MISSING_DEPENDENCY"


def unexpected(e: BaseException) -> tuple[bool, int, str]:
    """An exception that is not a LizaError (a bug, or an unexpected environment), still mapped
    here: whether it came from the git side (an OSError, pygit2), its exit code, and its text on
    one line."""
    git_side = isinstance(e, OSError) or type(e).__module__.startswith("pygit2")
    return (git_side, EXIT_GIT if git_side else EXIT_INCONSISTENT,
            f"{type(e).__name__}: {' '.join(str(e).split())}")
