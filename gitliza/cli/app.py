"""`git liza ...`: the command line (the only module that imports typer).

Each command is a thin wrapper: it builds an Env, imports its implementation lazily (so that a
command pays only for what it uses) and returns that function's exit code. Every LizaError becomes
one line on stderr and its exit code, in `main`; usage errors exit 1 (not click's 2, which the spec
reserves for a concurrency conflict).

Not split: this is the command table, every command's words, arguments and
help in one place (as the transition table is in core/states.py), and the fast path's spec is
built from this one file's source and keyed by its size and time (gitliza/cli/fastbuild.py). The
code behind each command lives in gitliza/cli/commands/.
"""
from __future__ import annotations

import os
import sys
from pathlib import Path
from typing import Any, Callable, List, Optional

import typer

from gitliza import agentcli
from gitliza.cli.commands import Env

# Plain click help (rich_markup_mode=None): the same text on a terminal and in a pipe, which the
# fast path can serve from its cache; `git liza --help` shows the man page (gitliza/cli/manpage.py).
app = typer.Typer(
    name="git liza", add_completion=False, no_args_is_help=True, pretty_exceptions_enable=False,
    rich_markup_mode=None, help="gitliza: the Liza multi-agent blackboard on refs/liza/state.",
    context_settings={"help_option_names": ["-h", "--help"]})
hooks_app = typer.Typer(help="Install or remove the git hook shims.", no_args_is_help=True,
                        rich_markup_mode=None)
app.add_typer(hooks_app, name="hooks")
usage_app = typer.Typer(help="What the team's agent runs used and cost; an agent's own report.",
                        invoke_without_command=True, rich_markup_mode=None)
app.add_typer(usage_app, name="usage")
forge_app = typer.Typer(help="The forge bridge: a pull request per task, checks and reviews back.",
                        no_args_is_help=True, rich_markup_mode=None)
app.add_typer(forge_app, name="forge")


def _version(value: bool) -> None:
    if value:
        from gitliza import __version__
        sys.stdout.write(f"git-liza version {__version__}\n")
        raise typer.Exit(0)


@app.callback()
def _root(version: bool = typer.Option(False, "--version", is_eager=True, callback=_version,
                                       help="Print the version and exit.")) -> None:
    """gitliza: the Liza multi-agent blackboard on refs/liza/state."""

AgentOpt = typer.Option(None, "--agent", envvar="LIZA_AGENT_ID", show_envvar=True,
                        help="Acting agent id (default: $LIZA_AGENT_ID, else 'human').")
JsonOpt = typer.Option(False, "--json", help="Print one JSON document.")
AtOpt = typer.Option(None, "--at", help="Read the board at this revision of refs/liza/state.")
NoSyncOpt = typer.Option(False, "--no-sync", help="Do not push to the configured sync remote.")


def _run(fn: Callable[..., int], agent: str | None = None, json: bool = False,
         no_sync: bool = False, **kw: Any) -> None:
    env = Env(path=Path.cwd(), agent=agent, json=json, no_sync=no_sync)
    code = fn(env, **kw)
    if code:
        raise typer.Exit(code)


def _board() -> Any:
    from gitliza.cli.commands import board
    return board


def _view() -> Any:
    from gitliza.cli.commands import view
    return view


def _life() -> Any:
    from gitliza.cli.commands import lifecycle
    return lifecycle


def _trust() -> Any:
    from gitliza.cli.commands import trust
    return trust


def _keys() -> Any:
    from gitliza.cli.commands import keys
    return keys


def _sync() -> Any:
    from gitliza.cli.commands import sync
    return sync


# -- board and planning ---------------------------------------------------------------------------
@app.command()
def init(goal: str = typer.Argument(..., help="The goal, in one sentence."),
         integration_branch: Optional[str] = typer.Option(None, "--integration-branch"),
         config: Optional[Path] = typer.Option(None, "--config", help="A TOML file of config."),
         deadline: Optional[str] = typer.Option(None, "--deadline", help="Sprint deadline (ISO)."),
         spec: Optional[str] = typer.Option(
             None, "--spec", help="The goal's spec, a file in the repository (default: "
                                  "specs/vision.md when it exists)."),
         force: bool = typer.Option(
             False, "--force", help="Start a board here even though the sync remote holds one "
                                    "(a second, unrelated board; `git liza pull` adopts theirs)."),
         agent: Optional[str] = AgentOpt, json: bool = JsonOpt,
         no_sync: bool = NoSyncOpt) -> None:
    """Create refs/liza/state with the goal, default config and a sprint (or start the next goal
    on a board whose goal ended)."""
    _run(_board().init, agent, json, no_sync, goal=goal, integration_branch=integration_branch,
         config=config, deadline=deadline, spec=spec, force=force)


