"""Board and planning: the goal, config, keys and seals, the planner's task ops, blocks,
discoveries, anomalies, notes, sprints, spec changes, handoffs."""
from __future__ import annotations

from pathlib import Path
from typing import List, Optional

import typer

from gitliza.cli.app.base import AgentOpt, AtOpt, JsonOpt, NoSyncOpt, app, _board, _keys, _run


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
