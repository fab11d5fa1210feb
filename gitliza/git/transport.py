"""Fetch and push `refs/liza/*` through the `git` executable (DESIGN.md section 4, docs/transport.md).

Besides the board, a fetch can bring the branches the board points at (the integration branch and
the task branches `refs/heads/liza/*`), and `push_refs` pushes several refs in one atomic push, so
that a merge reaches the server as one update of the state ref and the integration branch together
(the server hook judges the integration branch against the board after the push).

Why the executable and not pygit2: it uses the user's ssh and credential setup, and it is the only
path on which the remote's hooks run. The one exception is a plain bare repository on this machine
(no hooks, no transfer configuration) when only the board's own commits move: that fetch or push
is done in process (gitliza/git/direct.py), as git would do it, without its dozen processes.

Why it never hangs: no terminal prompts, no stdin, its own session (nothing can ask a terminal
for a password), and a timeout that kills the whole process group.

No board logic lives here: this module moves oids. Replay after a lost race is the caller's job.
"""
from __future__ import annotations

import enum
import hashlib
import os
import re
import shutil
import signal
import subprocess
import sys
import threading
from dataclasses import dataclass, field
from pathlib import Path
from typing import IO, Any, Callable, Mapping, Sequence

from gitliza.errors import ConcurrencyConflict, GitFailure, MissingDependency, ValidationError

STATE_REF = "refs/liza/state"
BOARD_PREFIX = "refs/liza/"
HEADS = "refs/heads/"
TASK_BRANCHES = "refs/heads/liza/"  # task branches liza/<task>
# Tracking of the remote's task branches: refs/remotes/<ns>/liza-tasks/<task>. Not
# refs/remotes/<ns>/liza/<task>, which is where the board refs (refs/liza/*) are tracked.
TASKS_NAMESPACE = "liza-tasks"
CONFIG_KEY = "liza.remote"  # `git config liza.remote <name-or-url>`: the default sync remote
DEFAULT_REMOTE = "origin"
DEFAULT_TIMEOUT = 120.0  # seconds for one git network command; the board is small

Progress = Callable[[str], None]
"""Receives each line git writes on stderr (progress, `remote:` lines), from a reader thread."""

_OID = re.compile(r"[0-9a-f]{40}([0-9a-f]{24})?")
_PROGRESS_LINE = re.compile(r"\d+% \(\d+/\d+\)")
_KILL_GRACE = 5.0  # seconds to reap a killed git before giving up on it
_READER_GRACE = 1.0  # seconds to drain pipes after git exits (a detached ssh master may hold them)


# --------------------------------------------------------------------------------------------------
# Results


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


@dataclass(frozen=True)
class FetchResult:
    remote: str
    tracking_ref: str  # where the remote's refs/liza/state is mirrored locally
    old_oid: str | None  # tracking ref before the fetch
    new_oid: str | None  # tracking ref after the fetch (None: the remote has no board)
    # The remote branches fetched with the board (refs/heads/... -> oid, as mirrored locally after
    # the fetch): the integration branch and the task branches, when asked for.
    branches: Mapping[str, str] = field(default_factory=dict)

    @property
    def changed(self) -> bool:
        return self.old_oid != self.new_oid


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


# --------------------------------------------------------------------------------------------------
# Running git


@dataclass(frozen=True)
class _Run:
    returncode: int
    stdout: str
    stderr: str


def _git_env() -> dict[str, str]:
    env = dict(os.environ)
    env["GIT_TERMINAL_PROMPT"] = "0"  # fail instead of asking for a username/password
    env["LC_ALL"] = "C"  # we parse git's messages: keep them untranslated
    env.pop("LANGUAGE", None)
    return env


def _git_executable() -> str:
    exe = shutil.which("git")
    if exe is None:
        raise MissingDependency("the git executable was not found on PATH", hint="install git >= 2.29")
    return exe