@app.command("complete-goal")
def complete_goal(summary: Optional[str] = typer.Option(None, "--summary"),
                  agent: Optional[str] = AgentOpt, json: bool = JsonOpt,
                  no_sync: bool = NoSyncOpt) -> None:
    """Mark the goal and its sprint COMPLETED (every task must be terminal)."""
    _run(_board().complete_goal, agent, json, no_sync, summary=summary)


@app.command("abort-goal")
def abort_goal(reason: str = typer.Option(..., "--reason"), agent: Optional[str] = AgentOpt,
               json: bool = JsonOpt, no_sync: bool = NoSyncOpt) -> None:
    """Mark the goal and its sprint ABORTED."""
    _run(_board().abort_goal, agent, json, no_sync, reason=reason)


@app.command("config", context_settings={"ignore_unknown_options": True})  # `-5` is a value
def config_cmd(key: Optional[str] = typer.Argument(None), value: Optional[str] = typer.Argument(None),
               agent: Optional[str] = AgentOpt, json: bool = JsonOpt, at: Optional[str] = AtOpt,
               no_sync: bool = NoSyncOpt) -> None:
    """Read config, one key, or set KEY VALUE (a recorded transition)."""
    _run(_board().config, agent, json, no_sync, key=key, value=value, at=at)


@app.command()
def upgrade(agent: Optional[str] = AgentOpt, json: bool = JsonOpt,
            no_sync: bool = NoSyncOpt) -> None:
    """Upgrade the board to this gitliza's storage format, in place (one recorded commit)."""
    _run(_board().upgrade, agent, json, no_sync)


@app.command()
def register(agent_id: str = typer.Argument(..., metavar="AGENT"),
             role: str = typer.Option(..., "--role",
                                      help="planner | coder | code-reviewer (or code_reviewer)"),
             terminal: Optional[str] = typer.Option(None, "--terminal"),
             key: Optional[str] = typer.Option(
                 None, "--key", help="The agent's OpenSSH ed25519 public key, or a file holding it."),
             generate_key: bool = typer.Option(
                 False, "--generate-key", help="Make a key pair for an agent on this machine (the "
                 "private key under the git dir, mode 0600); the default when signatures are on."),
             agent: Optional[str] = AgentOpt, json: bool = JsonOpt,
             no_sync: bool = NoSyncOpt) -> None:
    """Register an agent with its role (and the key that signs its board commits)."""
    _run(_keys().register, agent, json, no_sync, agent_id=agent_id, role=role, terminal=terminal,
         key=key, generate_key=generate_key)


@app.command()
def rekey(agent_id: str = typer.Argument(..., metavar="AGENT", help="An agent id, or human."),
          key: Optional[str] = typer.Option(None, "--key", help="The new public key (or a file)."),
          generate_key: bool = typer.Option(False, "--generate-key",
                                            help="Make a new key pair on this machine."),
          revoke: bool = typer.Option(False, "--revoke", help="Revoke the key, no successor."),
          agent: Optional[str] = AgentOpt, json: bool = JsonOpt,
          no_sync: bool = NoSyncOpt) -> None:
    """Rotate or revoke an actor's signing key (the human's op); older commits stay valid."""
    _run(_keys().rekey, agent, json, no_sync, agent_id=agent_id, key=key,
         generate_key=generate_key, revoke=revoke)


@app.command()
def seal(every: Optional[int] = typer.Option(
             None, "--every", metavar="N", help="Only if the newest seal is N or more commits "
             "below the tip (for cron: `git liza seal --every 1000`)."),
         agent: Optional[str] = AgentOpt, json: bool = JsonOpt,
         no_sync: bool = NoSyncOpt) -> None:
    """Seal the history up to here (the human's op, signed where signatures are on): a new clone
    fetches and verifies from the newest seal, `verify --full` still replays everything."""
    _run(_keys().seal, agent, json, no_sync, every=every)


