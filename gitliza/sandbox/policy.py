"""What an agent sees and may write, as a bubblewrap command line. Pure: every path and listing
is given (gitliza/sandbox/box.py gathers them).

The view, in bubblewrap's order (a later mount covers an earlier one):
1. the whole file system read-only, a fresh /dev and /proc (a new PID namespace: the agent sees
   and signals only its own processes), no capabilities, a user namespace (root outside stays
   unable to remount), and the agent dies with its supervisor (`--die-with-parent`);
2. hidden (an empty tmpfs): the user's home, the user's runtime dir (ssh-agent and D-Bus
   sockets); /tmp is the agent's own directory;
3. back, read-only, what the launch needs from under those: the interpreter, the agent CLI, the
   repository (main worktree, task worktrees, `.liza/`); each as itself, never the home
   (reexpose.py chooses them);
4. the common git dir hidden, then every entry of it back read-only except `liza/` (the private
   keys, gitliza's caches and the sandboxes themselves);
5. by role, what it may write: a coder its task worktree and its own git dir (gitview.py); a
   reviewer and a planner nothing of the repository;
6. the agent's private HOME (writable) and the directory of its broker socket.
"""
from __future__ import annotations

from dataclasses import dataclass
from enum import Enum
from pathlib import Path, PurePath

from gitliza.core import treerules
from gitliza.errors import ValidationError

CODER, REVIEWER, PLANNER = "coder", "code-reviewer", "planner"
BROKER_INSIDE = "/tmp/.gitliza-broker"  # where an agent finds its broker's door
CONN_SUFFIX = "-conn"  # beside it, where its client makes the FIFOs of a connection
HIDDEN_GIT = frozenset({"liza"})  # entries of the common dir an agent never sees


class SandboxMode(str, Enum):
    """`--sandbox`: `on` (bubblewrap, the network through slirp4netns), `model` (only the model's
    API hosts, through the supervisor: net.py), `offline` (no network at all), `off` (none: the
    human's explicit choice). Parsed once from the flag (`parse`); everything below, the team's
    options record, the supervisor, the box and the integration test's runner, gets this value."""

    ON = "on"
    MODEL = "model"
    OFFLINE = "offline"
    OFF = "off"

    @classmethod
    def parse(cls, text: str | None) -> SandboxMode:
        """`--sandbox on|model|offline|off` (None: on); anything else is one line, exit 1."""
        try:
            return cls((text or "on").strip().lower())
        except ValueError:
            raise ValidationError(f"--sandbox must be one of {', '.join(m.value for m in cls)}, "
                                  f"got {text!r}") from None


@dataclass(frozen=True)
class CoderGit:
    """A coder's own git dir (gitview.py): `shadow` is a common dir of its own (objects with the
    shared ones as alternates, its refs, its logs) and the task's worktree admin dir `admin` is
    mounted inside it as `worktrees/<name>`; `dotgit` is the file that points the worktree's
    `.git` there, `commondir` the one that points its admin dir to `shadow` (git writes an
    absolute path there); `empty` an empty file mounted over `config.worktree`."""

    shadow: Path
    admin: Path
    name: str
    dotgit: Path
    commondir: Path
    empty: Path


@dataclass(frozen=True)
class Limits:
    """Per sandbox (config sandbox_*): processes and threads, each process's memory in MB (both
    set inside by seccomp.py), the size of /tmp and /dev/shm in MB, what a coder's worktree may
    hold in MB and files (diskwatch.py); None: no limit."""

    pids: int | None = None
    memory_mb: int | None = None
    tmp_mb: int | None = None
    checkout_mb: int | None = None
    checkout_files: int | None = None


# The checkout bounds' defaults are the ones every checkout of a task tree is held to
# (core/treerules.py): a running coder's worktree may not outgrow what a checkout may write.
DEFAULT_LIMITS = Limits(pids=1024, memory_mb=8192, tmp_mb=1024,
                        checkout_mb=treerules.CHECKOUT_MAX_MB,
                        checkout_files=treerules.CHECKOUT_MAX_FILES)


@dataclass(frozen=True)
class View:
    role: str
    cwd: Path  # the agent's worktree (the main worktree for a planner)
    main: Path  # the main worktree
    common: Path  # the real common git dir
    common_entries: tuple[str, ...]  # its entries' names
    home: Path  # the agent's private HOME
    tmp: Path  # its private /tmp
    run: Path | None  # the directory of its broker socket (None: no broker, treerun.py)
    hidden: tuple[Path, ...] = ()  # the user's home, runtime dir
    reexpose: tuple[Path, ...] = ()  # read-only again from under the hidden ones
    coder_git: CoderGit | None = None
    network: bool = True  # share the host's network (False: a network namespace of its own)
    # `git-liza` executables on PATH and the shim mounted over each: git runs a `git-liza` it
    # finds before the `git liza` alias, and inside it must be the broker's client.
    shim: Path | None = None
    shadowed: tuple[Path, ...] = ()
    # Writable again over the read-only view (treerun.py: the scratch checkout of a merged tree
    # and its worktree admin dir).
    writable: tuple[Path, ...] = ()
    # `.liza/`'s directories of every agent's logs, prompts and reports: hidden (an empty tmpfs),
    # and of them only this launch's own files back, read-only.
    private: tuple[Path, ...] = ()
    own: tuple[Path, ...] = ()
    tmp_max_mb: int | None = None  # /tmp and /dev/shm sized tmpfs (else /tmp is `tmp`, unsized)
    # (ours, the host's): a resolv.conf naming the user-mode network's DNS (usernet.py)
    resolv: tuple[Path, Path] | None = None