def _pump(stream: IO[bytes], sink: list[bytes], progress: Progress | None) -> None:
    """Copy a pipe into `sink`; hand complete lines (split on CR or LF) to `progress`."""
    pending = b""
    fd = stream.fileno()
    # os.read returns what is there now: progress lines arrive as git writes them.
    for chunk in iter(lambda: os.read(fd, 65536), b""):
        sink.append(chunk)
        if progress is None:
            continue
        *lines, pending = re.split(rb"[\r\n]", pending + chunk)
        try:
            for line in filter(bytes.strip, lines):
                progress(line.decode("utf-8", "replace"))
        except Exception:
            progress = None  # a broken callback must not stop the draining (git would block)


def _kill_group(proc: subprocess.Popen[bytes]) -> None:
    # git spawns helpers (ssh, remote-helpers, pack-objects): kill them all, not just git.
    try:
        os.killpg(proc.pid, signal.SIGKILL)
    except ProcessLookupError:
        pass
    try:
        proc.wait(_KILL_GRACE)
    except subprocess.TimeoutExpired:
        pass


def _run_git(
    repo_path: Path | str, args: list[str], *, timeout: float, progress: Progress | None = None
) -> _Run:
    """Run git in `repo_path`; bounded by `timeout`; never raises for a non-zero exit."""
    cmd = [_git_executable(), *args]
    try:
        proc = subprocess.Popen(
            cmd, cwd=repo_path, env=_git_env(), stdin=subprocess.DEVNULL,
            stdout=subprocess.PIPE, stderr=subprocess.PIPE,
            start_new_session=True,  # no controlling terminal, and one group to kill on timeout
        )
    except FileNotFoundError as exc:
        raise MissingDependency(f"cannot run git: {exc}", hint="install git >= 2.29") from exc
    assert proc.stdout is not None and proc.stderr is not None
    out: list[bytes] = []
    err: list[bytes] = []
    # Threads rather than communicate(): an ssh ControlPersist master can inherit the pipes and
    # keep them open after git exits; we wait for git, then drain the pipes for a bounded time.
    readers = [
        threading.Thread(target=_pump, args=(proc.stdout, out, None), daemon=True),
        threading.Thread(target=_pump, args=(proc.stderr, err, progress), daemon=True),
    ]
    for t in readers:
        t.start()
    # A waiter thread blocks in waitpid and sets an event the moment git exits: `Popen.wait(timeout)`
    # polls with sleeps doubling up to 50 ms, which noticed a ~50 ms git fetch ~13 ms late, every
    # time. On the timeout the group is killed and waited for a bounded time, as before.
    exited = threading.Event()

    def wait() -> None:
        proc.wait()
        exited.set()
    threading.Thread(target=wait, daemon=True).start()
    if not exited.wait(timeout):
        _kill_group(proc)
        raise GitFailure(
            f"git {args[0]} timed out after {timeout:g} s", hint="check the network and the remote"
        ) from None
    for t in readers:
        t.join(_READER_GRACE)
    return _Run(proc.returncode, _decode(out), _decode(err))


def _decode(chunks: list[bytes]) -> str:
    return b"".join(chunks).decode("utf-8", "replace")


def _local_git(repo_path: Path | str, *args: str) -> _Run:
    """A local (non-network) git command: short timeout, same hygiene."""
    return _run_git(repo_path, list(args), timeout=30.0)


def _error_line(stderr: str) -> str:
    """The one line of git's stderr that says what went wrong."""
    lines = [ln.strip() for ln in re.split(r"[\r\n]", stderr) if ln.strip()]
    for ln in lines:
        if ln.startswith(("fatal:", "error:")):
            return ln
    return lines[-1] if lines else "no message"


# --------------------------------------------------------------------------------------------------
# Remotes


@dataclass(frozen=True)
class _Remote:
    arg: str  # what git gets on its command line
    namespace: str  # refs/remotes/<namespace>/liza/* holds its tracking refs


# Local reads (remotes, config, refs, ancestry) go through libgit2 in process: a git process per
# read cost a sync ~10 ms each, more than its own work; only fetch and push run git.
def _repo(repo_path: Path | str) -> Any:
    import pygit2
    try:
        return pygit2.Repository(str(repo_path))
    except pygit2.GitError as e:
        raise GitFailure(f"cannot read the git repository at {repo_path}: {e}") from None


def _configured_remotes(repo_path: Path | str) -> set[str]:
    return set(_repo(repo_path).remotes.names())


