"""Finding bubblewrap and checking, once per process, that it can start a sandbox here.

Where it cannot (not installed, user namespaces disabled, a container without the privileges to
make one), the supervisor refuses to start an agent: exit 5 with one line naming the fix, unless
the human said `--sandbox off`.
"""
from __future__ import annotations

import shutil
import subprocess
import sys
from functools import cache

from gitliza.errors import MissingDependency

INSTALL = ("install bubblewrap (Debian/Ubuntu: apt-get install bubblewrap; Fedora: dnf install "
           "bubblewrap), or run the agents unsandboxed with --sandbox off")


@cache
def _probe(exe: str) -> str | None:
    """None if `exe` starts a sandbox like ours here, else bubblewrap's one-line reason."""
    try:
        run = subprocess.run(
            [exe, "--ro-bind", "/", "/", "--dev", "/dev", "--proc", "/proc", "--unshare-user",
             "--unshare-pid", "--die-with-parent", "--cap-drop", "ALL", "--", "true"],
            stdin=subprocess.DEVNULL, capture_output=True, timeout=30,
            # Out of the caller's process group: a Ctrl-C to a starting team must not kill the
            # probe and pass for "bubblewrap cannot start" (it dies with us: --die-with-parent).
            start_new_session=True)
    except (OSError, subprocess.TimeoutExpired) as e:
        return str(e)
    if run.returncode == 0:
        return None
    lines = run.stderr.decode("utf-8", "replace").strip().splitlines()
    return lines[-1] if lines else f"exit {run.returncode}"


def require() -> str:
    """The bubblewrap executable, checked to work here; else MissingDependency (exit 5)."""
    if not sys.platform.startswith("linux"):
        raise MissingDependency(f"no agent sandbox on {sys.platform} yet (bubblewrap is Linux's)",
                                hint="run the agents unsandboxed with --sandbox off "
                                     "(docs/security.md)")
    exe = shutil.which("bwrap")
    if exe is None:
        raise MissingDependency("the agent sandbox needs bubblewrap (bwrap), not found on PATH",
                                hint=INSTALL)
    why = _probe(exe)
    if why is not None:
        raise MissingDependency(f"bubblewrap cannot start a sandbox here: {why}",
                                hint="allow unprivileged user namespaces (sysctl "
                                     "kernel.unprivileged_userns_clone=1, or the AppArmor "
                                     "userns restriction), or run with --sandbox off")
    return exe
