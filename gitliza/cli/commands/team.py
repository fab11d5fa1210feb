"""Team commands: pause, resume, abort (board ops that every machine sees), wait, agent."""
from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, Any, Callable, Sequence

from gitliza.core.presence.placement import check_labels
from gitliza.cli.commands import Env
from gitliza.cli.commands.board import report
from gitliza.core.ops.control import AbortOp, Pause, Resume

if TYPE_CHECKING:
    from gitliza.team.launch import Team
    from gitliza.team.stopping import StopSignal


def pause(env: Env, reason: str | None) -> int:
    return report(env, env.liza().do(Pause, reason=reason))


def resume(env: Env, decision: str | None, note: str | None) -> int:
    return report(env, env.liza().do(Resume, decision=decision, note=note))


def abort(env: Env, reason: str | None) -> int:
    return report(env, env.liza().do(AbortOp, reason=reason))


def wait(env: Env, condition: str, task: str | None, status: str | None, since: str | None,
         timeout: float | None) -> int:
    from gitliza.services import wait as w
    cond = w.parse(condition, task=task, status=status, since=since)
    liza = env.liza()
    result = w.wait(liza, cond, timeout)
    env.out.result(result.to_json(), result.describe())
    return 0 if result.met else w.EXIT_TIMEOUT


def agent(env: Env, role: str, cli: str | None, interactive: bool, command: Sequence[str],
          resume_task: str | None, once: bool, takeover: bool, mcp: bool = False,
          permissions: str | None = None, sandbox: str | None = None, pool: bool = False,
          model: str | None = None, labels: str | None = None) -> int:
    from gitliza.sandbox.policy import SandboxMode
    from gitliza.team import stopping
    from gitliza.team.supervisor import Supervisor, SupervisorOptions
    mode = SandboxMode.parse(sandbox)  # once: the supervisor, its box and its runner get it
    signals = stopping.for_process()  # installed already by the entry point, if it is ours
    opts = SupervisorOptions(role=role, cli=cli, interactive=interactive, command=tuple(command),
                             resume_task=resume_task, once=once, takeover=takeover, mcp=mcp,
                             permissions=permissions, sandbox=mode,
                             pool=pool, model=model,
                             labels=check_labels([labels] if labels else []))

    def open_liza() -> Any:
        # A fresh handle per caller (the heartbeat thread has its own), with the same hooks.
        return Env(path=env.path, agent=env.agent, no_sync=env.no_sync).liza()
    try:
        code = Supervisor(open_liza, opts, stop_signal=signals).run()
    finally:
        signals.close()
    if signals.stopping:
        stopping.nudge_git_parent(signals.signum)
    return code


def team(env: Env, planners: int, coders: int, reviewers: int, prefix: str, cli: str | None,
         mcp: bool, command: Sequence[str], logs: Path | None,
         permissions: str | None = None, takeover: bool = False,
         sandbox: str | None = None, max_coders: int = 0, max_reviewers: int = 0,
         labels: str | None = None) -> int:
    """Start the supervisors, relay their output, stop them on SIGINT/SIGTERM; exit 0 when every
    supervisor did (the goal COMPLETED, an ABORT, or nothing left to wait for), 130 or 143 after
    a stop, a member's exit code when it failed at start (the others are stopped)."""
    import sys

    from gitliza.sandbox.box import Sandbox
    from gitliza.services.locations import main_root
    from gitliza.team import stopping
    from gitliza.team.launch import Team, TeamOptions
    from gitliza.team.logins import not_ready
    from gitliza.team.preflight import preflight
    signals = stopping.for_process()  # installed already by the entry point, if it is ours
    try:
        # Every flag parsed and checked once, into the record the team runs on: bad input is
        # one line before anything starts.
        opts = TeamOptions.parse(
            planners=planners, coders=coders, reviewers=reviewers, prefix=prefix,
            max_coders=max_coders, max_reviewers=max_reviewers, cli=cli, command=command,
            mcp=mcp, permissions=permissions, sandbox=sandbox, labels=labels,
            takeover=takeover, no_sync=env.no_sync, logs=logs)
        # Each supervisor checks its sandbox too; refusing here keeps a team from half-starting.
        Sandbox(opts.sandbox)
        config = env.liza().board().config
        opts = opts.following(config.models)

        def warn(line: str) -> None:
            sys.stderr.write(line + "\n")
        used = preflight(opts, config, warn)

        def write(text: str) -> None:
            try:
                sys.stdout.write(text)
                sys.stdout.flush()
            except (OSError, ValueError):
                pass  # our reader is gone; the supervisors still need stopping
        for line in not_ready(used):  # said before any start; its members wait for the login
            write(f"team: {line}\n")
        running = Team(main_root(env.liza().repo), opts, write)
        codes = _run(env, running, write, signals)
    finally:
        signals.close()
    return _ended(env, signals, running, codes)


