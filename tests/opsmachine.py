"""A hypothesis state machine that drives random sequences of every registered op through the
library API the CLI uses (`gitliza.services.api.Liza.do` on a real repository), with generated arguments,
and checks after every step that the state chain replays (`verify`) and the board is valid.

Shared by tests/test_ops_property.py (bounded, in CI) and benchmarks/torture.py (long runs).

Arguments are drawn per op field, from the field's name when it names a domain (task ids drawn
from the board's tasks plus fresh ones, agents, shas, enum words...) and from its type otherwise,
so an op added later is driven too, without a line here. Many draws are refused by the op (an
illegal transition, a bad value): a refusal must leave refs/liza/state where it was. An accepted
op must (1) replay from its parent to the same commit, (2) rebuild from its recorded trailers into
the same op, (3) leave a board that passes every static invariant.
"""
from __future__ import annotations

import dataclasses
import shutil
import tempfile
import typing
from collections import Counter
from typing import Any

import pygit2
from hypothesis import strategies as st
from hypothesis.stateful import RuleBasedStateMachine, initialize, invariant, rule

from gitliza.services.api import Liza
from gitliza.core import clock
from gitliza.core.encoding import record
from gitliza.core.invariants import check_board
from gitliza.core.model import ANOMALY_TYPES, Config
from gitliza.core.ops.base import Op, load_all
from gitliza.core.states import HUMAN_ACTOR
from gitliza.errors import LizaError
from gitliza.git.store import Store
from gitliza.services.verify.engine import replay

START = "2030-01-01T00:00:00Z"
ROLES = ("planner", "coder", "code_reviewer")
# Liveness, not structure: an agent that stops heartbeating breaks it as time passes, whatever the
# ops did. Everything else check_board knows must hold after every step.
LIVENESS = "Agent WORKING must have lease_expires in future"

# Text as a user could type it: any unicode (no lone surrogates: a command line cannot carry them
# past the UTF-8 check), quotes, backslashes, control characters, TOML/JSON-looking fragments.
TEXT = st.one_of(
    st.text(min_size=1, max_size=24),
    st.sampled_from(["flatten", "a \"quoted\" value", "back\\slash", "tab\there", "line\nbreak",
                     "[table]", "{ x = 1 }", "ünïcödé ✓ 漢字", "  spaced  ", "#anchor", ""]))
FRESH_TASK = st.builds(lambda n: f"t-{n}", st.integers(0, 40))
BAD_ID = st.sampled_from(["../x", "Bad", "", "a b", "-x"])
SHA = st.text("0123456789abcdef", min_size=40, max_size=40)


PLANNERS = ("planner-1", HUMAN_ACTOR)
CODERS = ("coder-1", "coder-2")
REVIEWERS = ("reviewer-1", "reviewer-2")
SUITED: dict[str, tuple[str, ...]] = {
    **{op: PLANNERS for op in ("add", "edit", "finalize", "rescope", "abandon", "unblock",
                               "config", "register", "convert", "spec-change", "complete-goal",
                               "abort-goal", "init", "note")},
    **{op: CODERS for op in ("claim", "release", "submit", "block", "handoff", "discover")},
    **{op: REVIEWERS for op in ("claim-review", "verdict", "merge")},
    **{op: PLANNERS for op in ("pause", "resume", "abort", "checkpoint")},
    "heartbeat": CODERS + REVIEWERS, "anomaly": CODERS + REVIEWERS + PLANNERS,
}
RARE = ("complete-goal", "abort-goal", "init", "abort", "checkpoint", "pause")


