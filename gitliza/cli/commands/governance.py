"""The human's governance commands: watch, analyze, checkpoint (docs/governance.md)."""
from __future__ import annotations

import os
from typing import Any

from gitliza.cli.commands import Env
from gitliza.cli.commands.board import report

STOP_DEADLINE = 30.0  # seconds from a stop signal to the end, stuck or not (webhooks drain in 5)


def watch(env: Env, once: bool, quiet: bool = False) -> int:
    from gitliza.governance.pulse import Pulse
    from gitliza.governance.watch import Watcher
    from gitliza.services.autoseal import Sealer
    sealer = Sealer(env.liza(), env.out.notice)
    pulse = None if quiet or once or env.json else Pulse()

    class SealingWatcher(Watcher):
        """The watcher runs as the human: after each look, a seal where one is due
        (services/autoseal.py), with the human's key at hand; and, unless --quiet, the goal's
        transitions and a heartbeat line (governance/pulse.py)."""

        def tick(self) -> Any:
            reports = super().tick()
            sealer.maybe()
            if pulse is not None:
                now = self.facts.now
                if reports:
                    pulse.spoke(now)
                for line in pulse.lines(self.board, now, len(self.active)):
                    self.err.write(f"[{now}] {line}\n")
                self.err.flush()
            return reports

        def next_timeout(self) -> float | None:
            alarm = super().next_timeout()
            if pulse is None:
                return alarm
            beat = pulse.due(self.now()) + 0.05
            return beat if alarm is None else min(alarm, beat)
    w = SealingWatcher(env.liza().store, json_lines=env.json, remote=not env.no_sync)
    if once:
        w.tick()
        if not w.active and not env.json:  # silence would read as "did it run at all?"
            env.out.line("watch: no alarms")
        w.close(drain=15.0)  # cron's watcher: what fired goes out before it exits
        return 1 if w.active else 0
    # A stop is a flag the loop reads between two looks, never a KeyboardInterrupt raised
    # wherever the main thread happens to be: one raised inside a threading.Event's wait or the
    # ref watcher's observer left `watch` hung for good after Ctrl-C on a loaded machine
    # (team/stopping.py says why). The deadline ends a loop that is stuck anyway.
    from gitliza.team import stopping
    signals = stopping.for_process()
    signals.deadline = STOP_DEADLINE
    signals.attach(lambda _sig: w.stop(), lambda _sig: os._exit(signals.exit_code()))
    from gitliza.services.sync import follower  # the clone's remote follower: a candidate
    remote = follower.start_for(env.liza(), lambda s: env.out.notice(f"watch: {s}"))
    try:
        w.run()
    finally:
        if remote is not None:
            remote.stop()
        w.close(drain=5.0)
        signals.close()
    if signals.stopping:
        stopping.nudge_git_parent(signals.signum)
        return signals.exit_code()
    return 0


def analyze(env: Env, record: bool, resolve: str | None) -> int:
    from gitliza.governance import analyze as a
    liza = env.liza()
    if resolve is not None:
        return report(env, a.resolve(liza, resolve))
    done = a.analyze(liza, record=record)
    hit = done.analysis.triggered
    data = {
        "result": "TRIGGERED" if hit else "OK",
        "window_start": done.analysis.window_start, "anomalies": done.analysis.anomalies,
        "findings": [{"pattern": f.pattern, "severity": f.severity, "shared": f.shared,
                      "tasks": f.tasks, "anomalies": len(f.evidence),
                      "commits": [e.commit for e in f.evidence]} for f in done.analysis.findings],
        "report": str(done.report),
        "recorded": done.recorded.commit if done.recorded else None,
        "checkpoint": done.checkpoint.done.commit if done.checkpoint and done.checkpoint.done
        else None,
    }
    if hit is None:
        text = (f"Circuit breaker: OK \u2014 no patterns detected ({done.analysis.anomalies} "
                f"anomalies since {done.analysis.window_start or 'the start'})")
    else:
        lines = ["\U0001f6a8 CIRCUIT BREAKER TRIGGERED", f"Pattern: {hit.pattern}",
                 f"Severity: {hit.severity}", f"Evidence: {hit.summary()}"]
        lines += [f"Also: {f.summary()}" for f in done.analysis.findings[1:]]
        if done.recorded is None and record:
            lines.append("Already TRIGGERED on the board: resolve it with "
                         "`git liza analyze --resolve TEXT`")
        if done.checkpoint is not None:
            lines.append(f"CHECKPOINT opened; summary in {done.checkpoint.summary}")
        text = "\n".join(lines)
    if done.recorded is not None:  # not a read-only command: say what it wrote, and why
        text += (f"\nRecorded on the board [{done.recorded.commit[:12]}]: circuit_breaker "
                 "last_check, as liza-analyze.sh does (--no-record only reports)")
    env.out.result(data, f"{text}\nReport written to: {done.report}")
    from gitliza.git.remotes import shallow
    cut = shallow.note(liza.store.repo, liza.store.tip())
    if cut is not None and not env.json:  # the window may reach back past what this clone has
        env.out.notice(f"analyze: {cut}")
    return 0


def checkpoint(env: Env, reason: str) -> int:
    from gitliza.governance.checkpoint import open_checkpoint
    opened = open_checkpoint(env.liza(), reason)
    assert opened.done is not None
    code = report(env, opened.done, {"summary": str(opened.summary)})
    if not env.json:
        env.out.line(f"sprint summary written to {opened.summary}; review it, then "
                     "`git liza resume --decision ...`")
    return code