def _config_remote(repo_path: Path | str) -> str | None:
    try:
        value = str(_repo(repo_path).config[CONFIG_KEY]).strip()
    except KeyError:
        return None
    return value or None  # an empty value counts as unset


def _is_url(name: str) -> bool:
    # git's own rule: "scheme://..." or scp-like "host:path" (a colon before any slash).
    if "://" in name:
        return True
    colon, slash = name.find(":"), name.find("/")
    return colon > 0 and (slash == -1 or colon < slash)


def _url_namespace(url: str) -> str:
    # A URL cannot be a ref component; a short hash is stable and cannot clash with a sane remote name.
    return "liza-url-" + hashlib.sha256(url.encode()).hexdigest()[:16]


def _resolve(repo_path: Path | str, remote: str | None) -> _Remote:
    _git_executable()  # transport needs git itself: say so before judging the remote's name
    source = "argument"
    name = remote
    if name is None:
        name, source = _config_remote(repo_path), f"git config {CONFIG_KEY}"
    if name is None:
        name, source = DEFAULT_REMOTE, "default"
    if not name.strip():
        raise ValidationError("empty remote name")
    if name in _configured_remotes(repo_path):
        return _Remote(name, name)
    if _is_url(name):
        return _Remote(name, _url_namespace(name))
    path = Path(name).expanduser()
    path = path if path.is_absolute() else Path(repo_path, path)
    # Only what looks like a path is one (a folder named "origin" in the work tree is not a remote).
    if (name.startswith((".", "/", "~")) or os.sep in name) and path.exists():
        absolute = str(path.resolve())  # one spelling per repository, so one tracking namespace
        return _Remote(absolute, _url_namespace(absolute))
    raise ValidationError(
        f"unknown remote {name!r} (from {source}): not a configured remote, a URL or an existing path",
        hint=f"`git remote add {name} <url>`, or `git config {CONFIG_KEY} <remote>`",
    )


def resolve_remote(repo_path: Path | str, remote: str | None = None) -> str:
    """The remote to sync with: `remote`, else `git config liza.remote`, else `origin`; validated."""
    return _resolve(repo_path, remote).arg


def tracking_ref(repo_path: Path | str, remote: str | None = None, ref: str = STATE_REF) -> str:
    """The local ref that mirrors the remote's `ref` (e.g. refs/remotes/origin/liza/state)."""
    _check_board_ref(ref)
    return _tracking(_resolve(repo_path, remote), ref)


def _tracking(remote: _Remote, ref: str) -> str:
    """refs/liza/x -> refs/remotes/<ns>/liza/x; refs/heads/liza/t -> refs/remotes/<ns>/liza-tasks/t;
    any other refs/heads/b -> refs/remotes/<ns>/b (what `git fetch <name>` writes too)."""
    if ref.startswith(BOARD_PREFIX):
        return f"refs/remotes/{remote.namespace}/liza/{ref[len(BOARD_PREFIX):]}"
    if ref.startswith(TASK_BRANCHES):
        return f"refs/remotes/{remote.namespace}/{TASKS_NAMESPACE}/{ref[len(TASK_BRANCHES):]}"
    if ref.startswith(HEADS):
        return f"refs/remotes/{remote.namespace}/{ref[len(HEADS):]}"
    raise ValidationError(f"no tracking ref for {ref!r}")


def _check_board_ref(ref: str) -> None:
    if not ref.startswith(BOARD_PREFIX) or ref == BOARD_PREFIX:
        raise ValidationError(f"not a board ref: {ref!r} (must be under {BOARD_PREFIX})")


def _check_oid(oid: str, what: str) -> None:
    if not _OID.fullmatch(oid):
        raise ValidationError(f"{what} is not a full hex object id: {oid!r}")


def _read_ref(repo_path: Path | str, ref: str) -> str | None:
    """The oid a full ref name (refs/...) points at, or None."""
    found = _repo(repo_path).references.get(ref)
    if found is None:
        return None
    try:
        return str(found.resolve().target)
    except (KeyError, ValueError):  # a dangling symbolic ref
        return None


# --------------------------------------------------------------------------------------------------
# Fetch


