"""Access for agents and programs: the MCP server, the event stream, top, the web board."""
from __future__ import annotations

from pathlib import Path
from typing import Any, Optional

import typer

from gitliza.cli.app.base import AgentOpt, app, _run


def _access() -> Any:
    from gitliza.cli.commands import access
    return access


@app.command("mcp")
def mcp_cmd(role: Optional[str] = typer.Option(
                None, "--role", help="Expose this role's tools (default: the agent's registered "
                                     "role)."),
            repo: Optional[Path] = typer.Option(None, "--repo",
                                                help="The repository (default: here)."),
            agent: Optional[str] = AgentOpt) -> None:
    """Serve the board to one agent as an MCP server on stdio (needs the `mcp` extra)."""
    _run(_access().mcp, agent, role=role, repo=repo)


@app.command()
def events(since: Optional[str] = typer.Option(
               None, "--since", help="Start after this state (a previous line's state)."),
           follow: bool = typer.Option(False, "--follow", "-f",
                                       help="Then wait for new transitions, forever."),
           json: bool = typer.Option(False, "--json", help="One JSON object per line.")) -> None:
    """The board's transitions, one line per state commit, oldest first."""
    _run(_access().events, None, json, since=since, follow=follow)


@app.command()
def top(once: bool = typer.Option(False, "--once", help="Print one frame and exit."),
        width: Optional[int] = typer.Option(None, "--width", help="Frame width with --once.")
        ) -> None:
    """A live view of the board: tasks, leases, agents, alarms, the last transitions."""
    _run(_access().top, None, once=once, width=width)


@app.command()
def web(port: Optional[int] = typer.Option(None, "--port", help="Default: 7150, else a free one."),
        host: str = typer.Option("127.0.0.1", "--host",
                                 help="Listen here (not loopback: with a warning)."),
        no_open: bool = typer.Option(False, "--no-open", help="Do not open a browser."),
        read_only: bool = typer.Option(False, "--read-only", help="Show the board; no actions.")
        ) -> None:
    """Serve the live web board (needs the `web` extra): one URL with a token, as Jupyter."""
    from gitliza.cli.commands import web as cmd
    _run(cmd.web, None, port=port, host=host, open_browser=not no_open, read_only=read_only)
