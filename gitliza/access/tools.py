"""The agent tools: one per agent-callable CLI command, their input schemas and who may call them.

No MCP here (the SDK is an optional extra): this is the table `gitliza/access/mcp.py` serves, and
what a test or a benchmark can call in process. Input schemas are generated, never written out:
a write tool's from its op record (the frozen dataclass in gitliza/core/ops/, minus the fields
the library fills in itself, such as the worktree a claim creates), a read tool's from the
signature of the library function the CLI's read command uses. Arguments are checked against that
schema before anything runs, so a bad argument changes nothing.

Which role sees which tool comes from the transition table (gitliza/core/states.py) for the ops
that move tasks; the few ops that move none (heartbeat, handoff, journal entries, config) state
their roles here. The ops check roles again when they run: the tool list is for the agent's
benefit, the op is the guard.
"""
from __future__ import annotations

import dataclasses
import inspect
import types
import typing
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Callable, Iterable

from gitliza.core.states import BOARD_OPS, HUMAN_ACTOR, PLANNING, TASK_TRANSITIONS, Role
from gitliza.errors import PermissionDenied, ValidationError

if TYPE_CHECKING:
    from gitliza.services.api import Liza

Runner = Callable[[Any, dict[str, Any]], Any]  # (Liza, checked arguments) -> JSON-able result

# Not agent tools: the board is created (or imported), agents registered, signing keys handed
# out (`rekey`), the history sealed (`seal`) and supervisor generations handed out by the human
# or the supervisor.
# add-tasks is `add --from FILE` (a file of the CLI); an MCP client adds task by task with `add`.
# `usage` is recorded by the supervisor when a run ends (gitliza/team/usage.py), never by its agent.
# `upgrade` is written by the human (`git liza upgrade`) or by the first write of a newer gitliza.
# `conflict` and `carry-approval` record what an in-memory merge found (services/lifecycle/conflicts.py): the shell
# applies it after the merge, never an agent on its word.
NOT_TOOLS = frozenset({"init", "import", "register", "supervise", "rekey", "seal", "add-tasks",
                       "usage", "upgrade", "conflict", "carry-approval"})
AGENTS = frozenset({Role.PLANNER, Role.CODER, Role.CODE_REVIEWER})
EVERYONE = frozenset(Role)

# Argument descriptions shown to the agent (the names and types come from the records).
_DOC = {
    "task": "Task id, e.g. task-1.",
    "at": "Read the board at this revision of refs/liza/state (default: the tip).",
    "commit": "A commit SHA (default: the HEAD of the task worktree).",
    "reason": "Why, in one or two sentences.",
    "n": "At most this many entries.",
    "by": "Only entries by this agent id.",
    "verdict": "approve or reject.",
    "evidence": "With an approval: one entry per acceptance criterion N of the task, "
                "`N=path:FILE[:LINE]` (in the reviewed commit), `N=test:NAME`, or "
                "`N=command:CMD@sha256:DIGEST` (the sha256 of the command's output).",
    "labels": "Labels (a config quorum rule may raise the task's review quorum by them).",
    "criteria": "Acceptance criteria, one line each: an approval gives evidence for each.",
    "details": "Anomaly details, KEY: VALUE (the type's required keys must be present).",
}


@dataclass(frozen=True)
class Tool:
    name: str  # the CLI command with '-' -> '_'
    description: str
    run: Runner
    schema: dict[str, Any]
    roles: frozenset[Role]
    read_only: bool = False
    op: str | None = None  # the op record the schema came from
    # Blocks for long (wait): runs on a repository object of its own, beside the other calls.
    concurrent: bool = False


class ToolRefused(ValidationError):
    """A tool that did its part but must still report failure (e.g. a claim that exhausted the
    task: recorded on the board, but the agent holds nothing). `data` is the result."""

    def __init__(self, message: str, data: dict[str, Any]) -> None:
        super().__init__(message)
        self.data = data