class OpsMachine(RuleBasedStateMachine):
    """One real repository per run; every actor is a `Liza` on it with the machine's clock."""

    def __init__(self) -> None:
        super().__init__()
        self.dir = tempfile.mkdtemp(prefix="liza-ops-")
        repo = pygit2.init_repository(self.dir)
        # The spec the drawn spec_refs name, on the integration branch: the spec gate (Liza.apply)
        # lets the tasks that name it become claimable.
        spec = repo.create_blob(b"# retry\n")
        specs = repo.TreeBuilder()
        specs.insert("r.md", spec, pygit2.enums.FileMode.BLOB)
        root = repo.TreeBuilder()
        root.insert("specs", specs.write(), pygit2.enums.FileMode.TREE)
        sig = pygit2.Signature("t", "t@example.invalid", 1893456000, 0)
        repo.create_commit("refs/heads/integration", sig, sig, "specs", root.write(), [])
        self.store = Store(pygit2.Repository(self.dir))
        self.t = clock.to_epoch(START)
        self.accepted: Counter[str] = Counter()
        self.refused: Counter[str] = Counter()
        self.ops = dict(sorted(load_all().items()))
        self._board: tuple[Any, Any] | None = None
        self.counter = 0

    def teardown(self) -> None:
        try:
            tip = self.store.tip()
            if tip is not None:
                replay(self.store, tip)  # the whole chain, from the root
        finally:
            shutil.rmtree(self.dir, ignore_errors=True)

    # -- the clock and the actors ----------------------------------------------------------------
    def now(self) -> str:
        return clock.from_epoch(self.t)

    def liza(self, actor: str) -> Liza:
        return Liza(self.store, actor, now=self.now, sync=False)

    def board(self) -> Any:
        tip = self.store.tip()
        if self._board is None or self._board[0] != tip:
            self._board = (tip, self.store.board()[0])
        return self._board[1]

    # -- drawing arguments -----------------------------------------------------------------------
    def _ids(self, coll: str) -> list[str]:
        board = self.board()
        if not board.initialized:
            return []
        keys = list(board.keys(coll))
        if coll == "tasks":
            keys += list(board.keys("archive"))
        return keys

    def task_id(self, data: st.DataObject) -> str:
        known = self._ids("tasks")
        if self.rarely(data):
            return data.draw(BAD_ID)
        if known and data.draw(st.sampled_from([True] * 4 + [False])):
            return data.draw(st.sampled_from(known))
        return self.fresh()

    def fresh(self) -> str:
        self.counter += 1
        return f"t-{self.counter}"

    @staticmethod
    def rarely(data: st.DataObject) -> bool:
        """True about one time in ten (hypothesis shrinks toward False, the common case)."""
        return data.draw(st.sampled_from([False] * 9 + [True]))

    def actor(self, data: st.DataObject, op: str) -> str:
        """Mostly an actor whose role may perform `op`, sometimes anyone (refusals are tested)."""
        suited = SUITED.get(op)
        if suited and not self.rarely(data):
            return data.draw(st.sampled_from(suited))
        agents = self._ids("agents")
        choices = [st.just(HUMAN_ACTOR), st.sampled_from(["coder-9", "Bad Actor"])]
        if agents:
            choices += [st.sampled_from(agents)] * 4
        return data.draw(st.one_of(*choices))

    def shas(self) -> list[str]:
        board = self.board()
        if not board.initialized:
            return []
        return sorted({c for t in board.tasks() for c in (t.review_commit, t.base_commit) if c})

    def value(self, data: st.DataObject, name: str, tp: Any, args: dict[str, Any],
              op: str = "") -> Any:
        """A value for field `name` of type `tp`."""
        optional = type(None) in typing.get_args(tp)
        if optional and data.draw(st.sampled_from([False, False, True])):
            return None
        if name == "task" and op == "add" and not self.rarely(data):
            return self.fresh()
        if name == "gen":  # a supervisor generation: mostly none, now and then a stale one
            return data.draw(st.integers(0, 3)) if self.rarely(data) else None
        if name in ("task", "for_task", "during"):
            return self.task_id(data)
        if name == "into":
            n = data.draw(st.integers(0, 3))
            return tuple(data.draw(FRESH_TASK) if self.rarely(data) else self.fresh()
                         for _ in range(n))
        if name == "tasks" and op == "add-tasks":  # a file's tasks: records, fresh ids mostly
            from gitliza.core.ops.planning import NewTask
            known = self._ids("tasks") or ["t-0"]
            return tuple(
                NewTask(task=data.draw(FRESH_TASK) if self.rarely(data) else self.fresh(),
                        description=data.draw(st.sampled_from(["d", " ", "a task"])),
                        spec_ref=data.draw(st.sampled_from([None, "specs/a.md", "../x"])),
                        depends_on=tuple(data.draw(st.lists(st.sampled_from(known),
                                                            max_size=2))),
                        ready=data.draw(st.booleans()))
                for _ in range(data.draw(st.integers(0, 3))))
        if name == "depends_on":
            known = self._ids("tasks") or ["t-0"]
            return tuple(data.draw(st.lists(st.sampled_from(known), max_size=3)))
        if name == "agent":
            return data.draw(BAD_ID) if self.rarely(data) else data.draw(st.sampled_from(
                ["planner-1", "coder-1", "coder-2", "reviewer-1", "reviewer-2"]))
        if name == "role":
            return data.draw(st.sampled_from(ROLES + ("human", "boss")))
        if name in ("id", "discovery"):
            known = self._ids("discovered")
            fresh = st.builds(lambda n: f"disc-{n}", st.integers(0, 9))
            return data.draw(st.one_of(st.sampled_from(known), fresh) if known else fresh)
        if name == "severity":
            return data.draw(st.sampled_from(["critical", "high", "medium", "low", "huge"]))
        if name == "urgency":
            return data.draw(st.sampled_from(["immediate", "deferred", "now"]))
        if name == "verdict":
            return data.draw(st.sampled_from(["approve", "reject", "maybe"]))
        if name == "result":
            return data.draw(st.sampled_from(["merged", "failed", "other"]))
        if name == "type":
            return data.draw(st.sampled_from(ANOMALY_TYPES + ("nonsense",)))
        if name in ("commit", "base_commit", "merge_commit"):
            known = self.shas()
            return data.draw(st.one_of(st.sampled_from(known), SHA) if known else SHA)
        if name == "worktree":
            task = args.get("task")
            return f".worktrees/{task}" if data.draw(st.integers(0, 9)) else ".worktrees/other"
        if name == "key":
            return data.draw(st.sampled_from([f.name for f in dataclasses.fields(Config)]
                                             + ["nope"]))
        if name == "value":
            return data.draw(st.one_of(st.integers(-1, 700).map(str), st.just("integration"),
                                       TEXT))
        if name == "config":
            return tuple(data.draw(st.lists(st.tuples(
                st.sampled_from(["lease_duration", "max_coder_iterations", "max_review_cycles"]),
                st.integers(1, 900)), max_size=2)))
        if name == "details":
            # Mapping orders: the keys in any order, required ones or not, values of each type.
            keys = data.draw(st.lists(st.one_of(
                st.sampled_from(["what", "why", "debt_created", "count", "error_pattern",
                                 "blocker_service", "assumption", "reality", "protocol_section",
                                 "question", "zeta", "alpha"]), TEXT), max_size=5))
            vals = st.one_of(TEXT, st.integers(-(2 ** 63), 2 ** 63 - 1), st.booleans())
            return tuple((k, data.draw(vals)) for k in keys)
        if name in ("deadline",):
            return self.now()
        if name in ("goal_id", "sprint_id"):
            return data.draw(st.one_of(st.builds(lambda n: f"{name[:-3]}-{n}", st.integers(1, 5)),
                                       BAD_ID))
        if name == "priority":
            return data.draw(st.integers(0, 6))
        if name == "run_id":  # usage: mostly a well-formed AGENT.GEN.N of a known agent
            agents = self._ids("agents") or ["coder-1"]
            return data.draw(st.one_of(st.builds(lambda a, g, n: f"{a}.{g}.{n}",
                                                 st.sampled_from(agents), st.integers(0, 3),
                                                 st.integers(1, 5)), TEXT))
        if name in ("cli", "model"):
            return data.draw(st.one_of(st.sampled_from(["claude", "codex", "command"]), TEXT))
        if name == "cost_source":
            return data.draw(st.one_of(st.sampled_from(["cli", "report", "prices"]), TEXT))
        if name == "spec_ref":
            return data.draw(st.one_of(st.sampled_from(["specs/r.md", "specs/r.md#auth",
                                                        "../up.md"]), TEXT))
        return self.by_type(data, name, tp)

    def by_type(self, data: st.DataObject, name: str, tp: Any) -> Any:
        inner = [a for a in typing.get_args(tp) if a is not type(None)]
        if inner and typing.get_origin(tp) is not tuple:
            tp = inner[0]
        if tp is bool:
            return data.draw(st.booleans())
        if tp is int:
            return data.draw(st.one_of(st.integers(-2, 12), st.integers(0, 10 ** 7)))
        if tp is str:
            return data.draw(TEXT)
        if typing.get_origin(tp) is tuple:
            return tuple(data.draw(st.lists(TEXT, max_size=4)))
        raise AssertionError(f"opsmachine: no strategy for field {name}: {tp!r}")

    def draw_op(self, data: st.DataObject, cls: type[Op]) -> dict[str, Any]:
        hints = typing.get_type_hints(cls)
        args: dict[str, Any] = {}
        for f in dataclasses.fields(cls):
            if f.name in ("actor", "time", "live"):
                continue  # live: the renewals the op judged, filled by the library (Liza.do)
            has_default = f.default is not dataclasses.MISSING or \
                f.default_factory is not dataclasses.MISSING
            if has_default and data.draw(st.integers(0, 2)) == 0:
                continue  # optional fields present and absent
            args[f.name] = self.value(data, f.name, hints[f.name], args, cls.NAME)
        return args

    # -- the steps -------------------------------------------------------------------------------
    def attempt(self, actor: str, cls: type[Op], args: dict[str, Any]) -> bool:
        before = self.store.tip()
        try:
            done = self.liza(actor).do(cls, **args)
        except LizaError:
            assert self.store.tip() == before, f"refused {cls.NAME} moved the ref"
            self.refused[cls.NAME] += 1
            return False
        self.accepted[cls.NAME] += 1
        commit = self.store.commit(done.commit)
        # (1) the commit replays from its parent; (2) its trailers rebuild the op's arguments
        # (mappings compare as mappings: their order and duplicate keys are not recorded, which
        # is why an op must not depend on them; (1) is what proves it does not).
        replay(self.store, commit.id, before)
        assert record.parse(commit.message).op.args() == done.op.args(), cls.NAME
        return True

    @initialize(data=st.data())
    def start(self, data: st.DataObject) -> None:
        init = self.ops["init"]
        args = {"goal": data.draw(TEXT.filter(lambda s: bool(s.strip()) and "\x00" not in s)),
                "config": self.value(data, "config", Any, {})}
        assert self.attempt(HUMAN_ACTOR, init, args)
        for agent, role in (("planner-1", "planner"), ("coder-1", "coder"),
                            ("coder-2", "coder"), ("reviewer-1", "code_reviewer"),
                            ("reviewer-2", "code_reviewer")):
            if not self.rarely(data):  # now and then one is missing: its ops are refused
                self.attempt(HUMAN_ACTOR, self.ops["register"], {"agent": agent, "role": role})

    @rule(data=st.data(), seconds=st.integers(0, 400))
    def step(self, data: st.DataObject, seconds: int) -> None:
        self.t += seconds
        # Every op; the ones that end a goal less often, so that most runs reach deep states.
        rare = [n for n in self.ops if n in RARE]
        common = [n for n in self.ops if n not in RARE]
        ended = self.board().goal.status.value != "IN_PROGRESS"
        name = data.draw(st.sampled_from(rare) if rare and (ended or self.rarely(data)
                                                            and self.rarely(data))
                         else st.sampled_from(common))
        cls = self.ops[name]
        self.attempt(self.actor(data, name), cls, self.draw_op(data, cls))

    @rule(data=st.data())
    def lifecycle(self, data: st.DataObject) -> None:
        """A likely-legal move for some task, so that deep states (review, merge) are reached."""
        board = self.board()
        tasks = sorted(board.tasks(), key=lambda t: t.id)
        if not tasks:
            self.attempt("planner-1", self.ops["add"], {
                "task": self.fresh(), "description": "d", "spec_ref": "specs/r.md",
                "done_when": "w", "scope": "s", "ready": True})
            return
        t = data.draw(st.sampled_from(tasks))
        coder = data.draw(st.sampled_from(CODERS))
        reviewer = data.draw(st.sampled_from(REVIEWERS))
        holder = t.assigned_to or coder
        sha = data.draw(SHA)
        wt = {"task": t.id, "worktree": f".worktrees/{t.id}", "base_commit": sha}
        retire = [("planner-1", "abandon", {"task": t.id, "reason": "not needed"}),
                  ("planner-1", "rescope", {"task": t.id, "into": (self.fresh(), self.fresh()),
                                            "reason": "split"})]
        gaps = {"spec_ref": "specs/r.md#x", "done_when": "it works", "scope": "src"}
        moves: dict[str, list[tuple[str, str, dict[str, Any]]]] = {
            "DRAFT": [("planner-1", "edit", {"task": t.id, **gaps}),
                      ("planner-1", "finalize", {"task": t.id})] + retire,
            "UNCLAIMED": [(coder, "claim", wt), (coder, "claim", wt),
                          ("planner-1", "edit", {"task": t.id, "priority": 1,
                                                 "lease_duration_override": 900})] + retire,
            "REJECTED": [(coder, "claim", wt)] + retire,
            "INTEGRATION_FAILED": [(coder, "claim", wt)] + retire,
            "CLAIMED": [(holder, "submit", {"task": t.id, "commit": sha}),
                        (holder, "release", {"task": t.id}),
                        (holder, "block", {"task": t.id, "reason": "stuck",
                                           "questions": ("what now?",)}),
                        (holder, "heartbeat", {"task": t.id}),
                        (holder, "handoff", {"task": t.id, "summary": "half done",
                                             "next_action": "finish"})],
            "READY_FOR_REVIEW": [(reviewer, "claim-review", {"task": t.id})] if
            t.reviewing_by is None else [(t.reviewing_by, "verdict", {
                "task": t.id, "commit": t.review_commit or sha, "verdict": v,
                "reason": "needs work"}) for v in ("approve", "reject")],
            "APPROVED": [(reviewer, "merge", {"task": t.id, "result": "merged",
                                              "merge_commit": sha}),
                         (reviewer, "merge", {"task": t.id, "result": "failed",
                                              "reason": "tests fail"})],
            "BLOCKED": [("planner-1", "unblock", {"task": t.id})] + retire,
        }
        options = moves.get(t.status.value)
        if options:
            actor, op, args = data.draw(st.sampled_from(options))
            if op in self.ops:
                self.attempt(actor, self.ops[op], args)

    @invariant()
    def board_is_valid(self) -> None:
        board = self.board()
        if not board.initialized:
            return
        problems = [str(p) for p in check_board(board, self.now())
                    if not p.warning and LIVENESS not in p.rule]  # an expired lease only warns
        assert not problems, problems
