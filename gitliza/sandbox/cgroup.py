"""A cgroup of one agent's sandbox, where this machine gives one (docs/security.md "Limits"): a
directory of our own under the supervisor's cgroup in the `pids` and `memory` hierarchies (cgroup
v1), or one directory in the unified tree (v2) where the supervisor's cgroup already delegates
those controllers. `pids.max` bounds every process and thread of the sandbox together (rlimits
cannot: RLIMIT_NPROC is ignored for root), `memory` the sandbox's whole memory (the OOM killer
ends a run past it). Where none can be made, the rlimits and the sized tmpfs (seccomp.py,
policy.py) are all there is.

The launch enters it before bubblewrap starts (`wrap`: a shell that writes its own pid into each
`cgroup.procs`, then execs bubblewrap), so every process of the sandbox is born inside.
"""
from __future__ import annotations

import os
import time
from dataclasses import dataclass
from pathlib import Path

ROOT = Path("/sys/fs/cgroup")
_ENTER = 'for d; do shift; [ "$d" = -- ] && break; echo $$ > "$d/cgroup.procs" || exit 5; done; ' \
         'exec "$@"'


@dataclass
class Cgroup:
    dirs: list[Path]
    version: int

    def wrap(self, argv: list[str]) -> list[str]:
        return ["/bin/sh", "-c", _ENTER, "sh", *map(str, self.dirs), "--", *argv]

    def hits(self) -> list[str]:
        """The limits the sandbox reached (for the supervisor's log)."""
        out = []
        for d in self.dirs:
            events = _read(d / "pids.events")
            if events and any(line.split()[-1] != "0" for line in events.splitlines()
                              if line.startswith("max")):
                out.append(f"pids.max ({_read(d / 'pids.max')})")
            failcnt = _read(d / "memory.failcnt")
            if failcnt and failcnt != "0":
                out.append(f"memory ({int(_read(d / 'memory.limit_in_bytes') or 0) >> 20} MB)")
            mem = _read(d / "memory.events")
            if mem and any(line.startswith("oom_kill ") and line.split()[1] != "0"
                           for line in mem.splitlines()):
                out.append(f"memory.max ({int(_read(d / 'memory.max') or 0) >> 20} MB)")
        return out

    def close(self) -> None:
        for d in self.dirs:
            _kill(d, self.version)
            # A killed process leaves its cgroup a moment later: rmdir until then is EBUSY.
            deadline = time.monotonic() + 5
            while True:
                try:
                    d.rmdir()
                    break
                except OSError:
                    if time.monotonic() > deadline or not d.exists():
                        break
                    time.sleep(0.05)


def make(name: str, pids: int | None, memory_mb: int | None) -> Cgroup | None:
    """A cgroup with these limits, or None where this machine gives none."""
    if not pids and not memory_mb:
        return None
    own = _own()
    if "" in own and (ROOT / "cgroup.controllers").is_file():
        return _v2(ROOT / own[""].lstrip("/"), name, pids, memory_mb)
    made: list[Path] = []
    for ctl, file, value in (("pids", "pids.max", pids),
                             ("memory", "memory.limit_in_bytes",
                              memory_mb << 20 if memory_mb else None)):
        if value is None or ctl not in own:
            continue
        d = ROOT / ctl / own[ctl].lstrip("/") / name
        try:
            d.mkdir()
            made.append(d)
            (d / file).write_text(str(value))
        except OSError:
            continue
    if not made:
        return None
    return Cgroup(made, 1)


def _v2(parent: Path, name: str, pids: int | None, memory_mb: int | None) -> Cgroup | None:
    enabled = (_read(parent / "cgroup.subtree_control") or "").split()
    want = [c for c, v in (("pids", pids), ("memory", memory_mb)) if v and c in enabled]
    if not want:
        return None
    d = parent / name
    try:
        d.mkdir()
        if "pids" in want:
            (d / "pids.max").write_text(str(pids))
        if "memory" in want and memory_mb:
            (d / "memory.max").write_text(str(memory_mb << 20))
    except OSError:
        try:
            d.rmdir()
        except OSError:
            pass
        return None
    return Cgroup([d], 2)


def _own() -> dict[str, str]:
    """This process's cgroup per controller ("" for the unified tree)."""
    out: dict[str, str] = {}
    for line in (_read(Path("/proc/self/cgroup")) or "").splitlines():
        _n, ctls, path = line.split(":", 2)
        for c in ctls.split(","):
            out[c] = path
    return out


def _kill(d: Path, version: int) -> None:
    """Whatever is left in the cgroup (the sandbox is over)."""
    if version == 2 and (d / "cgroup.kill").exists():
        try:
            (d / "cgroup.kill").write_text("1")
        except OSError:
            pass
        return
    for pid in (_read(d / "cgroup.procs") or "").split():
        try:
            os.kill(int(pid), 9)
        except (OSError, ValueError):
            pass


def _read(p: Path) -> str | None:
    try:
        return p.read_text().strip()
    except OSError:
        return None