def fetch_board(
    repo_path: Path | str,
    remote: str | None = None,
    *,
    integration: str | None = None,
    task_branches: bool = False,
    timeout: float = DEFAULT_TIMEOUT,
    progress: Progress | None = None,
) -> FetchResult:
    """Mirror the remote's refs/liza/* into refs/remotes/<remote>/liza/*; report the state tip.

    `integration` (a branch name) also mirrors refs/heads/<integration> into
    refs/remotes/<remote>/<integration>; `task_branches` mirrors refs/heads/liza/* into
    refs/remotes/<remote>/liza-tasks/*. One fetch, so one round trip and one pack.
    """
    rem = _resolve(repo_path, remote)
    tracking = _tracking(rem, STATE_REF)
    old = _read_ref(repo_path, tracking)
    if integration is not None:
        check_integration_name(integration)
    if not _direct_fetch(repo_path, rem, integration, task_branches, tracking):
        _git_fetch(repo_path, rem, integration, task_branches, timeout, progress)
    branches: dict[str, str] = {}
    if task_branches:
        prefix = f"refs/remotes/{rem.namespace}/{TASKS_NAMESPACE}/"
        for name, oid in _list_refs(repo_path, prefix).items():
            branches[TASK_BRANCHES + name[len(prefix):]] = oid
    if integration is not None:
        tip = _read_ref(repo_path, _tracking(rem, HEADS + integration))
        if tip is not None:
            branches[HEADS + integration] = tip
    return FetchResult(rem.arg, tracking, old, _read_ref(repo_path, tracking), branches)


def _direct_fetch(repo_path: Path | str, rem: _Remote, integration: str | None,
                  task_branches: bool, tracking: str) -> bool:
    """The fetch in process (gitliza/git/direct.py) when the remote is a plain bare repository on
    this machine and only the board's own objects are new; False: git must do it."""
    import pygit2

    from gitliza.git import direct
    local = _repo(repo_path)
    remote = direct.open_remote(local, Path(repo_path), rem.arg)
    if remote is None:
        return False
    mirrors = [direct.Mirror(BOARD_PREFIX, f"refs/remotes/{rem.namespace}/liza/")]
    if task_branches:
        mirrors.append(direct.Mirror(TASK_BRANCHES,
                                     f"refs/remotes/{rem.namespace}/{TASKS_NAMESPACE}/"))
    if integration is not None:
        mirrors.append(direct.Mirror(HEADS + integration, _tracking(rem, HEADS + integration)))
    haves = {pygit2.Oid(hex=h) for h in (_read_ref(repo_path, tracking),
                                         _read_ref(repo_path, STATE_REF)) if h}
    try:
        return direct.fetch(local, remote, mirrors, tracking, haves)
    except (OSError, KeyError, pygit2.GitError) as e:
        if "lock" in str(e):  # as git's "cannot lock ref": another process is updating it
            raise ConcurrencyConflict(f"fetch from {rem.arg}: {e}", hint="retry the sync") from None
        raise GitFailure(f"fetch from {rem.arg} failed: {e}") from None


def _git_fetch(repo_path: Path | str, rem: _Remote, integration: str | None, task_branches: bool,
               timeout: float, progress: Progress | None) -> None:
    refspecs = [f"+{BOARD_PREFIX}*:refs/remotes/{rem.namespace}/liza/*"]
    if task_branches:
        refspecs.append(f"+{TASK_BRANCHES}*:refs/remotes/{rem.namespace}/{TASKS_NAMESPACE}/*")
    if integration is not None:
        refspecs.append(f"+{HEADS}{integration}:{_tracking(rem, HEADS + integration)}")
    # A glob refspec matching nothing succeeds (an explicit ref would fail on a remote with no
    # board). `+` is right for tracking refs: they mirror the remote, whatever it did.
    # --no-write-fetch-head: do not clobber the user's FETCH_HEAD behind their back.
    args = ["fetch", "--no-tags", "--prune", "--no-write-fetch-head", *_progress_flag(progress)]
    if len(refspecs) > 1:
        # Only our refspecs: the remote's configured fetch refspec would also copy refs/heads/liza/x
        # to refs/remotes/<name>/liza/x, into the namespace that tracks the board refs.
        args.append("--refmap=")
    run = _run_git(repo_path, [*args, "--", rem.arg, *refspecs], timeout=timeout, progress=progress)
    if run.returncode != 0 and integration is not None and "couldn't find remote ref" in run.stderr:
        # The integration branch is the one explicit ref (a branch cannot be globbed exactly): a
        # remote that does not have it yet is not an error, fetch the rest.
        refspecs.pop()
        run = _run_git(repo_path, [*args, "--", rem.arg, *refspecs], timeout=timeout,
                       progress=progress)
        _forget(repo_path, _tracking(rem, HEADS + integration))
    if run.returncode != 0:
        _raise_fetch_failure(rem.arg, run.stderr)


