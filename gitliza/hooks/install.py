"""Install, upgrade and remove gitliza's git hook shims (`git liza hooks install|uninstall`).

A shim is the package's `hooks/template.sh` with three lines filled in (hook name, the interpreter
that runs gitliza, whether the LIZA_SKIP_HOOKS bypass is allowed). It runs a chained foreign hook
first, then `python -m gitliza hook-impl <hook> "$@"`. What the hooks check lives in
gitliza.hooks.dispatch and the handlers it names, not here. Layout, chaining and upgrade rules:
docs/hooks-install.md.

Where the hooks go is git's own answer (`git rev-parse --git-path hooks`): it honours
core.hooksPath (`~` expanded, a relative path taken from the work tree top, or from $GIT_DIR in a bare
repository) and otherwise names `<git-common-dir>/hooks`, which every linked worktree shares. We ask
the git executable rather than pygit2 because hooks only ever run under git, so git's reading of the
config (includes, worktree config) is the one that counts.
"""
from __future__ import annotations

import functools
import os
import re
import subprocess
import sys
from dataclasses import dataclass
from importlib import resources
from pathlib import Path
from typing import Literal

from gitliza.errors import GitFailure, MissingDependency, ValidationError

# Client hooks, each for something gitliza's own writes (libgit2, which runs no hooks) never do:
# - reference-transaction: every ref move made by plain git (a commit, fast-forward merges,
#   `git update-ref`, `git fetch` into refs/liza/state, `git branch -f`), seen before it commits;
#   this includes a commit on a task branch where it must not be (e.g. in a task worktree after
#   submit), the rule pre-commit used to check;
# - pre-merge-commit: a hand-made merge commit into the integration branch, refused before the
#   merge is written (reference-transaction would refuse it too, later);
# - pre-push: refuse to send a refs/liza/state that is not a fast-forward of the remote's, early.
# pre-commit is left out: git runs reference-transaction twice per commit anyway ("prepared" and
# "committed"), and a third hook start was a third of a commit's cost. commit-msg sees nothing more,
# and post-* hooks cannot refuse anything.
CLIENT_HOOKS: tuple[str, ...] = ("pre-merge-commit", "reference-transaction", "pre-push")
# Hooks older shims were installed as and the current ones are not: `install` removes our shim there
# (putting back the hook it chained). A foreign hook under that name is not ours and stays.
RETIRED_CLIENT_HOOKS: tuple[str, ...] = ("pre-commit",)
# Server: pre-receive alone. It sees the whole push at once, which enforcement needs (a merge moves
# the integration branch and refs/liza/state together; one cannot be judged without the other), and
# it can refuse all of it. `update` would only add one Python start per pushed ref.
SERVER_HOOKS: tuple[str, ...] = ("pre-receive",)

LEGACY_SUFFIX = ".gitliza-legacy"
# Never changes across versions: it is what tells our marker line from anybody else's comment.
SHIM_ID = "c734ca2c-fda1-4d0c-ac1b-9f4f0fa024fb"
_MARKER = re.compile(rb"^# gitliza-hook-shim v(\d+) " + re.escape(SHIM_ID.encode()) + rb"[ \t]*$", re.M)
_RECORDED = re.compile(rb"^(HOOK|INSTALL_PYTHON)='((?:[^']|'\\'')*)'[ \t]*$", re.M)
_PLACEHOLDERS = ("HOOK", "INSTALL_PYTHON", "SKIP_ALLOWED")
# A hook is a small script; a big file (a compiled hook) cannot be ours, and the marker sits on line 2.
_READ_LIMIT = 64 * 1024

Action = Literal["installed", "upgraded", "updated", "unchanged", "kept-newer", "removed", "restored"]


@dataclass(frozen=True)
class HookAction:
    """What install/uninstall did to one hook.

    `legacy`: on install, a foreign hook is chained as `<hook>.gitliza-legacy`; on uninstall, it was
    put back in place.
    """

    hook: str
    action: Action
    legacy: bool


