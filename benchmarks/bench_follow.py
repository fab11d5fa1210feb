"""What the remote follower costs the remote (issue 48; a script, not a test).

    .venv/bin/python benchmarks/bench_follow.py [MACHINES] [SECONDS] [INTERVAL] [WRITE_EVERY]

MACHINES clones (default 10) of one bare remote, each with its own follower (one per clone, as
on real machines), every clone's `git-upload-pack` and `git-receive-pack` replaced by a wrapper
that logs each call: the requests the remote serves, counted on the server's side (a ls-remote
and a fetch are each one upload-pack, a push one receive-pack). Meanwhile a writer clone adds a
board op every WRITE_EVERY seconds (default 10) and syncs it. Runs SECONDS (default 60) with
follow_interval INTERVAL (default 1, to get many samples fast), then prints the requests per
second per machine, scaled to the default interval of 5 s, and for 10 and 100 machines, and the
client's time of a quiet check (ls-remote only) and of a check that fetched.
"""
from __future__ import annotations

import os
import sys
import tempfile
import threading
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

import pygit2  # noqa: E402

from gitliza.core.ops import Add, ConfigSet, Init  # noqa: E402
from gitliza.git.remotes.remote import resolve  # noqa: E402
from gitliza.git.store import Store  # noqa: E402
from benchutil import git, remote_and_seed  # noqa: E402
from gitliza.services.api import Liza  # noqa: E402
from gitliza.services.sync import engine, follower  # noqa: E402
from benchutil import remote_of  # noqa: E402


def wrapper(tmp: Path, name: str, log: Path) -> Path:
    path = tmp / f"counting-{name}"
    path.write_text(f"#!/bin/sh\necho {name} >> {log}\nexec {name} \"$@\"\n")
    path.chmod(0o755)
    return path


def main(argv: list[str]) -> None:
    machines = int(argv[0]) if argv else 10
    seconds = float(argv[1]) if len(argv) > 1 else 60.0
    interval = int(argv[2]) if len(argv) > 2 else 1
    write_every = float(argv[3]) if len(argv) > 3 else 10.0
    with tempfile.TemporaryDirectory() as d:
        tmp = Path(d)
        os.environ.update(GIT_CONFIG_GLOBAL=str(tmp / "gitconfig"), GIT_CONFIG_NOSYSTEM="1",
                          GIT_AUTHOR_NAME="b", GIT_AUTHOR_EMAIL="b@x", GIT_COMMITTER_NAME="b",
                          GIT_COMMITTER_EMAIL="b@x")
        bare, seed = remote_and_seed(tmp)
        h = Liza.open(seed, "human")
        h.do(Init, goal="bench")
        h.do(ConfigSet, key="follow_interval", value=str(interval))
        engine.sync(h.store, remote_of(h.store, "origin"))
        log = tmp / "requests.log"
        up, rp = wrapper(tmp, "git-upload-pack", log), wrapper(tmp, "git-receive-pack", log)
        clones = []
        for i in range(machines):
            c = tmp / f"m{i}"
            git(tmp, "clone", "-q", str(bare), str(c))
            engine.pull(Store.discover(c), remote_of(Store.discover(c), "origin"))
            git(c, "config", "remote.origin.uploadpack", str(up))
            git(c, "config", "remote.origin.receivepack", str(rp))
            clones.append(c)
        # The client's cost of one check, quiet and after a change (on machine 0).
        s0 = Store.discover(clones[0])
        rem = resolve(clones[0], "origin")
        t = time.perf_counter()
        for _ in range(10):
            follower.check(s0, rem)
        quiet_ms = (time.perf_counter() - t) * 100
        moved_ms = 0.0
        for k in range(5):
            h.do(Add, task=f"pre-{k}", description="x", spec_ref="README", done_when="x",
                 scope="src")
            engine.sync(h.store, remote_of(h.store, "origin"))
            t = time.perf_counter()
            follower.check(s0, rem)
            moved_ms += (time.perf_counter() - t) * 200
        log.write_text("")
        fs = [follower.RemoteFollower(lambda c=c: Store(pygit2.Repository(str(c))), "origin",
                                      lambda _s: None).start() for c in clones]
        stop = threading.Event()
        writes = [0]

        def writer() -> None:
            while not stop.wait(write_every):
                writes[0] += 1
                h.do(Add, task=f"t-{writes[0]}", description="x", spec_ref="README",
                     done_when="x", scope="src")
                engine.sync(h.store, remote_of(h.store, "origin"))  # through the plain path: not counted
        wt = threading.Thread(target=writer, daemon=True)
        started = time.monotonic()
        wt.start()
        time.sleep(seconds)
        stop.set()
        for f in fs:
            f.stop()
        wt.join()
        elapsed = time.monotonic() - started
        calls = log.read_text().split()
        uploads, receives = calls.count("git-upload-pack"), calls.count("git-receive-pack")
        checks = sum(f.checks for f in fs)
        syncs = sum(f.syncs for f in fs)
        per = (uploads + receives) / elapsed / machines
        print(f"{machines} machines, {elapsed:.0f} s, follow_interval {interval} s, a board op "
              f"every {write_every:.0f} s ({writes[0]} ops): {checks} checks, {syncs} syncs; "
              f"the remote served {uploads} upload-pack and {receives} receive-pack")
        print(f"  per machine: {per:.3f} requests/s at follow_interval {interval}; "
              f"{per * interval / 5:.3f} at 5 s")
        print(f"  at follow_interval 5: 10 machines {per * interval / 5 * 10:.1f} requests/s, "
              f"100 machines {per * interval / 5 * 100:.1f} requests/s")
        print(f"  client: a quiet check {quiet_ms:.1f} ms, a check that synced {moved_ms:.1f} ms")


if __name__ == "__main__":
    main(sys.argv[1:])