def check_integration_name(branch: str) -> None:
    """The integration branch's tracking ref must not fall into the board's or the task branches'
    tracking namespaces (refs/remotes/<ns>/liza/..., refs/remotes/<ns>/liza-tasks/...)."""
    if (not branch or branch.startswith(("liza/", f"{TASKS_NAMESPACE}/", "refs/"))
            or not re.fullmatch(r"[A-Za-z0-9._/-]+", branch) or ".." in branch
            or branch.endswith((".lock", "/", ".")) or branch.startswith(("-", "/"))):
        raise ValidationError(f"integration branch {branch!r} cannot be synced: it must be a plain "
                              "branch name outside liza/ and liza-tasks/")


def branch_tracking_ref(repo_path: Path | str, remote: str | None, branch: str) -> str:
    """The local ref mirroring the remote's branch: refs/remotes/<ns>/<branch> for the integration
    branch, refs/remotes/<ns>/liza-tasks/<task> for a task branch liza/<task>."""
    ref = branch if branch.startswith(HEADS) else HEADS + branch
    return _tracking(_resolve(repo_path, remote), ref)


def _list_refs(repo_path: Path | str, prefix: str) -> dict[str, str]:
    from gitliza.git.direct import refs_under
    return refs_under(_repo(repo_path), prefix)


def _forget(repo_path: Path | str, ref: str) -> None:
    # The remote no longer has the branch: its tracking ref must not keep claiming it does.
    if _read_ref(repo_path, ref) is not None:
        _local_git(repo_path, "update-ref", "-d", ref)


def _progress_flag(progress: Progress | None) -> list[str]:
    # stderr is a pipe, so git stays quiet unless asked; the callback decides what to show.
    return ["--progress"] if progress is not None else []


def _raise_fetch_failure(remote: str, stderr: str) -> None:
    line = _error_line(stderr)
    if "cannot lock ref" in line:
        # Another process in this repository is updating the same tracking ref right now.
        raise ConcurrencyConflict(f"fetch from {remote}: {line}", hint="retry the sync")
    raise GitFailure(f"git fetch from {remote} failed: {line}")


# --------------------------------------------------------------------------------------------------
# ls-remote


def ls_remote_state(
    repo_path: Path | str,
    remote: str | None = None,
    *,
    ref: str = STATE_REF,
    timeout: float = DEFAULT_TIMEOUT,
) -> str | None:
    """The remote's current oid of `ref` (None: no board there), without fetching objects."""
    _check_board_ref(ref)
    return _ls_remote(repo_path, _resolve(repo_path, remote).arg, ref, timeout)


def _ls_remote(repo_path: Path | str, remote: str, ref: str, timeout: float) -> str | None:
    run = _run_git(repo_path, ["ls-remote", "--", remote, ref], timeout=timeout)
    if run.returncode != 0:
        raise GitFailure(f"git ls-remote {remote} failed: {_error_line(run.stderr)}")
    for line in run.stdout.splitlines():
        oid, _, name = line.partition("\t")
        if name == ref:  # ls-remote patterns match ref-name tails: insist on the exact name
            return oid
    return None


# --------------------------------------------------------------------------------------------------
# Push


