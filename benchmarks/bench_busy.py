"""Benchmark: a busy team for a long time (issue 39). A script, not a test (the suite runs a
shorter one: tests/team/test_soak.py):

    .venv/bin/python benchmarks/bench_busy.py [--minutes 120] [--every 3] [--sandbox on]
        [--code DIR] [--out results.json] [--plot docs/img/busy.png --label after]

Two coder supervisors and a reviewer (benchmarks/busyteam.py: instant scripted agents, the
reviewer's supervisor merges), a task added every `--every` seconds, for `--minutes`. Every
`--sample` seconds, per supervisor: RSS, open files (those on packs apart), open files on deleted
packs of the repository's objects/ and of gitliza's own store; the pack count of both pack
directories; the tasks added and merged; the machine's load average (a shared machine makes the
figures noisy: they are printed with the load). At the end, add-to-merge latency per task from
the board's log. `--code DIR` runs the team from another checkout of gitliza (PYTHONPATH), for the
figures before a change. `--plot` draws RSS, open files, pack count and latency against time
(several `--out` files of earlier runs can be drawn together: `--plot-only a.json b.json`).
"""
from __future__ import annotations

import argparse
import json
import os
import signal
import statistics
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

from busyteam import TEAM, Team, pack_counts, proc  # noqa: E402

NAMES = [a for _r, a, _b in TEAM] + ["events", "web", "mcp"]  # the processes sampled


def run(minutes: float, every: float, sample_s: float, sandbox: str, code: str | None,
        out: Path | None, watch: bool = True, port: int = 7391) -> dict[str, object]:
    with tempfile.TemporaryDirectory(prefix="bench-busy-") as tmp:
        team = Team(Path(tmp), sandbox=sandbox, code=code)
        team.setup()
        team.start()
        if watch:
            team.watch(port)
            team.mcp()
        samples: list[dict[str, object]] = []
        t0 = time.monotonic()
        next_add = next_sample = t0
        end = t0 + minutes * 60
        result: dict[str, object] = {}
        try:
            while time.monotonic() < end:
                now = time.monotonic()
                if now >= next_add:
                    team.add()
                    next_add += every
                if now >= next_sample:
                    next_sample += sample_s
                    if watch:
                        team.poke()
                    s: dict[str, object] = {"t": round(now - t0, 1), "added": team.added,
                                            "merged": team.merged(),
                                            "load": round(os.getloadavg()[0], 2),
                                            "packs": pack_counts(team.repo)}
                    for agent, p in list(team.sups.items()):  # supervisors, events, web, mcp
                        got = proc(p.pid)
                        s[agent] = None if got is None else got.__dict__
                    samples.append(s)
                    print(json.dumps(s), flush=True)
                    dead = [a for _r, a, _b in TEAM if a not in team.alive()]
                    if dead:
                        raise RuntimeError(f"{dead} exited:\n" + team.log_tail(dead[0]))
                time.sleep(max(0.0, min(next_add, next_sample) - time.monotonic()))
        finally:
            team.stop()
            lat = team.latencies()
            result = {"minutes": minutes, "every": every, "sandbox": sandbox,
                      "code": code or "this checkout", "samples": samples,
                      "latency": lat, "added": team.added, "merged": len(lat)}
            if lat:
                result["latency_median_s"] = statistics.median(x for _t, x in lat)
                result["latency_max_s"] = max(x for _t, x in lat)
            if out is not None:
                out.write_text(json.dumps(result))
    return result


def summary(result: dict[str, object]) -> str:
    samples = result["samples"]
    assert isinstance(samples, list) and samples
    first, last = samples[min(2, len(samples) - 1)], samples[-1]
    lines = [f"{result['added']} added, {result['merged']} merged in {result['minutes']} min; "
             f"add-to-merge median {result.get('latency_median_s')} s, max "
             f"{result.get('latency_max_s')} s; load {min(s['load'] for s in samples)}-"
             f"{max(s['load'] for s in samples)}"]
    for agent in NAMES:
        a, b = first.get(agent), last.get(agent)
        if a and b:
            peak = max(s[agent]["fds"] + s[agent]["deleted_own"] + s[agent]["deleted_repo"]
                       for s in samples if s.get(agent))
            lines.append(f"  {agent}: RSS {a['rss_kb'] / 1024:.1f} -> {b['rss_kb'] / 1024:.1f} MB"
                         f" (anonymous {a.get('anon_kb', 0) / 1024:.1f} -> {b.get('anon_kb', 0) / 1024:.1f})"
                         f", files {a['fds']} -> {b['fds']}, deleted packs held "
                         f"{a['deleted_own'] + a['deleted_repo']} -> "
                         f"{b['deleted_own'] + b['deleted_repo']}, peak open {peak}")
    lines.append(f"  packs (objects, liza-objects): {first['packs']} -> {last['packs']}, max "
                 f"{max(sum(s['packs']) for s in samples)}")
    return "\n".join(lines)