@dataclass(frozen=True)
class InstallReport:
    """The result of install() or uninstall()."""

    hooks_dir: Path
    actions: tuple[HookAction, ...]

    @property
    def changed(self) -> bool:
        return any(a.action not in ("unchanged", "kept-newer") for a in self.actions)


@dataclass(frozen=True)
class HookStatus:
    hook: str
    kind: Literal["gitliza", "foreign", "missing"]
    version: int | None  # shim version, for kind == "gitliza"
    python: str | None  # the interpreter the shim runs gitliza with
    legacy: bool  # a `<hook>.gitliza-legacy` sits next to it (chained when the shim is ours)


@dataclass(frozen=True)
class HooksStatus:
    hooks_dir: Path
    bare: bool
    current_version: int
    hooks: tuple[HookStatus, ...]


@functools.cache
def template_text() -> str:
    """The shim template shipped in the package (the source of truth; hooks/shim.sh is a copy)."""
    try:
        return resources.files("gitliza.hooks").joinpath("template.sh").read_text(encoding="utf-8")
    except OSError as err:
        raise MissingDependency(
            f"gitliza's hook template is missing ({err})", hint="reinstall gitliza"
        ) from None


@functools.cache
def shim_version() -> int:
    """The version of the shim this gitliza installs, read from the template's own marker line."""
    found = _version_of(template_text().encode())
    if found is None:  # only a broken package gets here
        raise MissingDependency("gitliza's hook template has no marker line", hint="reinstall gitliza")
    return found


def render_shim(hook: str, python: str) -> str:
    """The shim for `hook` that runs gitliza with `python` (an absolute path)."""
    values = {
        "HOOK": hook,
        "INSTALL_PYTHON": python,
        # Server hooks are where enforcement is real: no bypass there.
        "SKIP_ALLOWED": "no" if hook in SERVER_HOOKS else "yes",
    }
    text = template_text()
    for name in _PLACEHOLDERS:
        text = text.replace(f"{name}='__{name}__'", f"{name}={_sh_quote(values[name])}", 1)
    return text


def install(repo_path: str | os.PathLike[str], *, server: bool = False, python: str = sys.executable) -> InstallReport:
    """Install the client shims into the repository containing `repo_path`, or with `server=True` the
    server shims into a bare repository.

    Client hooks in a bare repository (nobody commits there) and server hooks in a non-bare one are
    refused: a repository others push to should be bare. A foreign hook is renamed to
    `<hook>.gitliza-legacy` and chained; an older shim of ours is upgraded; the same version is left
    as it is unless it records another interpreter; a newer one is kept. Every hook is checked before
    any is touched, so a refusal leaves the hooks dir as it was. A shim of ours (not newer) under a
    hook no longer installed (RETIRED_CLIENT_HOOKS) is removed, and the hook it chained put back.
    """
    if "\n" in python or "\0" in python or not python:
        raise ValidationError(f"not a usable interpreter path: {python!r}")
    python = os.path.abspath(python)  # not resolve(): a venv's python is a symlink that must stay one
    hooks_dir, bare = _locate(repo_path)
    if server and not bare:
        raise ValidationError(
            f"{repo_path} is not a bare repository; server hooks go into the repository others push to",
            hint="run 'git liza hooks install --server' in a bare repository, or drop --server",
        )
    if not server and bare:
        raise ValidationError(
            f"{repo_path} is a bare repository; nobody commits there",
            hint="use 'git liza hooks install --server' for the enforcing hooks",
        )
    _ensure_dir(hooks_dir)
    plans = [_plan(hooks_dir, hook, render_shim(hook, python)) for hook in (SERVER_HOOKS if server else CLIENT_HOOKS)]
    for plan in plans:
        _apply(hooks_dir, plan)
    retired = [] if server else [a for hook in RETIRED_CLIENT_HOOKS
                                 if (a := _retire(hooks_dir, hook, newer_too=False))]
    return InstallReport(hooks_dir, tuple(HookAction(p.hook, p.action, p.legacy) for p in plans) + tuple(retired))