@app.command("allowed-signers")
def allowed_signers(at: Optional[str] = AtOpt,
                    output: Optional[Path] = typer.Option(None, "--output",
                                                          help="Write it to this file."),
                    json: bool = JsonOpt) -> None:
    """Print the board's keys as an allowed-signers file, for
    `git -c gpg.ssh.allowedSignersFile=FILE verify-commit` and `git log --show-signature`."""
    _run(_keys().allowed_signers, None, json, at=at, output=output)


@app.command()
def add(task: Optional[str] = typer.Argument(None, help="The new task's id."),
        desc: Optional[str] = typer.Option(None, "--desc", help="What to build."),
        spec_ref: Optional[str] = typer.Option(None, "--spec-ref"),
        done_when: Optional[str] = typer.Option(None, "--done-when"),
        scope: Optional[str] = typer.Option(None, "--scope"),
        priority: int = typer.Option(3, "--priority", help="1 (highest) to 5 (lowest)."),
        depends_on: List[str] = typer.Option(
            [], "--depends-on", help="A task it waits for (repeat, or a,b)."),
        ready: bool = typer.Option(False, "--ready", help="Finalize now (gates must be met)."),
        max_iterations: Optional[int] = typer.Option(None, "--max-iterations"),
        max_review_cycles: Optional[int] = typer.Option(None, "--max-review-cycles"),
        lease_duration_override: Optional[int] = typer.Option(
            None, "--lease-duration-override", help="Lease seconds for this task's long work."),
        from_file: Optional[str] = typer.Option(
            None, "--from", help="Add every task of a YAML or Markdown file (- for stdin) in one "
                                 "transition; docs/getting-started.md shows the format."),
        budget_tokens: Optional[int] = typer.Option(
            None, "--budget-tokens", help="Tokens this task's runs may spend (overrides config "
                                          "budget_tokens_per_task)."),
        label: List[str] = typer.Option(
            [], "--label", help="A label (repeat, or a,b); config quorum_rules may raise the "
                                "task's review quorum by it."),
        lock_scope: List[str] = typer.Option(
            [], "--lock-scope", help="A glob of the paths it writes (repeat): held as a lock "
                                     "while it is in flight (docs/locks.md)."),
        needs: List[str] = typer.Option(
            [], "--needs", help="A machine label its claimer's supervisor must offer (repeat, or "
                                "gpu,macos; docs/multi-machine.md)."),
        agent: Optional[str] = AgentOpt, json: bool = JsonOpt, no_sync: bool = NoSyncOpt) -> None:
    """Add a DRAFT task (or UNCLAIMED with --ready: gates met, spec on the integration branch),
    or with --from FILE every task of a file, all or none."""
    _run(_board().add, agent, json, no_sync, task=task, desc=desc, spec_ref=spec_ref,
         done_when=done_when, scope=scope, priority=priority, depends_on=depends_on, ready=ready,
         max_iterations=max_iterations, max_review_cycles=max_review_cycles,
         lease_duration_override=lease_duration_override, from_file=from_file,
         budget_tokens=budget_tokens, labels=label, lock_scope=lock_scope, needs=needs)


