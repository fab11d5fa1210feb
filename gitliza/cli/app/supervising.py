"""The team: supervisors (`agent`, `team`), `wait`, and pause, resume, abort."""
from __future__ import annotations

from pathlib import Path
from typing import Any, List, Optional

import typer

from gitliza import agentcli
from gitliza.cli.app.base import AgentOpt, JsonOpt, NoSyncOpt, app, _run


def _team() -> Any:
    from gitliza.cli.commands import team
    return team


CLI_HELP = agentcli.choices() + "; A,B: an ordered fallback"  # the CLIs gitliza knows (agentcli/)
PERMISSIONS_HELP = ("worktree (default: edit and run commands in the worktree, call gitliza; "
                    "nothing waits) | bypass (the CLI's approve-everything switch) | own (the "
                    "CLI's own configuration decides)")


# `team` passes its --sandbox (or LIZA_SANDBOX's) to each supervisor it starts, as a flag.
SandboxOpt = typer.Option(None, "--sandbox", envvar="LIZA_SANDBOX", show_envvar=True,
                          help="on (default: each agent in its own OS sandbox, docs/security.md) "
                               "| model (the same, reaching only its model's API hosts and "
                               "LIZA_SANDBOX_ALLOW's) "
                               "| offline (the same, with no network but its supervisor) "
                               "| off (no sandbox; warned at every launch)")


LabelsOpt: Any = typer.Option(
    None, "--labels", help="What this machine offers tasks' `needs` (gpu,macos): only such a "
                           "supervisor claims a task that needs them (docs/multi-machine.md).")


@app.command()
def agent(role: str = typer.Argument(..., help="planner | coder | code-reviewer"),
          command: Optional[List[str]] = typer.Argument(
              None, help="After --: the agent command (the prompt is appended as its last "
                         "argument)."),
          cli: Optional[str] = typer.Option(None, "--cli",
                                            help=CLI_HELP),
          interactive: bool = typer.Option(False, "-i", "--interactive",
                                           help="Print the prompt and wait for you instead."),
          resume_task: Optional[str] = typer.Option(None, "--resume",
                                                    help="RESUME: Task ID in the first prompt."),
          once: bool = typer.Option(False, "--once", help="Run one agent session, then exit."),
          takeover: bool = typer.Option(
              False, "--takeover", help="Take the id from a supervisor that is gone (on another "
              "host; a dead one on this host is taken over by itself)."),
          mcp: bool = typer.Option(False, "--mcp", help="Give the agent gitliza's MCP tools, "
                                   "wired through its CLI's own configuration."),
          permissions: Optional[str] = typer.Option(
              None, "--permissions", help=PERMISSIONS_HELP),
          sandbox: Optional[str] = SandboxOpt,
          pool: bool = typer.Option(False, "--pool", help="A member of a self-sizing team: exit "
                                    "after pool_idle_exit seconds without work."),
          model: Optional[str] = typer.Option(None, "--model",
                                              help="The model the agent CLI runs (its --model)."),
          labels: Optional[str] = LabelsOpt,
          agent: Optional[str] = AgentOpt, json: bool = JsonOpt,
          no_sync: bool = NoSyncOpt) -> None:
    """Supervise an agent: wait for work, claim it, run the agent, heartbeat, restart."""
    _run(_team().agent, agent, json, no_sync, role=role, cli=cli, interactive=interactive,
         command=command or [], resume_task=resume_task, once=once, takeover=takeover, mcp=mcp,
         permissions=permissions, sandbox=sandbox, pool=pool, model=model, labels=labels)


@app.command("team")
def team_cmd(command: Optional[List[str]] = typer.Argument(
                 None, help="After --: the agent command for every member (it reads $LIZA_ROLE)."),
             planners: int = typer.Option(1, "--planners", help="Planner supervisors."),
             coders: int = typer.Option(2, "--coders", help="Coder supervisors."),
             reviewers: int = typer.Option(1, "--reviewers", help="Code-reviewer supervisors."),
             prefix: str = typer.Option("", "--prefix",
                                        help="Before every agent id (one per machine)."),
             cli: Optional[str] = typer.Option(None, "--cli",
                                               help=CLI_HELP),
             mcp: bool = typer.Option(False, "--mcp", help="Hand every agent the MCP server."),
             permissions: Optional[str] = typer.Option(
                 None, "--permissions", help=PERMISSIONS_HELP),
             logs: Optional[Path] = typer.Option(None, "--logs",
                                                 help="Also write each supervisor's log here."),
             sandbox: Optional[str] = SandboxOpt,
             takeover: bool = typer.Option(
                 False, "--takeover", help="Take every member's id from a supervisor that is "
                 "gone (on another host; a dead one on this host is taken over by itself)."),
             max_coders: int = typer.Option(
                 0, "--max-coders", help="Size the coders to the work, up to N (pool members "
                 "exit after pool_idle_exit seconds idle)."),
             max_reviewers: int = typer.Option(
                 0, "--max-reviewers", help="Size the code reviewers to the work, up to N."),
             labels: Optional[str] = LabelsOpt,
             json: bool = JsonOpt, no_sync: bool = NoSyncOpt) -> None:
    """Start a whole team: one `git liza agent` supervisor per member, output labelled."""
    _run(_team().team, None, json, no_sync, planners=planners, coders=coders,
         reviewers=reviewers, prefix=prefix, cli=cli, mcp=mcp, command=command or [], logs=logs,
         permissions=permissions, takeover=takeover, sandbox=sandbox, max_coders=max_coders,
         max_reviewers=max_reviewers, labels=labels)


@app.command("wait")
def wait_cmd(condition: str = typer.Argument(
                 "change", help="change | work | status (with --task and --status)"),
             task: Optional[str] = typer.Option(None, "--task"),
             status: Optional[str] = typer.Option(None, "--status"),
             since: Optional[str] = typer.Option(
                 None, "--since", help="change: differs from this state revision."),
             timeout: Optional[float] = typer.Option(None, "--timeout", help="Seconds."),
             agent: Optional[str] = AgentOpt, json: bool = JsonOpt) -> None:
    """Block until the board satisfies CONDITION (exit 1 on timeout)."""
    _run(_team().wait, agent, json, condition=condition, task=task, status=status,
         since=since, timeout=timeout)


@app.command()
def pause(reason: Optional[str] = typer.Option(None, "--reason"),
          agent: Optional[str] = AgentOpt, json: bool = JsonOpt, no_sync: bool = NoSyncOpt) -> None:
    """Pause the team on every machine: agents exit 42, supervisors wait."""
    _run(_team().pause, agent, json, no_sync, reason=reason)


@app.command()
def resume(decision: Optional[str] = typer.Option(None, "--decision"),
           note: Optional[str] = typer.Option(None, "--note"),
           agent: Optional[str] = AgentOpt, json: bool = JsonOpt, no_sync: bool = NoSyncOpt) -> None:
    """Lift a pause and close an open checkpoint."""
    _run(_team().resume, agent, json, no_sync, decision=decision, note=note)


@app.command()
def abort(reason: Optional[str] = typer.Option(None, "--reason"),
          agent: Optional[str] = AgentOpt, json: bool = JsonOpt, no_sync: bool = NoSyncOpt) -> None:
    """Abort the team on every machine: agents and supervisors stop."""
    _run(_team().abort, agent, json, no_sync, reason=reason)
