"""Write the benchmark figures into docs/performance.md and the plots into docs/img/.

Only the part between the markers BEGIN and END is rewritten: the rest of the file (where the time
goes, and the sections other parts of gitliza add: team runtime, governance, agent access) is
prose kept by hand. Each figure names its floor and its ratio to it.
"""
from __future__ import annotations

from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
DOC = ROOT / "docs" / "performance.md"
IMG = ROOT / "docs" / "img"
RESULTS = ROOT / "benchmarks" / "results.json"
BEGIN = "<!-- bench:begin (written by `python3 dev.py bench`: edit benchmarks/report.py, not this) -->"
END = "<!-- bench:end -->"


def _tables(res: dict[str, Any]) -> list[str]:
    out = [f"Measured on: {res['env']}. Medians; the machine is shared, so compare the ratios "
           "(each measured side by side with its floor), not the absolute times.", ""]
    for place in ("tmpfs", "disk"):
        rows = res.get(f"transition_{place}")
        if not rows:
            continue
        out += [f"### One transition in-process ({place})", "",
                "| tasks | median ms | p90 ms | x the 10-task time |", "|---|---|---|---|"]
        out += [f"| {n:,} | {m:.3f} | {p:.3f} | {m / rows[0][1]:.2f} |" for n, m, p in rows]
        goal = 0.6 if place == "tmpfs" else 1.0
        big, ratio = rows[-1][1], rows[-1][1] / rows[0][1]
        out += ["", f"Targets at {rows[-1][0]:,} tasks: median <= {goal} ms: {big:.3f} ms, "
                f"{_met(big <= goal)}; <= 1.2x the 10-task time: {ratio:.2f}x, "
                f"{_met(ratio <= 1.2)}.", ""]
        fs = res.get(f"fs_floor_{place}")
        if fs:
            out += [f"Floor of this file system: the files a transition writes (the pack, its "
                    f"index renamed into place, the ref's lock renamed over the ref), made with "
                    f"bare system calls, median {fs:.3f} ms; gitliza's own share at "
                    f"{rows[-1][0]:,} tasks: {max(big - fs, 0):.3f} ms.", ""]
    for place in ("tmpfs", "disk"):
        rows = res.get(f"signing_{place}")
        if not rows:
            continue
        out += [f"### Signed board commits: one transition, signing off and on ({place})", "",
                "| tasks | signing off, median ms | signing on, median ms | on / off | "
                "target 1.2x |", "|---|---|---|---|---|"]
        out += [f"| {n:,} | {off:.3f} | {on:.3f} | {on / off:.2f} | {_met(on / off <= 1.2)} |"
                for n, off, on in rows]
        out += ["", "On: `signatures = required`, the commit signed in process with the actor's "
                "ed25519 key (SSHSIG in the `gpgsig` header) and checked signable before it is "
                "written; off: an unsigned board. The same op on two boards of the same size, "
                f"interleaved. Measured on: {res.get('signing_env', res['env'])}.", ""]
    if res.get("verify_signed"):
        v = res["verify_signed"]
        out += ["### `verify` with signatures", "",
                "| history | unsigned (off), commits/s | signed (required), commits/s | "
                "signed / unsigned |", "|---|---|---|---|"]
        out += [f"| {n:,} commits | {a:,.0f} | {b:,.0f} | {b / a:.2f} |" for n, a, b in v]
        out += ["", "Every signature checked (ed25519, in process) against its actor's key on "
                "the parent board.", ""]
    if res.get("baseline"):
        disk = dict((n, m) for n, m, _p in res.get("transition_disk", []))
        out += ["### Against the original's design (flock + whole-file YAML, disk)", "",
                "| tasks | YAML+flock ms | gitliza ms | gitliza is faster by |", "|---|---|---|---|"]
        for n, m in res["baseline"]:
            g = disk.get(n)
            out.append(f"| {n:,} | {m:.1f} | {g:.3f} | {m / g:.0f}x |" if g else
                       f"| {n:,} | {m:.1f} | | |")
        out += ["", "![transition cost against board size](img/transition.png)", ""]
    if res.get("cli"):
        c = res["cli"]
        floor = c["python -c 'import pygit2'"]
        out += ["### CLI start (1,000-task board, tmpfs)", "",
                f"Floor: `python -c \"import pygit2\"` = {floor:.1f} ms "
                f"(`python -c pass` = {c['python -c pass']:.1f} ms).", "",
                "| command | median ms | x floor | target | |", "|---|---|---|---|---|"]
        for k in ("add", "heartbeat", "status", "--help", "--version"):
            target = 1.1 if k.startswith("--") else 1.3
            out.append(f"| `git liza {k}` | {c[k]:.1f} | {c[k] / floor:.2f} | {target}x | "
                       f"{_met(c[k] / floor <= target)} |")
        out += ["", "![CLI start against its floor](img/cli.png)", ""]
    if res.get("hooks"):
        h = res["hooks"]
        client_floor = h["commit_plain"] + h["sh"]
        server_cost = h["push_guarded"] - h["push_open"]
        out += ["### Hooks", "",
                "| what | median ms | floor | x floor | target | |", "|---|---|---|---|---|---|",
                f"| a commit on a feature branch, client hooks installed | "
                f"{h['commit_hooked'] * 1000:.1f} | bare `git commit` + `sh -c :` = "
                f"{client_floor * 1000:.1f} ms | {h['commit_hooked'] / client_floor:.2f} | 1.2x | "
                f"{_met(h['commit_hooked'] / client_floor <= 1.2)} |",
                f"| what pre-receive adds to a one-commit push of the board | "
                f"{server_cost * 1000:.1f} | `python -c \"import pygit2\"` = "
                f"{h['python_pygit2'] * 1000:.1f} ms | {server_cost / h['python_pygit2']:.2f} | "
                f"1.5x | {_met(server_cost / h['python_pygit2'] <= 1.5)} |", ""]
    if res.get("sync"):
        out += ["### Sync bringing one op (and sending one)", "",
                "| open tasks (each with its branch on the remote) | sync ms | floor: git fetch + "
                "git push of one ref, ms | x floor | target | |", "|---|---|---|---|---|---|"]
        for n, s in sorted(res["sync"].items()):
            out.append(f"| {n:,} | {s['sync'] * 1000:.0f} | {s['floor'] * 1000:.0f} | "
                       f"{s['sync'] / s['floor']:.2f} | 2x | {_met(s['sync'] / s['floor'] <= 2)} |")
        out.append("")
    if res.get("writers"):
        out += ["### Concurrent writers on one repository (tmpfs)", "",
                "| writers | ops/s | p50 ms | p99 ms | gave up |", "|---|---|---|---|---|"]
        for r in res["writers"]:
            out.append(f"| {r['writers']} | {r['ops_per_s']:.0f} | {r['p50_ms']:.1f} | "
                       f"{r['p99_ms']:.1f} | {r['gave_up']:.1%} |")
        out += ["", "Closed loop (each writer starts its next op when the last one is done): "
                "throughput, not agents; the measured agent figure is under Many agents.", "",
                "![throughput against concurrent writers](img/writers.png)"]
        out.append("")
    if res.get("agents"):
        out += _agents(res["agents"])
    return out


