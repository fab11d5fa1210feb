"""Looking at the board: status, join, machines, drain, show, usage, log, validate, verify,
materialize."""
from __future__ import annotations

from typing import Any, List, Optional

import typer

from gitliza.cli.app.base import AgentOpt, AtOpt, JsonOpt, NoSyncOpt, app, usage_app, _run, _trust, _view


@app.command()
def status(agent: Optional[str] = AgentOpt, json: bool = JsonOpt, at: Optional[str] = AtOpt) -> None:
    """The board at a glance."""
    _run(_view().status, agent, json, at=at)


@app.command()
def join(url: str, directory: Optional[str] = typer.Argument(None), json: bool = JsonOpt) -> None:
    """Join a team: clone URL (or use this repository), pull the board, install the hooks."""
    from gitliza.cli.commands import join as j
    _run(j.join, None, json, url=url, directory=directory)


@app.command()
def machines(json: bool = JsonOpt) -> None:
    """The machines the team runs on: live, unreachable (dead or cut off) or gone, their agents."""
    from gitliza.cli.commands import machines as m
    _run(m.machines, None, json)


@app.command()
def drain(machine: str = typer.Argument(..., help="A host name (or its `liza.machine`), as "
                                                  "`git liza machines` lists it."),
          reason: Optional[str] = typer.Option(None, "--reason"),
          json: bool = JsonOpt, no_sync: bool = NoSyncOpt) -> None:
    """Drain a machine: its supervisors finish their current task and take no new one."""
    from gitliza.cli.commands import machines as m
    _run(m.drain, None, json, no_sync, machine=machine, reason=reason)


@app.command()
def undrain(machine: str = typer.Argument(..., help="A drained machine."),
            json: bool = JsonOpt, no_sync: bool = NoSyncOpt) -> None:
    """Let a drained machine's supervisors take work again."""
    from gitliza.cli.commands import machines as m
    _run(m.undrain, None, json, no_sync, machine=machine)


@app.command()
def show(task: str, agent: Optional[str] = AgentOpt, json: bool = JsonOpt,
         at: Optional[str] = AtOpt) -> None:
    """One task with its history."""
    _run(_view().show, agent, json, task=task, at=at)


def _usage() -> Any:
    from gitliza.cli.commands import usage
    return usage


@usage_app.callback()
def usage_cmd(ctx: typer.Context,
              since: Optional[str] = typer.Option(None, "--since",
                                                  help="Runs ended since (ISO time, or 30m/12h/7d)."),
              task: Optional[str] = typer.Option(None, "--task", help="Only this task's runs."),
              by: Optional[str] = typer.Option(None, "--agent", help="Only this agent's runs."),
              all_goals: bool = typer.Option(False, "--all-goals", help="Every goal's runs."),
              json: bool = JsonOpt, at: Optional[str] = AtOpt) -> None:
    """Token usage and cost of the goal's agent runs: totals by agent, task, role, model, goal."""
    if ctx.invoked_subcommand is None:
        _run(_usage().show, None, json, since=since, task=task, by=by, all_goals=all_goals,
             at=at)


@usage_app.command("report")
def usage_report(input_tokens: int = typer.Option(..., "--input", help="Input tokens (cached "
                                                                       "included)."),
                 output_tokens: int = typer.Option(..., "--output", help="Output tokens."),
                 cached_tokens: int = typer.Option(0, "--cached", help="Of the input, cached."),
                 cost: Optional[str] = typer.Option(None, "--cost", help="Cost in USD."),
                 model: Optional[str] = typer.Option(None, "--model"),
                 json: bool = JsonOpt) -> None:
    """Report what this agent run used (for `-- COMMAND` agents; its supervisor records it)."""
    _run(_usage().report, None, json, input_tokens=input_tokens, output_tokens=output_tokens,
         cached_tokens=cached_tokens, cost=cost, model=model)


@app.command("log")
def log_cmd(n: Optional[int] = typer.Option(None, "-n", help="At most N entries."),
            task: Optional[str] = typer.Option(None, "--task"),
            by: Optional[str] = typer.Option(None, "--agent", help="Only ops by this agent."),
            op: List[str] = typer.Option([], "--op", help="Only this op (repeatable)."),
            since: Optional[str] = typer.Option(
                None, "--since", help="From this time: YYYY-MM-DD[THH:MM:SSZ] or an age (2h)."),
            until: Optional[str] = typer.Option(None, "--until", help="Up to this time."),
            all: bool = typer.Option(False, "--all",
                                     help="Bookkeeping too: supervise start/end, usage rows, "
                                          "heartbeats, supervisor renewals."),
            json: bool = JsonOpt, at: Optional[str] = AtOpt) -> None:
    """The transitions read from refs/liza/state, newest first: time, actor, op, task, from -> to
    (paged on a terminal, as git log)."""
    _run(_view().log, None, json, n=n, task=task, by=by, at=at, op=op, since=since, until=until,
         all=all)


@app.command()
def validate(file: Optional[str] = typer.Argument(None, metavar="[FILE]",
                                                 help="A seed-schema state.yaml to check."),
             agent: Optional[str] = AgentOpt, json: bool = JsonOpt,
             at: Optional[str] = AtOpt) -> None:
    """Check the static invariants of the board (exit 4 when broken), or of FILE (exit 1)."""
    _run(_view().validate, agent, json, at=at, file=file)


@app.command()
def verify(since: Optional[str] = typer.Option(None, "--since"),
           at: Optional[str] = AtOpt,
           remote: Optional[str] = typer.Option(None, "--remote", metavar="NAME",
                                                help="Check a remote's board (not adopted)."),
           full: bool = typer.Option(False, "--full", help="From the root, not the newest seal "
                                     "(fetches what a shallow join left on the remote)."),
           json: bool = JsonOpt) -> None:
    """Replay history: every commit is a legal transition reproducing its tree."""
    _run(_trust().verify, None, json, since=since, at=at, remote=remote, full=full)


@app.command()
def materialize(at: Optional[str] = AtOpt, json: bool = JsonOpt) -> None:
    """Write .liza/state.yaml and .liza/log.yaml (the spec's files) from the board."""
    from gitliza.cli.commands import materialize as m
    _run(m.materialize, None, json, at=at)