@app.command()
def edit(task: str, desc: Optional[str] = typer.Option(None, "--desc"),
         spec_ref: Optional[str] = typer.Option(None, "--spec-ref"),
         done_when: Optional[str] = typer.Option(None, "--done-when"),
         scope: Optional[str] = typer.Option(None, "--scope"),
         priority: Optional[int] = typer.Option(None, "--priority"),
         depends_on: List[str] = typer.Option([], "--depends-on", help="Replaces the list."),
         no_depends: bool = typer.Option(False, "--no-depends", help="Clear the dependencies."),
         max_iterations: Optional[int] = typer.Option(None, "--max-iterations"),
         max_review_cycles: Optional[int] = typer.Option(None, "--max-review-cycles"),
         lease_duration_override: Optional[int] = typer.Option(None, "--lease-duration-override"),
         budget_tokens: Optional[int] = typer.Option(None, "--budget-tokens"),
         lock_scope: List[str] = typer.Option(
             [], "--lock-scope", help="Replaces the lock scope (repeat for more globs)."),
         no_lock_scope: bool = typer.Option(False, "--no-lock-scope",
                                            help="Clear the lock scope."),
         agent: Optional[str] = AgentOpt, json: bool = JsonOpt, no_sync: bool = NoSyncOpt) -> None:
    """Refine a DRAFT or UNCLAIMED task (only the fields given change)."""
    _run(_board().edit, agent, json, no_sync, task=task, desc=desc, spec_ref=spec_ref,
         done_when=done_when, scope=scope, priority=priority, depends_on=depends_on,
         no_depends=no_depends, max_iterations=max_iterations,
         max_review_cycles=max_review_cycles, lease_duration_override=lease_duration_override,
         budget_tokens=budget_tokens, lock_scope=lock_scope, no_lock_scope=no_lock_scope)


@app.command()
def finalize(task: str, agent: Optional[str] = AgentOpt, json: bool = JsonOpt,
             no_sync: bool = NoSyncOpt) -> None:
    """DRAFT -> UNCLAIMED (definition gates checked)."""
    _run(_board().simple, agent, json, no_sync, op="finalize", task=task)


@app.command()
def rescope(task: str, into: List[str] = typer.Option(..., "--into"),
            reason: str = typer.Option(..., "--reason"), agent: Optional[str] = AgentOpt,
            json: bool = JsonOpt, no_sync: bool = NoSyncOpt) -> None:
    """Supersede TASK with successor DRAFT tasks."""
    _run(_board().rescope, agent, json, no_sync, task=task, into=into, reason=reason)


@app.command()
def abandon(task: str, reason: str = typer.Option(..., "--reason"),
            agent: Optional[str] = AgentOpt, json: bool = JsonOpt,
            no_sync: bool = NoSyncOpt) -> None:
    """-> ABANDONED."""
    _run(_board().abandon, agent, json, no_sync, task=task, reason=reason)


@app.command()
def unblock(task: str, answer: Optional[str] = typer.Option(
                None, "--answer", help="Answer the blocked questions: a note for the task's next "
                "agent, in the same transition."),
            agent: Optional[str] = AgentOpt, json: bool = JsonOpt,
            no_sync: bool = NoSyncOpt) -> None:
    """BLOCKED -> UNCLAIMED (keeps failed_by)."""
    _run(_board().simple, agent, json, no_sync, op="unblock", task=task, answer=answer)


@app.command("root-cause")
def root_cause(task: str, note: str = typer.Argument(..., help="Why the task keeps failing "
                                                      "review, for the next coder."),
               agent: Optional[str] = AgentOpt, json: bool = JsonOpt,
               no_sync: bool = NoSyncOpt) -> None:
    """Record a BLOCKED task's root cause (the gate after config rca_after_rejections
    rejections): -> UNCLAIMED; the next coder's prompt carries the note."""
    _run(_board().simple, agent, json, no_sync, op="root-cause", task=task, note=note)


@app.command()
def block(task: str, reason: str = typer.Option(..., "--reason"),
          question: List[str] = typer.Option(..., "--question"),
          attempted: List[str] = typer.Option([], "--attempted"),
          for_human: bool = typer.Option(False, "--for-human",
                                         help="Only the human can answer: AWAITING HUMAN."),
          agent: Optional[str] = AgentOpt, json: bool = JsonOpt, no_sync: bool = NoSyncOpt) -> None:
    """-> BLOCKED with a diagnosis (1-3 questions)."""
    _run(_board().block, agent, json, no_sync, task=task, reason=reason, questions=question,
         attempted=attempted, for_human=for_human)


@app.command()
def heartbeat(task: Optional[str] = typer.Option(
                  None, "--task", help="Fail (stand down) unless the agent still holds TASK."),
              agent: Optional[str] = AgentOpt, json: bool = JsonOpt,
              no_sync: bool = NoSyncOpt) -> None:
    """Extend the agent's lease(s)."""
    _run(_board().heartbeat, agent, json, no_sync, task=task)