# -- schema generation ----------------------------------------------------------------------------
def json_type(hint: Any) -> dict[str, Any]:
    """The JSON schema of one field type of an op record (the types core/encoding/codec.py knows)."""
    origin, args = typing.get_origin(hint), typing.get_args(hint)
    if origin in (typing.Union, types.UnionType):
        inner = [a for a in args if a is not type(None)]
        if len(inner) == 1:
            return json_type(inner[0])
        return {"type": [json_type(a)["type"] for a in inner]}
    if origin is tuple and len(args) == 2 and args[1] is Ellipsis:
        item = args[0]
        if typing.get_origin(item) is tuple:  # an ordered mapping stored as pairs
            return {"type": "object", "additionalProperties": json_type(typing.get_args(item)[1])}
        return {"type": "array", "items": json_type(item)}
    for py, js in ((bool, "boolean"), (int, "integer"), (str, "string")):
        if hint is py:
            return {"type": js}
    raise TypeError(f"no JSON schema for {hint!r}")


def _schema(params: Iterable[tuple[str, Any, bool]]) -> dict[str, Any]:
    props: dict[str, Any] = {}
    required: list[str] = []
    for name, hint, needed in params:
        prop = json_type(hint)
        if name in _DOC:
            prop["description"] = _DOC[name]
        props[name] = prop
        if needed:
            required.append(name)
    schema: dict[str, Any] = {"type": "object", "properties": props,
                              "additionalProperties": False}
    if required:
        schema["required"] = required
    return schema


def op_schema(cls: type, exclude: Iterable[str] = (), optional: Iterable[str] = ()
              ) -> dict[str, Any]:
    """An op record's own fields (less those every op has: actor, time, the supervisor
    generation, which the server supplies, and less `exclude`) as a tool input schema; a field
    with no default is required unless named in `optional` (the library chooses it then)."""
    from gitliza.core.ops.base import Op
    hints = typing.get_type_hints(cls)
    skip = {f.name for f in dataclasses.fields(Op)} | set(exclude)
    opt = set(optional)
    return _schema((f.name, hints[f.name],
                    f.default is dataclasses.MISSING and f.default_factory is dataclasses.MISSING
                    and f.name not in opt)
                   for f in dataclasses.fields(cls) if f.name not in skip)


def fn_schema(fn: Callable[..., Any]) -> dict[str, Any]:
    """A read function's parameters after the first (the Liza) as a tool input schema."""
    # The first parameter's type (Liza, imported for type checking only) is not evaluated.
    hints = typing.get_type_hints(fn, localns={"Liza": object})
    params = list(inspect.signature(fn).parameters.values())[1:]
    return _schema((p.name, hints[p.name], p.default is inspect.Parameter.empty) for p in params)


def check_args(tool: Tool, args: dict[str, Any] | None) -> dict[str, Any]:
    """The arguments, checked against the tool's schema and converted to what the records hold
    (lists -> tuples, objects -> tuples of pairs). Raises ValidationError, having run nothing."""
    args = dict(args or {})
    props: dict[str, Any] = tool.schema["properties"]
    unknown = sorted(set(args) - set(props))
    if unknown:
        raise ValidationError(f"{tool.name}: unknown argument(s) {', '.join(unknown)}",
                              hint="known: " + (", ".join(props) or "none"))
    missing = [k for k in tool.schema.get("required", ()) if args.get(k) is None]
    if missing:
        raise ValidationError(f"{tool.name}: missing argument(s) {', '.join(missing)}")
    return {k: _convert(f"{tool.name} {k}", props[k], v) for k, v in args.items() if v is not None}


_PY = {"string": str, "integer": int, "boolean": bool}


def _convert(where: str, prop: dict[str, Any], value: Any) -> Any:
    kind = prop["type"]
    if kind == "array":
        if not isinstance(value, list):
            raise ValidationError(f"{where}: expected a list, got {type(value).__name__}")
        return tuple(_convert(f"{where}[{i}]", prop["items"], v) for i, v in enumerate(value))
    if kind == "object":
        if not isinstance(value, dict):
            raise ValidationError(f"{where}: expected an object, got {type(value).__name__}")
        return tuple((str(k), _convert(f"{where}.{k}", prop["additionalProperties"], v))
                     for k, v in value.items())
    kinds = kind if isinstance(kind, list) else [kind]
    # bool is an int in Python: a JSON true must not pass as a priority, nor 1 as a flag.
    if not any(type(value) is _PY[k] for k in kinds):
        raise ValidationError(f"{where}: expected {' or '.join(kinds)}, got {value!r}")
    return value


