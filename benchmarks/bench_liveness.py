"""Liveness on and off the audit chain (issue 28, item 2): what a running team writes to
refs/liza/state and pushes to its shared remote. A script, not a test:

    .venv/bin/python benchmarks/bench_liveness.py [--seconds 60] [--code DIR]

A real team: a clone of a bare remote (auto-sync on: `liza.remote`), one `git liza agent coder`
supervisor whose scripted agent works `--work` seconds per task and then blocks it (one protocol
transition), and one `git liza agent code-reviewer` supervisor with nothing to review (an idle
agent: it only renews its token). Scaled time: heartbeat_interval 1 s, lease_duration 5 s (the
defaults are 60 s and 300 s: every liveness figure scales by 60). The bare remote's post-receive
hook logs every push and the refs it moved.

Measured over the window: the state commits by kind (liveness: heartbeat, supervise renew; the
rest: protocol), their rate per agent-hour, the share that are protocol transitions, and the
pushes per agent per hour (the idle reviewer's apart). `--code DIR` runs the supervisors from
another checkout of gitliza (PYTHONPATH), for the figures before a change.
"""
from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

BIN = Path(sys.executable).parent
LIVENESS_OPS = ("heartbeat",)


def git(cwd: Path, *args: str, env: dict[str, str]) -> str:
    return subprocess.run(["git", *args], cwd=cwd, env=env, check=True, capture_output=True,
                          text=True).stdout.strip()


def liza(cwd: Path, *args: str, env: dict[str, str], agent: str | None = None) -> str:
    e = dict(env, **({"LIZA_AGENT_ID": agent} if agent else {}))
    return subprocess.run([str(BIN / "git-liza"), *args], cwd=cwd, env=e, check=True,
                          capture_output=True, text=True).stdout


def setup(root: Path, env: dict[str, str], tasks: int) -> tuple[Path, Path]:
    bare = root / "remote.git"
    git(root, "init", "-q", "--bare", "-b", "main", str(bare), env=env)
    hook = bare / "hooks" / "post-receive"
    hook.write_text(f"#!/bin/sh\n(echo PUSH; cat) >> {root / 'pushes.log'}\n")
    hook.chmod(0o755)
    clone = root / "clone"
    git(root, "clone", "-q", str(bare), str(clone), env=env)
    (clone / "README.md").write_text("bench\n")
    git(clone, "add", ".", env=env)
    git(clone, "commit", "-qm", "init", env=env)
    git(clone, "push", "-q", "origin", "main", env=env)
    liza(clone, "init", "bench", env=env)
    for k, v in {"heartbeat_interval": "1", "lease_duration": "5", "coder_max_wait": "3600",
                 "reviewer_max_wait": "3600", "planner_max_wait": "3600",
                 "max_launches_per_minute": "600", "restart_delay": "1"}.items():
        liza(clone, "config", k, v, env=env)
    for i in range(tasks):
        liza(clone, "add", f"t{i}", "--desc", "d", "--spec-ref", "README.md", "--done-when",
             "w", "--scope", "x", "--ready", env=env)
    git(clone, "config", "liza.remote", "origin", env=env)
    liza(clone, "sync", env=env)
    return bare, clone


def run(seconds: float, work: float, code: str | None) -> dict[str, object]:
    with tempfile.TemporaryDirectory(prefix="bench-liveness-") as tmp:
        root = Path(tmp)
        home = root / "home"
        home.mkdir()
        env = {k: v for k, v in os.environ.items() if not k.startswith("LIZA_")}
        env.update(PATH=f"{BIN}{os.pathsep}{os.environ.get('PATH', '')}", HOME=str(home),
                   GIT_CONFIG_GLOBAL=str(home / ".gitconfig"), GIT_CONFIG_NOSYSTEM="1",
                   GIT_AUTHOR_NAME="b", GIT_AUTHOR_EMAIL="b@b.invalid", GIT_COMMITTER_NAME="b",
                   GIT_COMMITTER_EMAIL="b@b.invalid")
        if code:
            env["PYTHONPATH"] = code
        bare, clone = setup(root, env, tasks=int(seconds / max(work, 1)) + 5)
        start = git(clone, "rev-parse", "refs/liza/state", env=env)
        (root / "pushes.log").write_text("")
        block = ('sleep {w}; git liza block "$LIZA_TASK_ID" --reason r --question q >/dev/null'
                 .format(w=work))
        sups = [subprocess.Popen([str(BIN / "git-liza"), "agent", role, "--", "sh", "-c", script],
                                 cwd=clone, env=dict(env, LIZA_AGENT_ID=agent),
                                 stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
                for role, agent, script in (("coder", "coder-1", block),
                                            ("code-reviewer", "reviewer-1", "exit 0"))]
        t0 = time.monotonic()
        time.sleep(seconds)
        window = time.monotonic() - t0
        liza(clone, "abort", env=env)
        for p in sups:
            p.wait(120)
        log = json.loads(liza(clone, "log", "--all", "--json", env=env))
        entries = []
        for e in log:
            if e["state"].startswith(start[:10]):
                break
            entries.append(e)
        # The window ends with the abort and the supervisors' exit: those are protocol too.
        kinds: dict[str, int] = {}
        for e in entries:
            live = e["op"] in LIVENESS_OPS or (e["op"] == "supervise" and
                                               (e.get("args") or {}).get("mode") == "renew")
            k = "liveness" if live else "protocol"
            kinds[k] = kinds.get(k, 0) + 1
            if live:
                kinds[f"liveness: {e['summary'].split(' (')[0]}"] = kinds.get(
                    f"liveness: {e['summary'].split(' (')[0]}", 0) + 1
        pushes = (root / "pushes.log").read_text().split("PUSH\n")[1:]
        per_agent: dict[str, int] = {}
        for push in pushes:
            who: set[str] = set()
            for line in push.splitlines():
                parts = line.split()
                if len(parts) != 3:
                    continue
                old, new, ref = parts
                if ref.startswith("refs/liza/live/"):
                    who.add(ref[len("refs/liza/live/"):])
                elif ref == "refs/liza/state":
                    span = new if set(old) == {"0"} else f"{old}..{new}"
                    who.update(git(bare, "log", "--format=%(trailers:key=Liza-Actor,valueonly)",
                                   span, env=env).split())
            for agent in who:
                per_agent[agent] = per_agent.get(agent, 0) + 1
        hours = window / 3600
        total = kinds.get("protocol", 0) + kinds.get("liveness", 0)
        return {"window_s": round(window, 1), "state_commits": kinds,
                "protocol_share": round(kinds.get("protocol", 0) / total, 3) if total else None,
                "liveness_per_agent_hour_scaled": round(kinds.get("liveness", 0) / 2 / hours),
                "pushes": len(pushes),
                "pushes_per_hour_scaled": {k: round(v / hours) for k, v in per_agent.items()},
                "live_refs_on_remote": git(bare, "for-each-ref", "--format=%(refname)",
                                           "refs/liza/live/", env=env).split()}


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__,
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--seconds", type=float, default=60.0)
    ap.add_argument("--work", type=float, default=10.0, help="seconds an agent works per task")
    ap.add_argument("--code", help="run the supervisors from this gitliza checkout")
    args = ap.parse_args()
    print(json.dumps(run(args.seconds, args.work, args.code), indent=2))
    return 0


if __name__ == "__main__":
    sys.exit(main())