def under(path: PurePath, roots: tuple[Path, ...] | list[Path]) -> bool:
    return any(path == r or r in path.parents for r in roots)


def bwrap_argv(bwrap: str, view: View, command: list[str]) -> list[str]:
    """The argv that runs `command` inside `view`."""
    a = [bwrap, "--ro-bind", "/", "/", "--dev", "/dev", "--proc", "/proc",
         "--unshare-user", "--unshare-pid", "--unshare-ipc", "--unshare-uts",
         "--unshare-cgroup-try", "--die-with-parent", "--cap-drop", "ALL"]
    if not view.network:
        a.append("--unshare-net")
    if view.resolv is not None:
        a += ["--ro-bind", str(view.resolv[0]), str(view.resolv[1])]
    hide = [h for h in view.hidden if not under(h, [Path("/tmp")])]  # /tmp is hidden whole
    for h in hide:
        a += ["--tmpfs", str(h)]
    if view.tmp_max_mb:  # RAM: sized, so that a runaway writer fills its own and no more
        size = str(view.tmp_max_mb << 20)
        a += ["--size", size, "--tmpfs", "/tmp", "--size", size, "--tmpfs", "/dev/shm"]
    else:
        a += ["--bind", str(view.tmp), "/tmp"]
    hidden = [*view.hidden, Path("/tmp")]
    for r in view.reexpose:
        if under(r, hidden):
            a += ["--ro-bind", str(r), str(r)]
    for r in (view.main, view.cwd):
        a += ["--ro-bind", str(r), str(r)]
    for d in view.private:
        a += ["--tmpfs", str(d)]
    for f in view.own:
        if under(f, view.private):
            a += ["--ro-bind", str(f), str(f)]
    a += ["--tmpfs", str(view.common)]
    for e in sorted(view.common_entries):
        if e not in HIDDEN_GIT:
            # -try: an entry may be gone by the launch (the user's gc removes its gc.pid, a lock
            # file goes): bubblewrap refused to start the agent over it.
            a += ["--ro-bind-try", str(view.common / e), str(view.common / e)]
    g = view.coder_git
    if view.role == CODER and g is not None:
        a += ["--bind", str(view.cwd), str(view.cwd)]
        a += _coder_git(view, g)
    if view.shim is not None:
        for exe in view.shadowed:
            a += ["--ro-bind", str(view.shim), str(exe)]
    for w in view.writable:
        a += ["--bind", str(w), str(w)]
    a += ["--bind", str(view.home), str(view.home)]
    if view.run is not None:  # the door read-only, the FIFOs' directory writable (fifos.py)
        a += ["--ro-bind", str(view.run), BROKER_INSIDE,
              "--bind", f"{view.run}{CONN_SUFFIX}", BROKER_INSIDE + CONN_SUFFIX]
    # The tmpfs that hide (the home, the common dir) are read-only too once the mounts below
    # them are made: nothing an agent writes there could even pass for the real thing.
    for d in (*hide, view.common, *view.private):
        a += ["--remount-ro", str(d)]
    return [*a, "--chdir", str(view.cwd), "--", *command]


def _coder_git(view: View, g: CoderGit) -> list[str]:
    s, adm = g.shadow, g.shadow / "worktrees" / g.name
    a = ["--ro-bind", str(s), str(s)]
    for d in ("objects", "refs", "logs"):
        a += ["--bind", str(s / d), str(s / d)]
    # The shared objects it borrows, and the live board (the hooks judge commits by it): read-only.
    # (objects/info whole, not its alternates file alone: a directory holding a mount point could
    # still be renamed away and replaced; a mount point itself cannot.)
    a += ["--ro-bind", str(s / "objects/info"), str(s / "objects/info")]
    if "refs" in view.common_entries:
        a += ["--ro-bind", str(view.common / "refs/liza"), str(s / "refs/liza")]
    if "hooks" in view.common_entries:
        a += ["--ro-bind", str(view.common / "hooks"), str(s / "hooks")]
    # The worktree's admin dir (index, logs) writable; what points git elsewhere is not: HEAD (the
    # coder stays on its task branch), commondir, gitdir, config.worktree. Outside the sandbox
    # these files are read by the supervisor's git, so the agent must not be able to change them.
    a += ["--bind", str(g.admin), str(adm)]
    for f in ("HEAD", "gitdir"):
        a += ["--ro-bind", str(g.admin / f), str(adm / f)]
    a += ["--ro-bind", str(g.commondir), str(adm / "commondir")]
    a += ["--ro-bind", str(g.empty), str(adm / "config.worktree")]
    a += ["--ro-bind", str(g.dotgit), str(view.cwd / ".git")]
    return a