# -- the tools ------------------------------------------------------------------------------------
def _op_roles(op: str) -> frozenset[Role]:
    return frozenset(r for t in TASK_TRANSITIONS if t.op == op for r in t.roles)


def _build() -> dict[str, Tool]:
    from gitliza.services.lifecycle import claim as claiming
    from gitliza.services.lifecycle import merge as merging
    from gitliza.services.lifecycle import review as reviewing
    from gitliza.services import transitions as tr
    from gitliza.services.views import data as view
    from gitliza.core.ops import base, load_all

    ops = load_all()
    tools: list[Tool] = []

    def write(op: str, description: str, run: Runner | None = None, *,
              exclude: tuple[str, ...] = (), optional: tuple[str, ...] = (),
              roles: frozenset[Role] | None = None) -> None:
        cls = ops[op]
        if run is None:
            def run(liza: Liza, a: dict[str, Any], _cls: type[base.Op] = cls) -> Any:
                return tr.transition_data(tr.do_op(liza, _cls, **a))
        tools.append(Tool(op.replace("-", "_"), description, run,
                          op_schema(cls, exclude, optional), roles or _op_roles(op), op=op))

    def read(name: str, description: str, fn: Callable[..., Any],
             shape: Callable[[Any], Any] = lambda x: x, concurrent: bool = False) -> None:
        def run(liza: Liza, a: dict[str, Any]) -> Any:
            return shape(fn(liza, **a))
        tools.append(Tool(name, description, run, fn_schema(fn), EVERYONE, read_only=True,
                          concurrent=concurrent))

    def claim(liza: Liza, a: dict[str, Any]) -> Any:
        res = claiming.claim(liza, a.get("task"))
        data = tr.transition_data(res.committed, tr.claim_extra(res))
        refused = tr.claim_refusal(res)
        if refused:
            raise ToolRefused(refused, data)
        return data

    def merge(liza: Liza, a: dict[str, Any]) -> Any:
        res = merging.merge(liza, a["task"])
        return tr.transition_data(res.committed, tr.merge_extra(res))

    def release(liza: Liza, a: dict[str, Any]) -> Any:
        done = claiming.release(liza, a["task"])
        return tr.transition_data(done.committed, tr.release_extra(done))

    def submit(liza: Liza, a: dict[str, Any]) -> Any:
        done = reviewing.submit(liza, a["task"], a.get("commit"))
        return tr.transition_data(done.committed, tr.submit_extra(done))

    def claim_review(liza: Liza, a: dict[str, Any]) -> Any:
        done = reviewing.claim_review(liza, a.get("task"))
        return tr.transition_data(done.committed, tr.claim_review_extra(done))

    def verdict(liza: Liza, a: dict[str, Any]) -> Any:
        done = reviewing.verdict(liza, a["task"], a["verdict"], a.get("reason"), a.get("commit"),
                                 a.get("evidence") or ())
        return tr.transition_data(done.committed)

    def heartbeat(liza: Liza, a: dict[str, Any]) -> Any:
        # A renewal off the audit chain (refs/liza/live/<agent>), as `git liza heartbeat`.
        from gitliza.services import liveness
        return liveness.renewal_data(liveness.renew(liza, task=a.get("task")))

    def discover(liza: Liza, a: dict[str, Any]) -> Any:
        return tr.transition_data(tr.do_discover(liza, a.pop("id", None), **a))

    # planning
    write("add", "Add a task: DRAFT, or UNCLAIMED with ready=true (definition gates checked).")
    write("finalize", "DRAFT -> UNCLAIMED (definition gates checked).")
    write("rescope", "Supersede a task with successor DRAFT tasks.")
    write("abandon", "Retire a task (-> ABANDONED).")
    write("unblock", "BLOCKED -> UNCLAIMED (keeps failed_by).")
    write("root-cause", "Record why a BLOCKED task keeps failing review (the root-cause gate); "
          "-> UNCLAIMED, and the next coder's prompt carries the note.")
    write("block", "-> BLOCKED with a diagnosis and 1-3 clarifying questions.")
    write("spec-change", "Record a spec modification (append-only).", roles=PLANNING,
          exclude=("ordered",))
    write("config", "Set one config key (a recorded transition).", roles=PLANNING)
    write("note", "Leave a human note, optionally for one task.", roles=PLANNING,
          exclude=("ordered",))
    # work and review
    write("claim", "Claim a task (or the best claimable one) into its own git worktree.", claim,
          exclude=("worktree", "base_commit", "takeover", "forgive_faults"), optional=("task",))
    write("release", "Give a claimed task back.", release)
    write("submit", "Clean-sync check, then READY_FOR_REVIEW with the review commit.", submit,
          optional=("commit",))
    write("claim-review", "Take a review lease on a task (or the oldest waiting review) and "
          "check out its review commit.", claim_review, exclude=("takeover",),
          optional=("task",))
    write("verdict", "Approve or reject the reviewed commit (the review lease and the SHA are "
          "checked); an approval is a vote toward the review quorum, with evidence for each "
          "acceptance criterion.", verdict, optional=("commit",),
          exclude=("counted", "cli", "model", "evidence"))
    # The evidence as the CLI's N=KIND:REF words (the supervisor, not the agent, records the
    # reviewer's CLI and model: those are no arguments at all).
    tools[-1].schema["properties"]["evidence"] = {
        "type": "array", "items": {"type": "string"}, "description": _DOC["evidence"]}
    write("merge", "Merge the approved review commit into the integration branch.", merge,
          exclude=("result", "merge_commit", "reason", "drift_commits"))
    write("heartbeat", "Extend your lease(s); name the task to fail (stand down) if you no "
          "longer hold it.", heartbeat, roles=AGENTS, exclude=("keep_handoff",))
    write("handoff", "Write a context-exhaustion handoff for your claimed task.",
          roles=frozenset({Role.CODER}))
    write("discover", "Log a discovery: an adjacent problem, not fixed (id defaults to disc-N).",
          discover, optional=("id",), roles=AGENTS)
    write("anomaly", "Log an anomaly; the type's required details are checked.", roles=EVERYONE,
          exclude=("ordered",))
    # Ops landed without a line above still become tools (generic: the op record's fields, the
    # roles of its transitions or of the board ops' table, else the planner's and the human's), so
    # none is left out.
    for name, cls in sorted(ops.items()):
        if name not in NOT_TOOLS and name.replace("-", "_") not in {t.name for t in tools}:
            doc = (cls.__doc__ or "").strip().splitlines()
            write(name, doc[0] if doc and not doc[0].startswith(cls.__name__ + "(")
                  else f"The {name} op.",
                  roles=_op_roles(name) or BOARD_OPS.get(name) or PLANNING)
    # looking
    read("status", "The board: goal, sprint metrics, tasks, agents, claimable tasks.",
         view.status_data)
    read("show", "One task with its history.", view.show_data)
    def usage(liza: Liza, since: str | None = None, task: str | None = None,
              by_agent: str | None = None, at: str | None = None,
              all_goals: bool = False) -> dict[str, Any]:
        # `by_agent`, not `agent`: a tool's `agent` would read as acting as another agent (the
        # actor is the server's agent; the sandbox's relay refuses a call that names another).
        return view.usage_data(liza, since, task, by_agent, at, all_goals)
    read("usage", "Token usage and cost of the goal's agent runs: totals by agent, task, role, "
         "model and goal, the budgets, and each run (by_agent: one agent's runs only).", usage)
    read("ready", "The tasks you can take now (claimable, or reviewable for a reviewer), best "
         "first.", view.ready_tasks,
         lambda r: {"kind": r[0], "tasks": [view.task_row(t) for t in r[1]]})
    read("log", "The audit trail (newest first), one entry per state commit.", view.log_entries)
    read("wait", "Block until the board changes (condition=change, since=STATE), there is work "
         "for you (work), or a task reaches a status (status, with task and status); at most "
         f"timeout seconds (default {WAIT_TIMEOUT}). Returns met=false on timeout.", wait_for,
         concurrent=True)
    return {t.name: t for t in tools}