def push_board(
    repo_path: Path | str,
    remote: str | None,
    local_oid: str,
    expected_remote_oid: str | None,
    ref: str = STATE_REF,
    *,
    timeout: float = DEFAULT_TIMEOUT,
    progress: Progress | None = None,
) -> PushResult:
    """Move the remote's `ref` from `expected_remote_oid` (None: must not exist) to `local_oid`.

    A fast-forward compare-and-swap: returns STALE or NON_FAST_FORWARD when the caller must fetch
    and replay; raises PushRejected when the remote's hook refuses, GitFailure on anything else.
    """
    _check_board_ref(ref)
    _check_oid(local_oid, "local oid")
    if expected_remote_oid is not None:
        _check_oid(expected_remote_oid, "expected remote oid")
    rem = _resolve(repo_path, remote)

    def result(status: PushStatus, summary: str) -> PushResult:
        return PushResult(status, rem.arg, ref, local_oid, expected_remote_oid, summary)

    if not _has_commit(repo_path, local_oid):
        raise ValidationError(f"local oid {local_oid} is not a commit in {repo_path}")
    if expected_remote_oid is not None and not _descends(repo_path, local_oid, expected_remote_oid):
        # A lease that matches makes git force the update, so the fast-forward rule is ours.
        return result(PushStatus.NON_FAST_FORWARD, f"not a descendant of {expected_remote_oid}")
    tracking = _tracking(rem, ref)
    tracking_before = _read_ref(repo_path, tracking)
    done = _direct_push(repo_path, rem, ref, local_oid, expected_remote_oid)
    if done is not None:
        if done in (PushStatus.OK, PushStatus.UP_TO_DATE):
            _update_tracking(repo_path, tracking, local_oid, tracking_before)
        return result(done, _summary(done, expected_remote_oid, local_oid))
    run = _push(repo_path, rem.arg, local_oid, expected_remote_oid, ref, timeout, progress)
    flag, summary = _porcelain_status(run, rem.arg, ref)
    if summary.startswith("[remote rejected]"):
        now = _ls_remote(repo_path, rem.arg, ref, timeout)
        status = _remote_rejection(rem.arg, ref, expected_remote_oid, now, summary, run.stderr)
    else:
        status = _status_of(rem.arg, flag, summary)
    if status in (PushStatus.OK, PushStatus.UP_TO_DATE):
        _update_tracking(repo_path, tracking, local_oid, tracking_before)
    return result(status, summary)


def _summary(status: PushStatus, old: str | None, new: str) -> str:
    """What `git push --porcelain` says for this outcome (a summary reads the same either way)."""
    if status == PushStatus.STALE:
        return "[rejected] (stale info)"
    if status == PushStatus.UP_TO_DATE:
        return "[up to date]"
    return "[new reference]" if old is None else f"{old[:7]}..{new[:7]}"


def _direct_push(repo_path: Path | str, rem: _Remote, ref: str, local_oid: str,
                 expected: str | None) -> PushStatus | None:
    """The push in process (gitliza/git/direct.py) when the remote is a plain bare repository on
    this machine without hooks and the board's chain is all it lacks; None: git must do it."""
    import pygit2

    from gitliza.git import direct
    local = _repo(repo_path)
    remote = direct.open_remote(local, Path(repo_path), rem.arg)
    if remote is None:
        return None
    try:
        return PushStatus(direct.push(local, remote, ref, local_oid, expected))
    except direct.NeedsGit:
        return None
    except (OSError, KeyError, pygit2.GitError) as e:  # KeyError: an object missing here
        raise GitFailure(f"push to {rem.arg} failed: {e}") from None


@dataclass(frozen=True)
class RefUpdate:
    """One ref of a multi-ref push: move the remote's `ref` from `expected_oid` (None: must not
    exist) to `local_oid`. `fast_forward`: refuse (NON_FAST_FORWARD, nothing pushed) unless
    local_oid descends from expected_oid; off for task branches, which a coder may rewrite after a
    rejection (the lease still guarantees we replace only what we saw)."""

    ref: str  # refs/liza/* or refs/heads/*
    local_oid: str
    expected_oid: str | None
    fast_forward: bool = True


@dataclass(frozen=True)
class MultiPushResult(_Outcome):
    status: PushStatus  # OK / UP_TO_DATE when every ref is; else the first failing ref's status
    remote: str
    results: tuple[PushResult, ...]  # one per update, in order