TOPOLOGIES = {"one_repo": ("one repository", "one op alone"),
              "shared_remote": ("one shared remote (`git daemon` on 127.0.0.1, three clones, "
                                "every op followed by a sync)", "git fetch + git push")}


def _agents(a: dict[str, Any]) -> list[str]:
    """The "Many agents" tables (benchmarks/bench_agents.py)."""
    out = ["### Many agents", "",
           f"Open-loop agent traffic at the board's config defaults, {a['mix']}. A pool of writer "
           "processes issues the real ops of N agents at Poisson arrival times; latency runs from "
           "the scheduled arrival (queueing counts) to the op committed (one repository) or "
           "shared on the remote. N grows until more than 1% of the ops fail or p99 exceeds "
           f"1 s; a step that fails is run once more (the machine is shared). Retried: ops that "
           "needed another compare-and-swap (one repository) or sync round (shared remote); CPU "
           "per op: the writers and the git processes they start, not the daemon's. On "
           f"{a['place']}"
           + (" (a quick run: tiny N, not a figure)" if a.get("quick") else "") + ".", ""]
    for key, (title, floor) in TOPOLOGIES.items():
        t = a.get(key)
        if not t:
            continue
        out += [f"#### {title[0].upper()}{title[1:]}", "",
                f"| agents N | ops | ops/s offered | ops/s achieved | p50 ms | p99 ms | floor: "
                f"{floor}, ms | failed | retried | CPU ms per op | |",
                "|---|---|---|---|---|---|---|---|---|---|---|"]
        for r in t["rows"]:
            failed = f"{r['failed_share']:.1%}" + (
                f" ({', '.join(f'{k} {v}' for k, v in r['failed'].items())})" if r["failed"] else "")
            out.append(f"| {r['agents']:,}{' (again)' if r['again'] else ''} | {r['issued']} | "
                       f"{r['offered']:.1f} | {r['achieved']:.1f} | {r['p50_ms']:.0f} | "
                       f"{r['p99_ms']:.0f} | {r.get('floor_ms', 0):.1f} | {failed} | "
                       f"{r['retried']:.0%} | "
                       f"{r['cpu_ms_per_op']:.1f} | {'passed' if r['passed'] else '**failed**'} |")
        out += ["", f"Most agents: **N={t['most']:,}**, limited by {t['limit']}.", ""]
    return out