WAIT_TIMEOUT = 60  # agent CLIs give up on a tool call after a few minutes at most


def wait_for(liza: Liza, condition: str = "change", task: str | None = None,
             status: str | None = None, since: str | None = None,
             timeout: int = WAIT_TIMEOUT) -> dict[str, Any]:
    """`git liza wait` for a tool: the same condition and watcher (gitliza/services/wait.py), on a
    repository object of its own so that it can block beside the agent's other calls."""
    from gitliza.services.api import Liza
    from gitliza.services import wait as w
    if timeout < 0:
        raise ValidationError("wait: timeout must be 0 or more seconds")
    cond = w.parse(condition, task=task, status=status, since=since)
    result: dict[str, Any] = w.wait(Liza.open(liza.store.repo.path, liza.agent), cond,
                                    float(timeout)).to_json()
    return result


_TOOLS: dict[str, Tool] | None = None


def all_tools() -> dict[str, Tool]:
    global _TOOLS
    if _TOOLS is None:
        _TOOLS = _build()
    return _TOOLS


# What a supervisor does for its agent (docs/agents.md: claims, review leases, merges,
# heartbeats, completing the goal): its prompt forbids them, so its tools leave them out.
SUPERVISOR_TOOLS = frozenset({"claim", "claim_review", "merge", "heartbeat", "complete_goal"})


