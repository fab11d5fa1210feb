"""The seccomp filter every sandboxed process runs under, installed inside the sandbox as
`python -I -m gitliza.sandbox.seccomp -- COMMAND...` (or by netin.py for its command). Standard
library only: it runs inside, before the agent.

What it refuses, and why a filter (docs/security.md "Sockets and the terminal"):
- `socket(AF_UNIX, ...)` (EAFNOSUPPORT): a read-only mount does not stop a `connect()`, so any
  socket the view shows (Docker's, the user's systemd, a database's under /run or /var) would
  answer. With no AF_UNIX socket of its own, an agent reaches none, at any path, abstract ones
  too. Its channel to its supervisor is a pair of FIFOs (client.py), which a filter need not
  allow. `socketpair()` stays: it reaches nothing outside (Node and Python use it for pipes).
- `ioctl(fd, TIOCSTI)` and `ioctl(fd, TIOCLINUX)` (EPERM): pushing input into the terminal an
  interactive agent keeps (CVE-2017-5226; Flatpak's filter). Compared on the low 32 bits, as the
  tty layer reads its command.
- io_uring (ENOSYS): its operations (a socket, a connect) do not pass through this filter.
- x32 system calls and any other architecture's (the process is killed): the numbers above are
  the native ones only.
The filter is inherited across fork and exec and cannot be lifted (no_new_privs is set first).
"""
from __future__ import annotations

import ctypes
import errno
import os
import platform
import struct
import sys

# seccomp_data: int nr; u32 arch; u64 ip; u64 args[6]
_NR, _ARCH, _ARG0, _ARG1 = 0, 4, 16, 24
_LD_ABS, _JEQ, _JGE, _RET = 0x20, 0x15, 0x35, 0x06
ALLOW, KILL = 0x7FFF0000, 0x80000000
AF_UNIX, TIOCSTI, TIOCLINUX = 1, 0x5412, 0x541C
X32_BIT = 0x40000000
# machine -> (audit arch, socket, ioctl, io_uring_setup, io_uring_enter, io_uring_register)
ARCHES = {"x86_64": (0xC000003E, 41, 16, 425, 426, 427),
          "aarch64": (0xC00000B7, 198, 29, 425, 426, 427)}


def _errno(n: int) -> int:
    return 0x00050000 | n


def program(machine: str | None = None) -> bytes:
    """The filter as sock_filter records, for `machine` (default: this one). KeyError: an
    architecture the filter does not know."""
    arch, sock, ioctl, *uring = ARCHES[machine or platform.machine()]
    # (code, jt label, jf label, k); a label is an index of `code` below or a return
    prog: list[tuple[int, str | int, str | int, int]] = []
    labels: dict[str, int] = {}

    def at(name: str) -> None:
        labels[name] = len(prog)

    def op(code: int, k: int, jt: str | int = 0, jf: str | int = 0) -> None:
        prog.append((code, jt, jf, k))

    op(_LD_ABS, _ARCH)
    op(_JEQ, arch, 0, "kill")
    op(_LD_ABS, _NR)
    op(_JGE, X32_BIT, "kill", 0)
    op(_JEQ, sock, "socket", 0)
    op(_JEQ, ioctl, "ioctl", 0)
    for nr in uring:
        op(_JEQ, nr, "nosys", 0)
    op(_RET, ALLOW)
    at("socket")
    op(_LD_ABS, _ARG0)
    op(_JEQ, AF_UNIX, "nounix", 0)
    op(_RET, ALLOW)
    at("ioctl")
    op(_LD_ABS, _ARG1)
    op(_JEQ, TIOCSTI, "eperm", 0)
    op(_JEQ, TIOCLINUX, "eperm", 0)
    op(_RET, ALLOW)
    for name, ret in (("kill", KILL), ("nounix", _errno(errno.EAFNOSUPPORT)),
                      ("eperm", _errno(errno.EPERM)), ("nosys", _errno(errno.ENOSYS))):
        at(name)
        op(_RET, ret)
    out = b""
    for i, (code, jt, jf, k) in enumerate(prog):
        def rel(j: str | int) -> int:
            return labels[j] - i - 1 if isinstance(j, str) else j
        out += struct.pack("HBBI", code, rel(jt), rel(jf), k)
    return out