def push_refs(
    repo_path: Path | str,
    remote: str | None,
    updates: Sequence[RefUpdate],
    *,
    timeout: float = DEFAULT_TIMEOUT,
    progress: Progress | None = None,
) -> MultiPushResult:
    """Push several refs in ONE atomic push (`git push --atomic`), each with its own lease.

    All or nothing on the remote: a server that judges one ref against another (the integration
    branch against the board after the push) sees them together, and a lost lease on any ref
    leaves every ref where it was (STALE). Raises PushRejected when the remote's hook refuses,
    GitFailure on anything else, like `push_board`. Tracking refs follow on success.
    """
    if not updates:
        raise ValueError("push_refs: nothing to push")
    rem = _resolve(repo_path, remote)
    for u in updates:
        if not u.ref.startswith((BOARD_PREFIX, HEADS)) or u.ref in (BOARD_PREFIX, HEADS):
            raise ValidationError(f"not a pushable ref: {u.ref!r}")
        _check_oid(u.local_oid, f"local oid for {u.ref}")
        if u.expected_oid is not None:
            _check_oid(u.expected_oid, f"expected remote oid for {u.ref}")
        if not _has_commit(repo_path, u.local_oid):
            raise ValidationError(f"local oid {u.local_oid} is not a commit in {repo_path}")

    statuses: dict[str, PushStatus] = {}  # per ref, as far as git told us

    def results(status: PushStatus, summaries: dict[str, str]) -> MultiPushResult:
        return MultiPushResult(status, rem.arg, tuple(
            PushResult(statuses.get(u.ref, status), rem.arg, u.ref, u.local_oid, u.expected_oid,
                       summaries.get(u.ref, "")) for u in updates))

    for u in updates:
        if u.fast_forward and u.expected_oid is not None \
                and not _descends(repo_path, u.local_oid, u.expected_oid):
            return results(PushStatus.NON_FAST_FORWARD,
                           {u.ref: f"not a descendant of {u.expected_oid}"})
    before = {u.ref: _read_ref(repo_path, _tracking(rem, u.ref)) for u in updates}
    # --atomic: the server applies all the updates or none (and so do the client-side checks).
    args = ["push", "--porcelain", "--no-verify", "--atomic", *_progress_flag(progress)]
    args += [f"--force-with-lease={u.ref}:{u.expected_oid or ''}" for u in updates]
    args += ["--", rem.arg, *(f"{u.local_oid}:{u.ref}" for u in updates)]
    run = _run_git(repo_path, args, timeout=timeout, progress=progress)
    summaries: dict[str, str] = {}
    for u in updates:
        flag, summary = _porcelain_status(run, rem.arg, u.ref)
        summaries[u.ref] = summary
        if summary.startswith("[remote rejected]"):
            continue
        if flag == "!" and "atomic push failed" in summary:
            continue  # refused only because another ref of this push was: that one says why
        statuses[u.ref] = _status_of(rem.arg, flag, summary)
    rejected = [u for u in updates if summaries[u.ref].startswith("[remote rejected]")]
    if rejected:
        # The server refused the transaction. A lease that no longer holds on any ref means we lost
        # a race at its ref lock; otherwise its hook said no, and saying it again will not help.
        for u in updates:
            if _ls_remote(repo_path, rem.arg, u.ref, timeout) != u.expected_oid:
                statuses[u.ref] = PushStatus.STALE
                return results(PushStatus.STALE, summaries)
        u = rejected[0]
        _remote_rejection(rem.arg, u.ref, u.expected_oid, u.expected_oid, summaries[u.ref],
                          run.stderr)
    bad = [statuses[u.ref] for u in updates
           if statuses.get(u.ref) not in (None, PushStatus.OK, PushStatus.UP_TO_DATE)]
    if bad:
        return results(bad[0], summaries)
    if len(statuses) != len(updates):
        raise GitFailure(f"git push to {rem.arg} failed: {_error_line(run.stderr)}")
    for u in updates:
        _update_tracking(repo_path, _tracking(rem, u.ref), u.local_oid, before[u.ref])
    overall = PushStatus.OK if PushStatus.OK in statuses.values() else PushStatus.UP_TO_DATE
    return results(overall, summaries)