def uninstall(repo_path: str | os.PathLike[str]) -> InstallReport:
    """Remove every gitliza shim from the hooks dir (client and server, any version) and put each
    chained foreign hook back under its own name, byte for byte (it is renamed, never rewritten).

    A shim that another hook manager renamed (its file name is not the hook it records) is left
    alone: that manager now chains it.
    """
    hooks_dir, _bare = _locate(repo_path)
    actions: list[HookAction] = []
    if not hooks_dir.is_dir():
        return InstallReport(hooks_dir, ())
    for entry in sorted(hooks_dir.iterdir()):
        name = entry.name
        if name.endswith(LEGACY_SUFFIX):
            # A chained hook whose shim is gone: the name is free again.
            original = hooks_dir / name[: -len(LEGACY_SUFFIX)]
            if not os.path.lexists(original):
                os.rename(entry, original)
                actions.append(HookAction(original.name, "restored", True))
            continue
        if (action := _retire(hooks_dir, name)) is not None:
            actions.append(action)
    return InstallReport(hooks_dir, tuple(actions))


def hooks_status(repo_path: str | os.PathLike[str]) -> HooksStatus:
    """Every client and server hook, plus any other gitliza shim found: ours (which version, which
    interpreter), foreign, or missing, and whether a legacy hook is chained."""
    hooks_dir, bare = _locate(repo_path)
    names = list(CLIENT_HOOKS + SERVER_HOOKS)
    if hooks_dir.is_dir():
        for entry in sorted(hooks_dir.iterdir()):
            if entry.name not in names and not entry.name.endswith(LEGACY_SUFFIX):
                data = _read(entry)
                if data is not None and _version_of(data) is not None:
                    names.append(entry.name)
    return HooksStatus(hooks_dir, bare, shim_version(), tuple(_status(hooks_dir, n) for n in names))


# --- internals ----------------------------------------------------------------------------------


@dataclass(frozen=True)
class _Plan:
    hook: str
    action: Action
    legacy: bool  # a foreign hook is (or will be) chained
    rename_foreign: bool  # move the current hook to <hook>.gitliza-legacy first
    content: str


def _plan(hooks_dir: Path, hook: str, content: str) -> _Plan:
    path = hooks_dir / hook
    legacy = hooks_dir / (hook + LEGACY_SUFFIX)
    has_legacy = os.path.lexists(legacy)
    if not os.path.lexists(path):
        return _Plan(hook, "installed", has_legacy, False, content)
    if path.is_dir():
        raise ValidationError(f"{path} is a directory, not a hook", hint="move it aside and install again")
    data = _read(path)
    found = None if data is None else _version_of(data)
    if found is None:
        if has_legacy:
            # Renaming would destroy the legacy hook already chained: never lose a user's hook.
            raise ValidationError(
                f"{path} is not a gitliza shim and {legacy.name} already exists",
                hint=f"keep one of them: move the other out of {hooks_dir}, then install again",
            )
        return _Plan(hook, "installed", True, True, content)
    if found > shim_version():
        return _Plan(hook, "kept-newer", has_legacy, False, content)
    if found < shim_version():
        return _Plan(hook, "upgraded", has_legacy, False, content)
    same = data == content.encode() and os.access(path, os.X_OK)
    return _Plan(hook, "unchanged" if same else "updated", has_legacy, False, content)


def _apply(hooks_dir: Path, plan: _Plan) -> None:
    if plan.action in ("unchanged", "kept-newer"):
        return
    path = hooks_dir / plan.hook
    # Write beside the target and rename over it: git never sees a half-written hook, and a symlinked
    # hook is replaced rather than written through.
    tmp = hooks_dir / f".{plan.hook}.gitliza-tmp-{os.getpid()}"
    try:
        tmp.write_text(plan.content, encoding="utf-8", newline="\n")
        os.chmod(tmp, 0o755)
        if plan.rename_foreign:
            legacy = hooks_dir / (plan.hook + LEGACY_SUFFIX)
            os.rename(path, legacy)
            try:
                os.replace(tmp, path)
            except OSError:
                os.rename(legacy, path)  # leave the foreign hook where it was, not orphaned
                raise
        else:
            os.replace(tmp, path)
    finally:
        if os.path.lexists(tmp):
            tmp.unlink()