@app.command()
def discover(description: str = typer.Argument(...),
             id: Optional[str] = typer.Option(None, "--id", help="Default: disc-N."),
             during: Optional[str] = typer.Option(None, "--during"),
             severity: str = typer.Option("medium", "--severity"),
             urgency: str = typer.Option("deferred", "--urgency"),
             recommendation: Optional[str] = typer.Option(None, "--recommendation"),
             agent: Optional[str] = AgentOpt, json: bool = JsonOpt,
             no_sync: bool = NoSyncOpt) -> None:
    """Log a discovery (an adjacent problem, not fixed)."""
    _run(_board().discover, agent, json, no_sync, description=description, disc_id=id,
         during=during, severity=severity, urgency=urgency, recommendation=recommendation)


@app.command()
def convert(discovery: str = typer.Argument(..., metavar="DISCOVERY"),
            task: str = typer.Option(..., "--task", help="The task the discovery became."),
            agent: Optional[str] = AgentOpt, json: bool = JsonOpt,
            no_sync: bool = NoSyncOpt) -> None:
    """Record that a discovery became TASK (sets converted_to_task; planner)."""
    _run(_board().convert, agent, json, no_sync, discovery=discovery, task=task)


@app.command()
def anomaly(type: str = typer.Argument(..., metavar="TYPE"),
            detail: List[str] = typer.Option([], "--detail", help="KEY=VALUE, repeatable."),
            task: Optional[str] = typer.Option(None, "--task"),
            agent: Optional[str] = AgentOpt, json: bool = JsonOpt,
            no_sync: bool = NoSyncOpt) -> None:
    """Log an anomaly; required details are checked."""
    _run(_board().anomaly, agent, json, no_sync, type_=type, details=detail, task=task)


@app.command()
def note(message: str, for_task: Optional[str] = typer.Option(None, "--for"),
         agent: Optional[str] = AgentOpt, json: bool = JsonOpt, no_sync: bool = NoSyncOpt) -> None:
    """Leave a human note (optionally for one task)."""
    _run(_board().note, agent, json, no_sync, message=message, for_task=for_task)


@app.command("sprint-scope")
def sprint_scope(planned: List[str] = typer.Option([], "--planned",
                                                  help="A task the sprint plans (repeatable)."),
                 stretch: List[str] = typer.Option([], "--stretch",
                                                  help="A stretch task (repeatable)."),
                 agent: Optional[str] = AgentOpt, json: bool = JsonOpt,
                 no_sync: bool = NoSyncOpt) -> None:
    """Set the sprint's scope (replaces it); the sprint completes when its planned tasks are
    terminal."""
    _run(_board().sprint_scope, agent, json, no_sync, planned=planned, stretch=stretch)


@app.command("spec-change")
def spec_change(spec: str, change: str = typer.Option(..., "--change"),
                triggered_by: Optional[str] = typer.Option(None, "--triggered-by"),
                agent: Optional[str] = AgentOpt, json: bool = JsonOpt,
                no_sync: bool = NoSyncOpt) -> None:
    """Record a spec modification (append-only)."""
    _run(_board().spec_change, agent, json, no_sync, spec=spec, change=change,
         triggered_by=triggered_by)


@app.command()
def handoff(task: str, summary: str = typer.Option(..., "--summary"),
            next_action: str = typer.Option(..., "--next-action"),
            context_used: Optional[str] = typer.Option(None, "--context-used"),
            approach: Optional[str] = typer.Option(None, "--approach"),
            blockers: Optional[str] = typer.Option(None, "--blockers"),
            file: List[str] = typer.Option([], "--file", help="A modified file, repeatable."),
            next_step: List[str] = typer.Option([], "--next-step"),
            agent: Optional[str] = AgentOpt, json: bool = JsonOpt, no_sync: bool = NoSyncOpt) -> None:
    """Write a context-exhaustion handoff for TASK."""
    _run(_board().handoff, agent, json, no_sync, task=task, summary=summary,
         next_action=next_action, context_used=context_used, approach=approach,
         blockers=blockers, files=file, next_steps=next_step)


# -- work and review ------------------------------------------------------------------------------
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


# -- looking --------------------------------------------------------------------------------------
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