def _met(ok: bool) -> str:
    return "met" if ok else "**not met**"


def _plots(res: dict[str, Any]) -> None:
    try:
        import matplotlib
        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except ImportError:  # the bench extra is not installed: figures only
        return
    IMG.mkdir(parents=True, exist_ok=True)
    if res.get("transition_disk") or res.get("transition_tmpfs"):
        fig, ax = plt.subplots(figsize=(6.4, 4))
        for place in ("disk", "tmpfs"):
            rows = res.get(f"transition_{place}")
            if rows:
                ax.plot([r[0] for r in rows], [r[1] for r in rows], "o-",
                        label=f"gitliza ({place})")
        if res.get("baseline"):
            ax.plot([r[0] for r in res["baseline"]], [r[1] for r in res["baseline"]], "s--",
                    label="original design: flock + whole-file YAML (disk)")
        ax.set(xscale="log", yscale="log", xlabel="tasks on the board",
               ylabel="one transition, ms (median)", title="Transition cost against board size")
        ax.legend()
        ax.grid(True, which="both", alpha=0.3)
        fig.tight_layout()
        fig.savefig(IMG / "transition.png", dpi=110)
        plt.close(fig)
    if res.get("cli"):
        c = res["cli"]
        keys = ["python -c 'import pygit2'", "add", "heartbeat", "status", "--help", "--version"]
        fig, ax = plt.subplots(figsize=(6.4, 4))
        ax.bar(range(len(keys)), [c[k] for k in keys],
               color=["grey"] + ["tab:blue"] * (len(keys) - 1))
        ax.axhline(c[keys[0]] * 1.3, color="tab:red", ls="--", label="1.3x the floor")
        ax.set_xticks(range(len(keys)), ["floor"] + keys[1:])
        ax.set(ylabel="process, ms (median)", title="CLI start against its floor")
        ax.legend()
        fig.tight_layout()
        fig.savefig(IMG / "cli.png", dpi=110)
        plt.close(fig)
    if res.get("writers"):
        w = res["writers"]
        fig, ax = plt.subplots(figsize=(6.4, 4))
        ax.plot([r["writers"] for r in w], [r["ops_per_s"] for r in w], "o-", label="ops/s")
        ax2 = ax.twinx()
        ax2.plot([r["writers"] for r in w], [r["p99_ms"] for r in w], "s--", color="tab:orange",
                 label="p99 ms")
        ax.set(xlabel="concurrent writer processes", ylabel="transitions per second",
               title="Throughput against concurrent writers (one repository)")
        ax2.set_ylabel("p99 latency, ms")
        fig.legend(loc="upper right")
        fig.tight_layout()
        fig.savefig(IMG / "writers.png", dpi=110)
        plt.close(fig)


def merged(res: dict[str, Any]) -> dict[str, Any]:
    """`res` over the last run's results (benchmarks/results.json), so that `--only cli`
    refreshes its figures and keeps the others; saved back for the next run."""
    import json
    saved: dict[str, Any] = {}
    if RESULTS.exists():
        saved = json.loads(RESULTS.read_text("utf-8"))
    saved.update(res)
    if "sync" in saved:
        saved["sync"] = {int(k): v for k, v in saved["sync"].items()}
    RESULTS.write_text(json.dumps(saved, indent=1, sort_keys=True) + "\n", "utf-8")
    return saved


def write(res: dict[str, Any]) -> None:
    _plots(res)
    block = "\n".join([BEGIN, "", *_tables(res), END])
    text = DOC.read_text("utf-8") if DOC.exists() else "# Performance\n"
    if BEGIN in text and END in text:
        head, rest = text.split(BEGIN, 1)
        text = head + block + rest.split(END, 1)[1]
    else:
        title, _, body = text.partition("\n")
        text = f"{title}\n\n{block}\n{body}"
    DOC.write_text(text, "utf-8")
    print(f"wrote {DOC.relative_to(ROOT)} and {IMG.relative_to(ROOT)}/*.png")
