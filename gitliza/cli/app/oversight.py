"""Governance and interop (docs/governance.md): watch, analyze, checkpoint, import, export."""
from __future__ import annotations

from pathlib import Path
from typing import Optional

import typer

from gitliza.cli.app.base import AgentOpt, AtOpt, JsonOpt, NoSyncOpt, app, _run


@app.command()
def watch(once: bool = typer.Option(False, "--once", help="Evaluate once; exit 1 if any alarm."),
          json: bool = typer.Option(False, "--json", help="One JSON object per alert line."),
          quiet: bool = typer.Option(False, "--quiet",
                                     help="Alarms only: no goal lines, no heartbeat line.")
          ) -> None:
    """Alarm monitor: alerts to stderr and .liza/alerts.log as conditions start, escalate, end;
    a goal's start and end, and a heartbeat line at most every 5 minutes (not with --quiet)."""
    from gitliza.cli.commands import governance
    _run(governance.watch, None, json, once=once, quiet=quiet)


@app.command()
def analyze(no_record: bool = typer.Option(False, "--no-record",
                                           help="Report only; record nothing on the board."),
            resolve: Optional[str] = typer.Option(None, "--resolve", metavar="TEXT",
                                                  help="Resolve the open trigger (human)."),
            agent: Optional[str] = AgentOpt, json: bool = JsonOpt,
            no_sync: bool = NoSyncOpt) -> None:
    """Circuit breaker: detect systemic anomaly patterns and record the check on the board (a
    commit, as liza-analyze.sh writes last_check; --no-record only reports); a trigger opens a
    CHECKPOINT."""
    from gitliza.cli.commands import governance
    _run(governance.analyze, agent, json, no_sync, record=not no_record, resolve=resolve)


@app.command()
def checkpoint(reason: str = typer.Option("human review", "--reason"),
               agent: Optional[str] = AgentOpt, json: bool = JsonOpt,
               no_sync: bool = NoSyncOpt) -> None:
    """Open a checkpoint (every machine halts) and write .liza/sprint_summary.md."""
    from gitliza.cli.commands import governance
    _run(governance.checkpoint, agent, json, no_sync, reason=reason)


@app.command("import")
def import_cmd(state: Optional[Path] = typer.Argument(None, metavar="[STATE.yaml]",
                                                      help="Default: .liza/state.yaml."),
               log: Optional[Path] = typer.Option(None, "--log", metavar="LOG.yaml"),
               force: bool = typer.Option(False, "--force",
                                          help="Replace an existing board (kept in the attic)."),
               agent: Optional[str] = AgentOpt, json: bool = JsonOpt) -> None:
    """Import a seed-schema state.yaml (and log.yaml) as a new board."""
    from gitliza.cli.commands import interop
    _run(interop.import_board, agent, json, state=state, log=log, force=force)


@app.command("export")
def export_cmd(at: Optional[str] = AtOpt,
               out: Path = typer.Option(Path("."), "--out", help="Directory, or - for stdout."),
               no_log: bool = typer.Option(False, "--no-log", help="Write state.yaml only."),
               json: bool = JsonOpt) -> None:
    """Write the board (any revision) as the seed schema's state.yaml and log.yaml."""
    from gitliza.cli.commands import interop
    _run(interop.export_board, None, json, at=at, out=out, with_log=not no_log)