def _retire(hooks_dir: Path, hook: str, *, newer_too: bool = True) -> HookAction | None:
    """Remove our shim installed as `hook` (any version), putting back the hook it chained."""
    entry = hooks_dir / hook
    data = _read(entry)
    found = None if data is None else _version_of(data)
    if data is None or found is None or _recorded(data, "HOOK") != hook:
        return None  # missing, foreign, or renamed by another hook manager that now chains it
    if not newer_too and found > shim_version():
        return None  # installed by a newer gitliza, which may want it
    legacy = hooks_dir / (hook + LEGACY_SUFFIX)
    if os.path.lexists(legacy):
        os.replace(legacy, entry)
        return HookAction(hook, "restored", True)
    entry.unlink()
    return HookAction(hook, "removed", False)


def _status(hooks_dir: Path, hook: str) -> HookStatus:
    path = hooks_dir / hook
    legacy = os.path.lexists(hooks_dir / (hook + LEGACY_SUFFIX))
    if not os.path.lexists(path):
        return HookStatus(hook, "missing", None, None, legacy)
    data = _read(path)
    found = None if data is None else _version_of(data)
    if data is None or found is None:
        return HookStatus(hook, "foreign", None, None, legacy)
    return HookStatus(hook, "gitliza", found, _recorded(data, "INSTALL_PYTHON"), legacy)


def _locate(repo_path: str | os.PathLike[str]) -> tuple[Path, bool]:
    """(hooks dir, is bare) of the repository containing repo_path."""
    where = Path(repo_path)
    if not where.is_dir():
        raise ValidationError(f"{where} is not a directory")
    out = _git(where, "rev-parse", "--is-bare-repository", "--path-format=absolute", "--git-path", "hooks")
    lines = out.splitlines()
    if len(lines) != 2:
        raise GitFailure(f"unexpected output from git rev-parse in {where}: {out!r}")
    return Path(lines[1]), lines[0] == "true"


def _git(cwd: Path, *args: str) -> str:
    try:
        r = subprocess.run(["git", *args], cwd=cwd, capture_output=True, text=True, check=False)
    except FileNotFoundError:
        raise MissingDependency("git is not installed (or not on PATH)", hint="install git 2.31 or later") from None
    if r.returncode != 0:
        msg = r.stderr.strip().splitlines()[-1] if r.stderr.strip() else f"exit {r.returncode}"
        if "not a git repository" in r.stderr:
            raise ValidationError(f"{cwd} is not inside a git repository")
        raise GitFailure(f"git {' '.join(args)} failed in {cwd}: {msg}")
    return r.stdout.strip()


def _ensure_dir(hooks_dir: Path) -> None:
    if os.path.lexists(hooks_dir) and not hooks_dir.is_dir():
        # core.hooksPath=/dev/null is the usual way to switch hooks off.
        raise ValidationError(
            f"the hooks directory {hooks_dir} is not a directory (core.hooksPath switches hooks off)",
            hint="unset core.hooksPath or point it at a directory",
        )
    hooks_dir.mkdir(parents=True, exist_ok=True)


def _read(path: Path) -> bytes | None:
    """The start of a regular file (through symlinks), or None for anything else."""
    try:
        if not path.is_file():
            return None
        with open(path, "rb") as f:
            return f.read(_READ_LIMIT)
    except OSError:
        return None


def _version_of(data: bytes) -> int | None:
    m = _MARKER.search(data)
    return int(m.group(1)) if m else None


def _recorded(data: bytes, name: str) -> str | None:
    for m in _RECORDED.finditer(data):
        if m.group(1).decode() == name:
            return m.group(2).replace(b"'\\''", b"'").decode("utf-8", "surrogateescape")
    return None


def _sh_quote(value: str) -> str:
    """Single-quoted for sh, always (shlex.quote leaves plain words bare; _RECORDED expects quotes)."""
    return "'" + value.replace("'", "'\\''") + "'"