def plot(results: list[tuple[str, dict[str, object]]], path: Path) -> None:
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    fig, ax = plt.subplots(3, 2, figsize=(11, 10))
    for label, r in results:
        samples = r["samples"]
        assert isinstance(samples, list)
        mins = [s["t"] / 60 for s in samples]
        for agent in NAMES:
            rows = [(m, s[agent]) for m, s in zip(mins, samples) if s.get(agent)]
            ax[0][0].plot([m for m, _ in rows], [p["rss_kb"] / 1024 for _, p in rows],
                          label=f"{label} {agent}")
            # The process's own memory: RSS but the mapped files (packs, libraries)
            ax[2][0].plot([m for m, _ in rows], [p.get("anon_kb", 0) / 1024 for _, p in rows],
                          label=f"{label} {agent}")
            ax[2][1].plot([m for m, _ in rows], [p.get("deleted_maps", 0) for _, p in rows],
                          label=f"{label} {agent}")
            ax[0][1].plot([m for m, _ in rows],
                          [p["fds"] + p["live_packs"] + p["deleted_own"] + p["deleted_repo"]
                           for _, p in rows], label=f"{label} {agent}")
        ax[1][0].plot(mins, [sum(s["packs"]) for s in samples], label=label)
        lat = r["latency"]
        assert isinstance(lat, list)
        ax[1][1].plot([t / 60 for t, _ in lat], [x for _, x in lat], ".", ms=3, label=label)
    for a, title in zip([ax[0][0], ax[0][1], ax[1][0], ax[1][1], ax[2][0], ax[2][1]],
                        ["RSS per process (MB)", "open files per process",
                         "packs (objects/ + liza-objects/)", "add-to-merge latency (s)",
                         "anonymous RSS per process (MB)",
                         "deleted pack files mapped per process"]):
        a.set_title(title, fontsize=10)
        a.set_xlabel("minutes")
        a.grid(alpha=0.3)
        a.legend(fontsize=6)
    fig.tight_layout()
    fig.savefig(path, dpi=100)


def main() -> int:
    # A benchmark stopped with kill must stop its team too (the `finally` in run), not leave
    # three supervisors and the readers working in a deleted directory.
    signal.signal(signal.SIGTERM, lambda *_: sys.exit(143))
    ap = argparse.ArgumentParser(description=__doc__,
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--minutes", type=float, default=120.0)
    ap.add_argument("--every", type=float, default=3.0, help="seconds between two tasks added")
    ap.add_argument("--sample", type=float, default=60.0, help="seconds between two samples")
    ap.add_argument("--sandbox", choices=("on", "off"), default="on")
    ap.add_argument("--code", help="run the team from this gitliza checkout")
    ap.add_argument("--no-readers", action="store_true",
                    help="without `events --follow` and `web` beside the team")
    ap.add_argument("--port", type=int, default=7391, help="the web board's port")
    ap.add_argument("--out", type=Path, help="write the samples and latencies (JSON) here")
    ap.add_argument("--plot", type=Path, help="draw the run (and --plot-with runs) here (PNG)")
    ap.add_argument("--label", default="", help="this run's name in the plot")
    ap.add_argument("--plot-with", nargs="*", default=[], metavar="LABEL=FILE",
                    help="earlier runs (--out files) drawn beside this one")
    ap.add_argument("--plot-only", action="store_true", help="draw the --plot-with runs only")
    args = ap.parse_args()
    runs = []
    for spec in args.plot_with:
        label, _, file = spec.partition("=")
        runs.append((label, json.loads(Path(file).read_text())))
    if not args.plot_only:
        result = run(args.minutes, args.every, args.sample, args.sandbox, args.code, args.out,
                     not args.no_readers, args.port)
        print(summary(result))
        runs.append((args.label, result))
    else:
        for label, r in runs:
            print(label, summary(r), sep="\n")
    if args.plot:
        plot(runs, args.plot)
    return 0


if __name__ == "__main__":
    sys.exit(main())
