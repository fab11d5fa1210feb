"""`--sandbox on`'s network: each agent in a network namespace of its own, with its own loopback
(two agents may each listen on 127.0.0.1:18765), its traffic out through slirp4netns, a
user-mode network from the distribution (docs/security.md "Network").

bubblewrap makes the namespace (`--unshare-net`); once the agent's process has started, the
supervisor finds the sandbox's process in it (`netns_pid`) and attaches slirp4netns to it
(`Link`): a tap interface with 10.0.2.100, a route out through 10.0.2.2, a DNS forwarder on
10.0.2.3, and `--disable-host-loopback`: the host's 127.0.0.1 is not reached through the
gateway. Inside, the seccomp launcher waits for that route (`await_route`) before it execs the
agent, so the agent starts with its network. The host's services a user names
(`sandbox_host_ports`) and the loopback endpoints of the agent's model (a model server on this
machine) are forwarded as the same port on the agent's own loopback, by `--sandbox model`'s
forwarder and gate (netin.py, net.py).

Where slirp4netns is not installed, an agent shares the host's network as before, and its
supervisor says so once.
"""
from __future__ import annotations

import os
import re
import time
from pathlib import Path
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    import subprocess

# (subprocess and shutil are imported where used: the launcher inside imports this module for
# `await_route` alone, at every launch.)

TAP = "tap0"
DNS = "10.0.2.3"  # slirp4netns's DNS forwarder (to the host's resolver)
WAIT_S = 10.0  # how long the launcher waits for the route, and the supervisor for the namespace
MISSING = ("sandbox: slirp4netns not found: agents share this machine's network (install it: "
           "apt-get install slirp4netns; docs/security.md \"Network\")")


def find() -> str | None:
    import shutil
    return shutil.which("slirp4netns")


def parse_ports(text: str | None) -> tuple[int, ...]:
    """`sandbox_host_ports`: ports by spaces or commas ("11434 5432")."""
    return tuple(sorted({int(p) for p in re.split(r"[\s,]+", text or "") if p}))


def has_route(route_table: str) -> bool:
    """/proc/net/route holds a default route through the tap interface."""
    return any(f[0] == TAP and f[1] == "00000000" for f in
               (line.split() for line in route_table.splitlines()[1:]) if len(f) > 2)


def await_route(timeout: float = WAIT_S) -> bool:
    """Inside: until slirp4netns has brought the interface up (True), or `timeout`."""
    deadline = time.monotonic() + timeout
    while True:
        try:
            if has_route(Path("/proc/net/route").read_text()):
                return True
        except OSError:
            pass
        if time.monotonic() > deadline:
            return False
        time.sleep(0.002)


def _children(pid: int) -> list[int]:
    out = []
    try:
        for t in os.listdir(f"/proc/{pid}/task"):
            out += [int(c) for c in Path(f"/proc/{pid}/task/{t}/children").read_text().split()]
    except (OSError, ValueError):
        pass
    return out


def netns_pid(pid: int, timeout: float = WAIT_S) -> int | None:
    """The first process under `pid` (bubblewrap) in a network namespace other than ours, once
    it has a child: bubblewrap's init there forks the command only after it has set up the
    loopback (slirp4netns configuring the namespace at the same time broke that: "loopback:
    Failed RTM_NEWADDR")."""
    try:
        ours = os.stat("/proc/self/ns/net").st_ino
    except OSError:
        return None
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        todo = [pid]
        while todo:
            p = todo.pop()
            try:
                if os.stat(f"/proc/{p}/ns/net").st_ino != ours:
                    if _children(p):
                        return p
                    continue
            except OSError:
                pass
            todo += _children(p)
        if not os.path.exists(f"/proc/{pid}"):
            return None
        time.sleep(0.002)
    return None


NS_GET_USERNS = 0xB701  # ioctl: the user namespace that owns a namespace (linux/nsfs.h)


def owning_userns(pid: int) -> int:
    """A descriptor of the user namespace that owns `pid`'s network namespace: not always the
    one `pid` is in. Unprivileged, bubblewrap makes the namespaces in a first user namespace
    (uid 0 there, to mount /dev/pts) and runs the sandbox in a second one nested in it, whose
    owner may not enter the network namespace ("setns(CLONE_NEWNET): Operation not
    permitted"); slirp4netns must join the first."""
    import fcntl
    fd = os.open(f"/proc/{pid}/ns/net", os.O_RDONLY | os.O_CLOEXEC)
    try:
        return fcntl.ioctl(fd, NS_GET_USERNS)
    finally:
        os.close(fd)


def resolv_conf(path: Path) -> Path:
    """A resolv.conf naming slirp4netns's DNS forwarder (the host's may name a resolver on its
    own loopback, 127.0.0.53, which the agent's loopback is not), the host's search domains
    kept."""
    try:
        host = Path("/etc/resolv.conf").read_text()
    except (OSError, UnicodeDecodeError):
        host = ""
    keep = [line for line in host.splitlines() if line.split()[:1] in (["search"], ["domain"],
                                                                       ["options"])]
    path.write_text("\n".join([f"nameserver {DNS}", *keep]) + "\n")
    return path


class Link:
    """slirp4netns attached to one sandbox's network namespace, for as long as the session."""

    def __init__(self, exe: str) -> None:
        self.exe = exe
        self.proc: subprocess.Popen[bytes] | None = None
        self._exit_w: int | None = None

    def attach(self, pid: int) -> str | None:
        """Attach to the namespace of the sandbox started as `pid`; None, or why not."""
        import subprocess
        self.close()  # a launch before it in the same session: its namespace is gone
        target = netns_pid(pid)
        if target is None:
            return "the sandbox's network namespace was not found"
        try:
            owner = owning_userns(target)
        except OSError as e:
            return f"the sandbox's network namespace: {e.strerror}"
        # slirp4netns ends when the pipe's other end closes: with this process, however it ends
        # (a SIGKILLed supervisor leaves no slirp4netns behind; its own session keeps it out of
        # the agent's process group).
        exit_r, self._exit_w = os.pipe()
        try:
            self.proc = subprocess.Popen(
                [self.exe, "--configure", "--mtu=65520", "--disable-host-loopback",
                 f"--userns-path=/proc/self/fd/{owner}", f"--exit-fd={exit_r}", str(target),
                 TAP],
                stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
                start_new_session=True, pass_fds=(owner, exit_r))
        except OSError as e:
            return f"slirp4netns: {e.strerror}"
        finally:
            os.close(owner)
            os.close(exit_r)
        return None

    def close(self) -> None:
        if self.proc is not None:
            self.proc.kill()
            self.proc.wait()
            self.proc = None
        if self._exit_w is not None:
            os.close(self._exit_w)
            self._exit_w = None