def tools_for(role: Role, supervised: bool = False) -> list[Tool]:
    """The tools of `role`; `supervised` (an agent a `git liza agent` supervisor runs): less
    what the supervisor does for it."""
    return [t for t in all_tools().values()
            if role in t.roles and not (supervised and t.name in SUPERVISOR_TOOLS)]


def resolve_role(board: Any, agent: str, role: str | None) -> Role:
    """The role the server exposes: `role` when given (it must agree with the registration),
    else the agent's registered role; the human actor is the human role."""
    if agent == HUMAN_ACTOR:
        if role not in (None, Role.HUMAN.value):
            raise ValidationError(f"the human actor has the human role, not {role!r}",
                                  hint="set LIZA_AGENT_ID (or --agent) to a registered agent")
        return Role.HUMAN
    registered = board.agent(agent)
    if role is not None:
        from gitliza.core.agents.wake import parse_role
        parsed = parse_role(role) or (Role.HUMAN if role == Role.HUMAN.value else None)
        if parsed is None:
            raise ValidationError(f"unknown role {role!r}",
                                  hint="planner | coder | code-reviewer (or code_reviewer)")
        want: Role = parsed
        if registered is not None and registered.role != want:
            raise PermissionDenied(f"{agent} is registered as {registered.role.value}, "
                                   f"not {want.value}")
        return want
    if registered is None:
        raise ValidationError(f"{agent!r} is not a registered agent and no --role was given",
                              hint=f"`git liza register {agent} --role ROLE`, or pass --role")
    role_: Role = registered.role
    return role_


def call(liza: Liza, role: Role, name: str, args: dict[str, Any] | None,
         supervised: bool = False) -> Any:
    """Run tool `name` for `liza.agent` in `role`. Raises a LizaError (nothing changed unless
    the error says a transition was recorded)."""
    tool = all_tools().get(name)
    if tool is None:
        raise ValidationError(f"unknown tool {name!r}")
    if supervised and name in SUPERVISOR_TOOLS:
        raise PermissionDenied(f"{name} is your supervisor's to do, not a tool of an agent it "
                               "runs")
    if role not in tool.roles:
        raise PermissionDenied(f"{name} is not a {role.value} tool "
                               f"(roles: {', '.join(sorted(r.value for r in tool.roles))})")
    return tool.run(liza, check_args(tool, args))