class _Prog(ctypes.Structure):
    _fields_ = [("len", ctypes.c_ushort), ("filter", ctypes.c_char_p)]


def install() -> None:
    """Load the filter into this process (and so into whatever it runs next). OSError: the
    kernel refused it."""
    code = program()
    libc = ctypes.CDLL(None, use_errno=True)
    prog = _Prog(len(code) // 8, code)
    if libc.prctl(38, 1, 0, 0, 0) != 0:  # PR_SET_NO_NEW_PRIVS
        raise OSError(ctypes.get_errno(), "prctl(PR_SET_NO_NEW_PRIVS)")
    if libc.prctl(22, 2, ctypes.byref(prog), 0, 0) != 0:  # PR_SET_SECCOMP, MODE_FILTER
        raise OSError(ctypes.get_errno(), "prctl(PR_SET_SECCOMP)")


def undumpable() -> None:
    """No process of the agent may ptrace this one or write its memory (netin.py's relay, which
    keeps its unix socket): PR_SET_DUMPABLE 0."""
    ctypes.CDLL(None).prctl(4, 0, 0, 0, 0)


def inside_command(python: str, command: list[str], pids: int | None = None,
                   memory_mb: int | None = None, await_net: bool = False) -> list[str]:
    """`command` under the filter and the limits (python -I: nothing of the environment or the
    working directory decides which code runs); `await_net`: once the user-mode network is up
    (usernet.py)."""
    limits = [*(["--pids", str(pids)] if pids else []),
              *(["--memory-mb", str(memory_mb)] if memory_mb else []),
              *(["--await-net"] if await_net else [])]
    return [python, "-I", "-m", "gitliza.sandbox.seccomp", *limits, "--", *command]


def limit(pids: int | None, memory_mb: int | None) -> None:
    """The rlimits of the sandbox (docs/security.md "Limits"). RLIMIT_NPROC counts the processes
    and threads of this user in this user namespace (the sandbox's own: the kernel's ucounts),
    so it bounds the agent's whole sandbox, not the user's other processes; RLIMIT_DATA bounds
    each process's heap (RLIMIT_AS would break the CLIs: Node's WebAssembly reserves tens of GB
    of address space it never uses)."""
    import resource
    if pids:
        resource.setrlimit(resource.RLIMIT_NPROC, (pids, pids))
    if memory_mb:
        resource.setrlimit(resource.RLIMIT_DATA, (memory_mb << 20, memory_mb << 20))


def main(argv: list[str]) -> int:
    opts: dict[str, int] = {}
    await_net = False
    while argv and argv[0] == "--await-net" or (
            len(argv) >= 2 and argv[0] in ("--pids", "--memory-mb") and argv[1].isdigit()):
        if argv[0] == "--await-net":
            await_net, argv = True, argv[1:]
        else:
            opts[argv[0]], argv = int(argv[1]), argv[2:]
    if await_net:  # the agent starts with its network (its supervisor attaches slirp4netns)
        from gitliza.sandbox.usernet import await_route
        if not await_route():
            sys.stderr.write("gitliza sandbox: the agent's network did not come up: it runs "
                             "with its own loopback only\n")
    if len(argv) < 2 or argv[0] != "--":
        sys.stderr.write("usage: python -m gitliza.sandbox.seccomp [--pids N] [--memory-mb N] "
                         "[--await-net] -- COMMAND...\n")
        return 1
    try:
        limit(opts.get("--pids"), opts.get("--memory-mb"))
        install()
    except (OSError, KeyError, ValueError) as e:  # never run the agent unfiltered
        sys.stderr.write(f"gitliza sandbox: cannot install the seccomp filter or limits: {e}\n")
        return 5
    try:
        os.execvp(argv[1], argv[1:])
    except OSError as e:
        sys.stderr.write(f"gitliza sandbox: cannot run {argv[1]}: {e.strerror}\n")
        return 127


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))
