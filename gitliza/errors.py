"""One error hierarchy, mapped to the spec's exit-code taxonomy in one place.

Every failure that reaches the user is a LizaError subclass; the CLI prints `str(err)` as one line on
stderr and exits with `err.exit_code`. Nothing else in the package chooses exit codes: `classify`
maps any exception (a LizaError, a missing module, a usage error, the environment's refusal, a
bug) to the code, exit code and line that the CLI, the MCP server and the web board render alike.
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
# A long-lived command stopped by Ctrl-C: 128 + SIGINT, as a shell reports it, and as git does
# when it ran `git-liza` (it re-raises the signal on itself), so both ways give the same status.
EXIT_INTERRUPTED = 130


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


class AlreadyHeld(IllegalTransition):
    """Another agent holds the task's lease (a lost claim race, the usual case for supervisors
    claiming at once): `holder` is who; the supervisor says it in one short line."""

    def __init__(self, message: str, *, task: str, holder: str, hint: str | None = None) -> None:
        super().__init__(message, hint=hint)
        self.task, self.holder = task, holder


class PermissionDenied(ValidationError):
    """The actor's role may not perform this op."""

    code = "NOT_ALLOWED"


class LeaseLost(ValidationError):
    """The actor's lease expired or was taken over: it must stand down."""

    code = "LEASE_LOST"


class ScopeViolation(ValidationError):
    """A submit whose changes leave the task's lock scope (docs/locks.md): a structural failure,
    corrected by the coder or the planner, never retried as if it were a crash."""

    code = "SCOPE_VIOLATION"


class NoBoard(ValidationError):
    """No board in this repository (refs/liza/state is missing or empty). The CLI completes the
    hint: when the clone's remote holds a board, `git liza pull` is what to run, not `init`."""

    def __init__(self, message: str = "no board here", *,
                 hint: str | None = "run `git liza init GOAL` first") -> None:
        super().__init__(message, hint=hint)


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


# The codes of what is not a LizaError (the LizaErrors' own are their `code`).
CODE_USAGE = "USAGE"  # the command line itself is wrong (click's usage errors)
CODE_MISSING_DEPENDENCY = MissingDependency.code
CODE_GIT_FAILURE = GitFailure.code
CODE_INTERNAL = "INTERNAL"  # a bug: please report it


class Failure:
    """What every front end says of a failure: the error code, the exit code, one line. The CLI
    prints the line (and, with --json, the three as a document), the MCP server returns them as a
    tool error, the web board as its status and headers: `classify` decides, they only render.

    A plain class, not a `typing.NamedTuple`: a named tuple's class is compiled with `exec` when
    it is defined, ~1 ms of every command's start (this module is the first gitliza loads)."""

    __slots__ = ("code", "exit_code", "line", "bug")

    def __init__(self, code: str, exit_code: int, line: str, bug: bool = False) -> None:
        self.code = code
        self.exit_code = exit_code
        self.line = line
        self.bug = bug  # not foreseen: LIZA_DEBUG=1 shows its traceback instead

    def _key(self) -> tuple[str, int, str, bool]:
        return (self.code, self.exit_code, self.line, self.bug)

    def __eq__(self, other: object) -> bool:
        return isinstance(other, Failure) and self._key() == other._key()

    def __hash__(self) -> int:
        return hash(self._key())

    def __repr__(self) -> str:
        return (f"Failure(code={self.code!r}, exit_code={self.exit_code!r}, line={self.line!r}, "
                f"bug={self.bug!r})")

    def to_json(self) -> dict[str, object]:
        return {"code": self.code, "exit_code": self.exit_code, "message": self.line}


def classify(e: BaseException) -> Failure:
    """The one mapping from an exception to (code, exit code, one line), for every front end.

    A LizaError says it itself. A missing Python module is a missing dependency (5); a usage error
    of the command line (anything with click's `format_message`) is USAGE (1); what the
    environment refused (see `environmental`) is the LizaError naming its cause and fix; anything
    else is a bug, still one line and an exit code: GIT_FAILURE (3) from the git side (an OSError,
    pygit2), else INTERNAL (4)."""
    if isinstance(e, LizaError):
        return Failure(e.code, e.exit_code, str(e))
    if isinstance(e, ModuleNotFoundError):  # e.g. pygit2 missing from this environment
        return Failure(CODE_MISSING_DEPENDENCY, EXIT_DEPENDENCY,
                       f"missing dependency: Python module {e.name!r} is not installed "
                       "(reinstall gitliza with its dependencies: pip install gitliza)")
    fmt = getattr(e, "format_message", None)
    if callable(fmt):
        return Failure(CODE_USAGE, EXIT_VALIDATION, " ".join(str(fmt()).split()))
    known = environmental(e)
    if known is not None:  # the environment refused: its cause and fix, no bug report
        return classify(known)
    git_side = isinstance(e, OSError) or type(e).__module__.startswith("pygit2")
    text = f"{type(e).__name__}: {' '.join(str(e).split())}"
    return Failure(CODE_GIT_FAILURE if git_side else CODE_INTERNAL,
                   EXIT_GIT if git_side else EXIT_INCONSISTENT,
                   f"{'git operation failed' if git_side else 'internal error'}: {text} "
                   "(LIZA_DEBUG=1 shows the traceback; please report it)", bug=True)


def environmental(e: BaseException) -> LizaError | None:
    """An exception that is not a LizaError but not a bug either: the environment refused (a
    repository owned by another user, permission denied, a read-only or full file system, a
    deleted working directory). The LizaError that names the cause and the fix, or None."""
    import errno
    import os
    import re
    text = " ".join(str(e).split())
    if "not owned by current user" in text:
        m = re.search(r"repository path '([^']*)'", text)
        path = m.group(1) if m else "the repository"
        return GitFailure(f"{path} is owned by another user: git refuses to work in it",
                          hint=f"if you trust it: git config --global --add safe.directory {path}")
    code = getattr(e, "errno", None)
    if code == errno.ENOSPC or "No space left on device" in text:
        return GitFailure(f"no space left on device ({text})", hint="free some space and retry; "
                          "`git liza doctor --fix` removes what a failed write left")
    if code == errno.EROFS or "Read-only file system" in text:
        return GitFailure(f"read-only file system ({text})",
                          hint="run gitliza where the repository is writable")
    if code in (errno.EACCES, errno.EPERM) or "Permission denied" in text:
        return GitFailure(f"permission denied ({text})",
                          hint="make the repository writable for this user, or run as its owner")
    if isinstance(e, FileNotFoundError):
        try:
            os.getcwd()
        except FileNotFoundError:
            return ValidationError("the current directory no longer exists (it was deleted)",
                                   hint="cd into the repository again")
    return None


def hint_for(e: BaseException) -> str | None:
    """The fix for `e` when the environment caused it (see `environmental`), for an error that
    keeps its own words (what was being done) and adds the fix."""
    known = environmental(e)
    return known.hint if known is not None else None
