"""The plumbing: the git hooks, the forge bridge, the hooks' entry point, sync, repair, pull,
push."""
from __future__ import annotations

from typing import Any, Optional

import typer

from gitliza.cli.app.base import AgentOpt, JsonOpt, app, forge_app, hooks_app, _run, _sync, _trust


@hooks_app.command("install")
def hooks_install(server: bool = typer.Option(False, "--server", help="Into a bare repository."),
                  json: bool = JsonOpt) -> None:
    """Install the hook shims (client hooks, or server hooks with --server)."""
    _run(_trust().hooks_install, None, json, server=server)


@hooks_app.command("uninstall")
def hooks_uninstall(json: bool = JsonOpt) -> None:
    """Remove the shims and restore chained hooks."""
    _run(_trust().hooks_uninstall, None, json)


@hooks_app.command("status")
def hooks_status(json: bool = JsonOpt) -> None:
    """Which hooks are installed, at which version."""
    _run(_trust().hooks_status, None, json)


def _forge() -> Any:
    from gitliza.cli.commands import forge
    return forge


@forge_app.command("github")
def forge_github(repo: str = typer.Option(..., "--repo", help="The repository, OWNER/NAME."),
                 api_url: Optional[str] = typer.Option(
                     None, "--api-url", help="GitHub Enterprise Server's (or a test server's) "
                     "API base URL; default https://api.github.com.")) -> None:
    """Mirror the board's tasks as pull requests on GitHub (the human's config; the token stays
    off the board: $GITHUB_TOKEN, `gh auth token` or git config liza.forgeToken)."""
    _run(_forge().github, None, repo=repo, api_url=api_url)


@forge_app.command("status")
def forge_status(json: bool = JsonOpt) -> None:
    """The board's forge, its pull requests, the bridge's last pass and the token's access."""
    _run(_forge().status, None, json)


@forge_app.command("sync")
def forge_sync(once: bool = typer.Option(False, "--once", help="One pass, then exit."),
               interval: float = typer.Option(15.0, "--interval",
                                              help="Seconds between passes.")) -> None:
    """Run the bridge for this clone: pull requests kept in step, checks and reviews back."""
    _run(_forge().sync, None, once=once, interval=interval)


@forge_app.command("serve")
def forge_serve(host: str = typer.Option("127.0.0.1", "--host", help="Address to listen on."),
                port: int = typer.Option(8765, "--port", help="Port for GitHub's webhooks."),
                interval: float = typer.Option(300.0, "--interval",
                                               help="Seconds between passes without a webhook.")
                ) -> None:
    """The bridge with a webhook receiver (X-Hub-Signature-256 checked; the secret from
    $LIZA_FORGE_WEBHOOK_SECRET or git config liza.forgeWebhookSecret): a delivery wakes a pass."""
    _run(_forge().serve, None, host=host, port=port, interval=interval)


@app.command("hook-impl", context_settings={"ignore_unknown_options": True,
                                            "allow_extra_args": True}, hidden=True)
def hook_impl(ctx: typer.Context, hook: str) -> None:
    """What the hook shims call."""
    from gitliza.hooks import dispatch
    code = dispatch.main([hook, *ctx.args])
    if code:
        raise typer.Exit(code)


@app.command("sync")
def sync_cmd(remote: Optional[str] = typer.Argument(None), agent: Optional[str] = AgentOpt,
             json: bool = JsonOpt) -> None:
    """Fetch, replay local ops on the remote tip, push."""
    _run(_sync().sync, agent, json, remote=remote)


@app.command()
def repair(remote: Optional[str] = typer.Argument(None),
           here: bool = typer.Option(False, "--here",
                                     help="Repair this repository's own board (on the server)."),
           json: bool = JsonOpt) -> None:
    """Restore objects the board or branches lack from the remote; rebuild a board that fails
    verification: keep every op still legal, drop the rest."""
    _run(_sync().repair, None, json, remote=remote, here=here)


@app.command()
def pull(remote: Optional[str] = typer.Argument(None), agent: Optional[str] = AgentOpt,
         json: bool = JsonOpt) -> None:
    """Fetch the remote board and bring the local one up to date."""
    _run(_sync().pull, agent, json, remote=remote)


@app.command()
def push(remote: Optional[str] = typer.Argument(None), agent: Optional[str] = AgentOpt,
         json: bool = JsonOpt) -> None:
    """Push the local board (compare-and-swap on the remote ref)."""
    _run(_sync().push, agent, json, remote=remote)
