"""Work and review: ready, claim, release, the attic, reassign, submit, claim-review, verdict,
merge, doctor."""
from __future__ import annotations

from typing import Optional

import typer

from gitliza.cli.app.base import AgentOpt, AtOpt, JsonOpt, NoSyncOpt, app, _board, _life, _run, _view


@app.command()
def ready(agent: Optional[str] = AgentOpt, json: bool = JsonOpt, at: Optional[str] = AtOpt) -> None:
    """Claimable tasks, best first."""
    _run(_view().ready, agent, json, at=at)


@app.command()
def claim(task: Optional[str] = typer.Argument(None), agent: Optional[str] = AgentOpt,
          json: bool = JsonOpt, no_sync: bool = NoSyncOpt) -> None:
    """Claim TASK (or the best claimable) into its own worktree."""
    _run(_life().claim, agent, json, no_sync, task=task)


@app.command()
def release(task: str, agent: Optional[str] = AgentOpt, json: bool = JsonOpt,
            no_sync: bool = NoSyncOpt) -> None:
    """Give a claimed task back."""
    _run(_life().release, agent, json, no_sync, task=task)


@app.command()
def attic(task: Optional[str] = typer.Argument(None),
          restore: Optional[str] = typer.Option(
              None, "--restore", help="The entry (its commit id or prefix) to restore."),
          into: Optional[str] = typer.Option(
              None, "--into", help="The new worktree's directory (default .worktrees/attic-...)."),
          agent: Optional[str] = AgentOpt, json: bool = JsonOpt) -> None:
    """The work kept before teardowns (refs/liza-attic/): list it, or restore one entry into a
    new worktree."""
    _run(_life().attic, agent, json, True, task=task, restore=restore, into=into)


@app.command()
def reassign(task: str, to: str = typer.Option(..., "--to", help="The coder that takes it."),
             agent: Optional[str] = AgentOpt, json: bool = JsonOpt,
             no_sync: bool = NoSyncOpt) -> None:
    """The human gives TASK to coder --to: its holder stands down, that coder's supervisor
    claims it."""
    _run(_board().reassign, agent, json, no_sync, task=task, to=to)


@app.command()
def submit(task: str, commit: Optional[str] = typer.Option(None, "--commit"),
           agent: Optional[str] = AgentOpt, json: bool = JsonOpt, no_sync: bool = NoSyncOpt) -> None:
    """Clean-sync check, then READY_FOR_REVIEW with review_commit."""
    _run(_life().submit, agent, json, no_sync, task=task, commit=commit)


@app.command("claim-review")
def claim_review(task: Optional[str] = typer.Argument(None), agent: Optional[str] = AgentOpt,
                 json: bool = JsonOpt, no_sync: bool = NoSyncOpt) -> None:
    """Take a review lease on TASK (or the oldest waiting review)."""
    _run(_life().claim_review, agent, json, no_sync, task=task)


@app.command()
def verdict(task: str, decision: str = typer.Argument(..., metavar="approve|reject"),
            reason: Optional[str] = typer.Option(None, "--reason"),
            commit: Optional[str] = typer.Option(None, "--commit",
                                                 help="The SHA you reviewed (default: worktree HEAD)."),
            evidence: list[str] = typer.Option(
                [], "--evidence", metavar="N=KIND:REF",
                help="Acceptance evidence for criterion N (repeatable): path:FILE[:LINE] in the "
                     "reviewed commit, test:NAME, or command:CMD@sha256:DIGEST of its output."),
            agent: Optional[str] = AgentOpt, json: bool = JsonOpt, no_sync: bool = NoSyncOpt) -> None:
    """Approve or reject; checks the reviewed SHA and the review lease. An approval is a vote
    toward the task's review quorum, with evidence for each acceptance criterion."""
    _run(_life().verdict, agent, json, no_sync, task=task, decision=decision, reason=reason,
         commit=commit, evidence=evidence)


@app.command()
def merge(task: str, agent: Optional[str] = AgentOpt, json: bool = JsonOpt,
          no_sync: bool = NoSyncOpt,
          sandbox: Optional[str] = typer.Option(
              None, "--sandbox", envvar="LIZA_SANDBOX", show_envvar=True,
              help="where scripts/integration-test.sh of the merged tree runs: on (default: a "
                   "sandbox of its own, docs/security.md) | model | offline (the same without "
                   "network) | off (as you)")) -> None:
    """Merge the approved review_commit into the integration branch."""
    _run(_life().merge, agent, json, no_sync, task=task, sandbox=sandbox)


@app.command()
def doctor(fix: bool = typer.Option(False, "--fix"), agent: Optional[str] = AgentOpt,
           json: bool = JsonOpt) -> None:
    """Stale ref locks, dangling worktrees and branches, state vs disk."""
    _run(_life().doctor, agent, json, fix=fix)