# -- governance and interop (docs/governance.md) -------------------------------------------------
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


# -- infrastructure -------------------------------------------------------------------------------
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


# -- team: supervisors, waiting, pause/resume/abort ----------------------------------------------
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


# -- access (agents and programs) -----------------------------------------------------------------
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


@app.command("help")
def help_cmd(command: Optional[List[str]] = typer.Argument(None, metavar="[COMMAND]...")) -> None:
    """Show the help of COMMAND (of git liza without one)."""
    from gitliza.errors import ValidationError
    group: Any = typer.main.get_command(app)
    ctx: Any = group.context_class(group, info_name="git liza", **group.context_settings)
    cmd: Any = group
    for word in command or []:
        sub = cmd.commands.get(word) if hasattr(cmd, "commands") else None
        if sub is None:
            raise ValidationError(f"no such command: {' '.join(command or [])!r} "
                                  "(git liza help lists the commands)")
        ctx = sub.context_class(sub, info_name=word, parent=ctx, **sub.context_settings)
        cmd = sub
    typer.echo(cmd.get_help(ctx))


@app.command()
def completion(shell: str = typer.Argument(..., metavar="bash|zsh|fish")) -> None:
    """Print the shell completion script for `git liza` (see docs/conventions.md)."""
    from gitliza.cli import completion as c
    _run(c.script, None, False, shell=shell)


def _lean_app(args: list[str]) -> typer.Typer:
    """An app holding only the command being run: typer inspects every command's signature when
    it builds the click group, which a one-shot CLI process should not pay for."""
    name = args[0] if args else None
    infos = [c for c in app.registered_commands
             if name and (c.name or (c.callback.__name__ if c.callback else "")) == name]
    if not infos:
        return app  # help, groups (hooks ...), typos: the full app gives the full answer
    lean = typer.Typer(name=app.info.name, add_completion=False, pretty_exceptions_enable=False,
                       rich_markup_mode=None, context_settings={"help_option_names": ["-h", "--help"]})
    lean.registered_commands = infos
    # A second (hidden) command keeps typer from collapsing the group into the lone command.
    lean.command("-", hidden=True)(lambda: None)
    return lean


def click_group() -> Any:
    """The whole CLI as the click group typer builds (for the man page and the fast path's spec)."""
    return typer.main.get_command(app)


def _refresh_spec() -> None:
    """Save the spec the fast path (gitliza/cli/fastpath.py) runs commands from when app.py changed
    since it was saved: once per change of this file, never a step to remember."""
    from gitliza.cli import caches, fastbuild, fastpath
    if fastpath.load() is not None:
        return
    try:
        spec = fastbuild.build(click_group(), Path(__file__).read_text("utf-8"))
    except Exception:  # the cache only saves time: a failure to build it must not fail a command
        if os.environ.get("LIZA_DEBUG"):
            raise
        return
    caches.write_cache("cli-spec", spec)


COMPLETE_VAR = "_GIT_LIZA_COMPLETE"  # what gitliza/cli/completion.py's scripts set


def _typer_main(args: list[str]) -> int:
    from gitliza.errors import EXIT_VALIDATION
    from gitliza.cli.output import err
    _refresh_spec()
    if COMPLETE_VAR in os.environ:  # typer registers its shell classes only with add_completion
        from typer._completion_classes import completion_init
        completion_init()
    if not args:  # `git liza` alone: the usage on stdout, exit 0, never an "error:" line
        args = ["-h"]
    try:
        command = typer.main.get_command(_lean_app(args))
        code = command.main(args=args, prog_name="git liza", standalone_mode=False,
                            complete_var=COMPLETE_VAR)
        return code if isinstance(code, int) else 0
    except typer.Exit as e:
        return e.exit_code
    except typer.Abort:
        err("aborted")
        return EXIT_VALIDATION


def main(argv: list[str] | None = None) -> int:
    """Entry point of `git-liza` / `gitliza` through typer (gitliza/__main__.py tries the fast path
    first). Returns (and exits with) the exit code."""
    from gitliza.cli.fastpath import guarded
    args = sys.argv[1:] if argv is None else argv
    code: int = guarded(lambda: _typer_main(args), args)
    if argv is None:
        sys.exit(code)
    return code