def _run(env: Env, running: Team, write: Callable[[str], None], signals: StopSignal
         ) -> dict[str, int]:
    """Run the team beside its live follower, its forge bridge and its watcher, the pool sizing
    it if asked; a stop signal stops every supervisor (SIGKILL after KILL_AFTER). Every
    supervisor's exit code."""
    import signal

    from gitliza.services.locations import main_root
    from gitliza.team.follow import Follower
    from gitliza.team.launch import KILL_AFTER

    def on_stop(sig: signal.Signals) -> None:
        running.stop()  # first: the line may not get out
        write(f"team: {sig.name}: stopping every supervisor\n")

    def on_deadline(sig: signal.Signals) -> None:
        killed = running.kill_rest()
        if killed:
            write(f"team: {', '.join(killed)} still running {KILL_AFTER}s after "
                  f"{sig.name}: killed\n")
    signals.deadline = KILL_AFTER
    signals.attach(on_stop, on_deadline)
    follower = bridge = None
    try:
        follower = Follower(main_root(env.liza().repo), write).start()
        bridge = _team_bridge(env, main_root(env.liza().repo), write)
        watcher = _team_watcher(env, write)
        scaler = None
        try:
            running.start()
            if running.opts.pool:
                from gitliza.team.pool import Scaler
                own = Env(path=env.path, agent=env.agent, no_sync=True).liza()
                scaler = Scaler(own, running, running.opts.pool_sizes()).start()
            return running.wait()
        finally:
            if scaler is not None:
                scaler.stop()
            watcher()
    finally:
        if follower is not None:
            follower.stop()
        if bridge is not None:
            bridge.stop()


def _ended(env: Env, signals: StopSignal, running: Team, codes: dict[str, int]) -> int:
    """The team's report and exit code, once every supervisor exited."""
    from gitliza.team import stopping
    if signals.stopping:
        env.out.result({"exit_codes": codes, "signal": signals.signum and signals.signum.name},
                       f"team: stopped by {signals.signum and signals.signum.name}")
        stopping.nudge_git_parent(signals.signum)
        return signals.exit_code()
    if running.failed is not None:
        agent, code, line = running.failed
        from gitliza.cli.output import err
        err(f"team: {agent} failed at start (exit {code}): {line}; the other members were "
            "stopped")
        return code if code > 0 else 1
    bad = {a: c for a, c in codes.items() if c}
    env.out.result({"exit_codes": codes},
                   "team: every supervisor exited 0" if not bad else
                   "team: " + ", ".join(f"{a} {ended(c)}" for a, c in sorted(bad.items())))
    # A supervisor's own exit code (the taxonomy), or 1 for one killed by a signal.
    return next((c for c in sorted(bad.values()) if c > 0), 1) if bad else 0


def ended(code: int) -> str:
    """How a supervisor ended, in words: SIGTERM or SIGINT, whether it died of the
    signal (-15) or its handler exited 128+N (143), is a stop, not a failure."""
    import signal
    sig = -code if code < 0 else code - 128 if code > 128 else 0
    if sig in (signal.SIGTERM, signal.SIGINT, signal.SIGHUP):
        return f"stopped ({signal.Signals(sig).name})"
    if code < 0:
        return f"killed by {signal.Signals(sig).name}" if sig in signal.valid_signals() \
            else f"killed by signal {sig}"
    return f"exited {code}"


def _team_bridge(env: Env, root: Any, write: Any) -> Any:
    """The board's forge bridge, run by the team while its forge is set (gitliza/forge/run.py:
    one per clone, a candidate like the remote follower; restarted when it dies)."""
    from gitliza.core.terminal import safe_line
    from gitliza.forge.run import TeamBridge
    return TeamBridge(root, lambda s: write(f"team: {safe_line(s)}\n"),
                      sync=not env.no_sync).start()


def _team_watcher(env: Env, write: Any) -> Any:
    """The team tells the human without a `watch` running: a watcher beside the supervisors that
    only sends (the escalation webhook, docs/governance.md), in a thread of its own; what it
    returns ends it, after a last look (a goal that just ended) and a bounded wait for the
    deliveries in flight. Its own lines (a delivery given up) come out as `[notify] ...`."""
    import threading

    from gitliza.governance.watch import Watcher

    class Lines:
        def write(self, text: str) -> int:
            for line in text.splitlines():
                write(f"[notify] {line}\n")
            return len(text)

        def flush(self) -> None:
            pass
    own = Env(path=env.path, agent=env.agent, no_sync=True).liza().store  # this thread's handle
    w = Watcher(own, report=False, err=Lines(),  # type: ignore[arg-type]
                notify=False, remote=not env.no_sync)
    t = threading.Thread(target=w.run, name="liza-team-watch", daemon=True)
    t.start()

    def end() -> None:
        w.stop()
        t.join(timeout=10)
        try:
            w.tick()
        except Exception:  # noqa: BLE001 - the team's own exit code matters more
            pass
        w.close(drain=10.0)
    return end