def _descends(repo_path: Path | str, local_oid: str, expected_oid: str) -> bool:
    # Exit 0: ancestor; 1: not; 128: an object is missing here -- we cannot have built on an
    # expected tip we do not have, which for the caller is the same thing: fetch and replay.
    import pygit2
    repo = _repo(repo_path)
    try:
        local, expected = pygit2.Oid(hex=local_oid), pygit2.Oid(hex=expected_oid)
        return local == expected or (expected in repo and bool(repo.descendant_of(local, expected)))
    except (KeyError, ValueError, pygit2.GitError):
        return False


def _has_commit(repo_path: Path | str, oid: str) -> bool:
    import pygit2
    try:
        return isinstance(_repo(repo_path).get(oid), pygit2.Commit)
    except (KeyError, ValueError, pygit2.GitError):
        return False


def _push(
    repo_path: Path | str, remote: str, local_oid: str, expected: str | None, ref: str,
    timeout: float, progress: Progress | None,
) -> _Run:
    # Never `+` and never --force: the explicit lease is the cross-machine CAS (empty = must not
    # exist). --no-verify: the local pre-push hook guards code pushes; a board sync must not run
    # a test suite, and enforcement lives in the remote's hooks, which still run.
    lease = f"--force-with-lease={ref}:{expected or ''}"
    args = ["push", "--porcelain", "--no-verify", lease, *_progress_flag(progress)]
    args += ["--", remote, f"{local_oid}:{ref}"]
    return _run_git(repo_path, args, timeout=timeout, progress=progress)


def _porcelain_status(run: _Run, remote: str, ref: str) -> tuple[str, str]:
    """(flag, summary) from `git push --porcelain`'s line for `ref`.

    The line is "<flag> TAB <src>:<dst> TAB <summary>", e.g. "!", "[rejected] (stale info)".
    """
    for line in run.stdout.splitlines():
        parts = line.split("\t")
        if len(parts) == 3 and parts[1].endswith(f":{ref}") and len(parts[0]) == 1:
            return parts[0], parts[2]
    # No status line: git failed before talking refs (unreachable, auth, no such repository).
    raise GitFailure(f"git push to {remote} failed: {_error_line(run.stderr)}")


def _status_of(remote: str, flag: str, summary: str) -> PushStatus:
    """Status from a porcelain flag: " " fast-forward, "*" new, "=" up to date, "!" rejected."""
    if flag == "=":
        return PushStatus.UP_TO_DATE
    if flag in (" ", "*", "+"):  # "+" (forced) cannot happen: the ancestry check ran first
        return PushStatus.OK
    if flag == "!" and summary.startswith("[rejected]"):
        return _client_side_rejection(remote, summary)
    raise GitFailure(f"git push to {remote} failed: {flag} {summary}")


def _remote_rejection(
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
            if text and not _PROGRESS_LINE.search(text):
                lines.append(text)
    return tuple(lines)


def _update_tracking(repo_path: Path | str, tracking: str, oid: str, before: str | None) -> None:
    # git push only updates tracking refs that a configured fetch refspec maps, which ours are not.
    # Compare-and-swap against what we read before pushing: if a concurrent fetch moved it, that
    # value is at least as fresh as ours, so a failed update is simply left alone.
    if before == oid:
        return
    import pygit2
    repo = _repo(repo_path)
    try:
        if before is None:
            repo.create_reference(tracking, pygit2.Oid(hex=oid), force=False,
                                  message="liza: push")
            return
        ref = repo.references.get(tracking)
        if ref is not None and str(ref.target) == before:
            ref.set_target(pygit2.Oid(hex=oid), "liza: push")  # libgit2 checks the old value
    except (pygit2.GitError, ValueError, KeyError):  # moved meanwhile: that value is fresher
        pass


def print_progress(line: str) -> None:
    """A ready-made Progress: git's lines on our stderr, overwriting in place on a terminal."""
    end = "\r" if sys.stderr.isatty() and _PROGRESS_LINE.search(line) else "\n"
    sys.stderr.write(line + end)
    sys.stderr.flush()
