"""What an agent run consumed, as its supervisor sees it: the run's id in the agent's environment
($LIZA_RUN_ID), the CLI's machine-readable output read while the agent runs (the log stays for
people: each event is rendered as a readable line), the agent's own reports
(`git liza usage report`, appended to `.liza/agent-usage/<run>.jsonl` while the run is on), one
`usage` transition when the run ends, and the budget check before a launch.

What each CLI gives is read by its module in gitliza/agentcli/ (its `stream`, or its usage
`export`; docs/agents.md says per CLI what is counted); any other program (`-- COMMAND`) gives
what it reports. Input counts cached input.
"""
from __future__ import annotations

import json
import os
import shutil
import threading
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import IO, Any, Callable, Mapping

from gitliza import agentcli
from gitliza.agentcli.base import Counted, Export, Stream
from gitliza.core.agents import costs as core_usage
from gitliza.core.ops.journal import AnomalyOp
from gitliza.core.ops.usage import RecordUsage, check_tokens, check_word, plain_word
from gitliza.core.ops.work import Block
from gitliza.core.states import Role
from gitliza.errors import LeaseLost, LizaError, ValidationError
from gitliza.services.api import Liza

RUN_ENV = "LIZA_RUN_ID"
REPORTS_DIR = "agent-usage"
JOIN_GRACE = 5.0  # seconds to wait for the output reader after the agent's group is gone
# The agents this process already told that a `-- COMMAND` agent reports its own usage: once per
# agent, not once per run (every scripted run printed it).
_TOLD_NONE: set[str] = set()
# What an agent's own reports (`git liza usage report`) may add to a run, together: a report past
# it is one no run could make (no model reads 100,000 tokens a second for a whole run, nor costs
# ten cents a second), refused and raised as an anomaly; the run is recorded without it, rather
# than voided or charged to the goal.
REPORT_TOKENS_BASE, REPORT_TOKENS_PER_SECOND = 1_000_000, 100_000
REPORT_MICROS_BASE, REPORT_MICROS_PER_SECOND = 1_000_000, 100_000


def run_id(agent: str, gen: int, n: int) -> str:
    return f"{agent}.{gen}.{n}"


def reports_path(liza_dir: Path, run: str) -> Path:
    return liza_dir / REPORTS_DIR / f"{run}.jsonl"


# -- one run ------------------------------------------------------------------------------------
@dataclass
class Meter:
    """The usage of one run: started before the agent, finished after it."""

    liza_dir: Path
    run: str
    cli: str  # the profile's name, or "command"
    stream: Stream | None = None
    model: str | None = None  # the model the launch named (the board's `models`): the fallback
    stream_flags: tuple[str, ...] = ()
    export: Export | None = None  # a CLI that writes its usage to files (Vibe) ...
    export_to: Path | None = None  # ... in this directory
    started: float = field(default_factory=time.monotonic)
    _thread: threading.Thread | None = None
    # The budget stop during the run: `over` is called once when the streamed tokens reach
    # `limit` (what is left of the task's budget when the run started).
    limit: int | None = None
    over: Callable[[int], None] | None = None
    _fired: bool = False
    # Why the run ended (team/ending.py): every line of the stream is read for it too.
    watch: Any = None

    @classmethod
    def start(cls, liza_dir: Path, run: str, cli: str, interactive: bool,
              export_dir: Path | None = None) -> Meter:
        """`export_dir`: where a CLI that exports its usage to files writes them (Vibe), when it
        cannot write under `.liza/` (a sandboxed agent: its private home)."""
        m = cls(liza_dir, run, cli)
        p = agentcli.find(cli)
        if not interactive and p is not None:
            m.stream = p.stream() if p.stream is not None else None
            m.stream_flags = p.stream_flags
            if p.export is not None:
                where = export_dir if export_dir is not None else liza_dir / REPORTS_DIR
                where.mkdir(mode=0o700, parents=True, exist_ok=True)
                m.export, m.export_to = p.export, where / f"{run}.{p.executable}"
        path = reports_path(liza_dir, run)
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_bytes(b"")  # the run is on: reports are taken from now
        return m

    def argv(self, argv: list[str], executable: str, headless: tuple[str, ...]) -> list[str]:
        """The CLI's words plus the flags that make it write what we count (after its
        headless words, wherever the launch put the executable)."""
        flags = self.stream_flags if self.stream is not None else ()
        if self.export is not None and self.export_to is not None:
            flags = (*self.export.words, str(self.export_to))
        if not flags:
            return argv
        at = next((i for i, a in enumerate(argv) if os.path.basename(a) == executable), None)
        if at is None:
            return argv
        at += 1 + len(headless)
        return [*argv[:at], *flags, *argv[at:]]

    def output(self, log: IO[bytes] | None) -> IO[bytes] | None:
        """What the agent writes to: the log itself, or a pipe whose reader renders the CLI's
        JSON events into the log (and counts them)."""
        if log is None or self.stream is None:
            return log
        r, w = os.pipe()
        self._thread = threading.Thread(target=self._read, args=(os.fdopen(r, "rb"), log),
                                        daemon=True, name=f"usage-{self.run}")
        self._thread.start()
        return os.fdopen(w, "wb")

    def _read(self, pipe: IO[bytes], log: IO[bytes]) -> None:
        stream = self.stream
        assert stream is not None
        with pipe, log:
            for raw in pipe:
                text: str | None
                try:
                    e = json.loads(raw)
                except ValueError:
                    e = None
                if self.watch is not None:
                    self.watch.feed(raw, e)
                if isinstance(e, dict):
                    try:
                        text = stream.line(e)
                    except (TypeError, ValueError, AttributeError):
                        text = None
                    if text is None:
                        continue
                    out = text[1:].encode() if text.startswith("\x00") else (text + "\n").encode()
                else:
                    out = raw  # not an event (a warning on stderr): as it is
                log.write(out)
                log.flush()
                self._check_limit(stream.counted)

    def _check_limit(self, got: Counted) -> None:
        if self.limit is None or self._fired or got.input + got.output < self.limit:
            return
        self._fired = True
        if self.over is not None:
            self.over(got.input + got.output)

    def finish(self) -> tuple[Counted, list[Counted], int]:
        """After the agent's process group is gone: what the CLI's output counted, the agent's
        reports, and the reports that were malformed (skipped)."""
        if self._thread is not None:
            self._thread.join(JOIN_GRACE)
        got = Counted()
        if self.stream is not None:
            self.stream.finish()
            got.add(self.stream.counted)
        if self.export is not None and self.export_to is not None:
            try:
                got.add(self.export.parse((self.export_to / self.export.file).read_text()))
            except (OSError, ValueError):  # none written (the run died), or not text
                pass
            # What else the CLI writes there (Vibe copies its session journal) does not pile
            # up; its own transcript stays where it keeps it.
            shutil.rmtree(self.export_to, ignore_errors=True)
        bad = 0
        path = reports_path(self.liza_dir, self.run)
        try:
            lines = path.read_bytes().splitlines()
            path.unlink()
        except OSError:
            lines = []
        reports = []
        for raw in lines:
            try:
                reports.append(_report_from(json.loads(raw)))
            except (ValueError, TypeError, LizaError, RecursionError):
                bad += 1
        return got, reports, bad

    def duration(self) -> int:
        return int(round(time.monotonic() - self.started))


def _report_from(d: Any) -> Counted:
    if not isinstance(d, dict):
        raise ValueError("not an object")
    cost = d.get("cost")
    if cost is not None and (not isinstance(cost, int) or isinstance(cost, bool) or
                             not 0 <= cost <= core_usage.micros(core_usage.MAX_USD_PER_RUN)):
        raise ValueError("bad cost")
    return Counted(check_tokens(d.get("input", 0), "input"),
                   check_tokens(d.get("output", 0), "output"),
                   check_tokens(d.get("cached", 0), "cached"), cost,
                   d.get("model") if isinstance(d.get("model"), str) else None)


def record(liza: Liza, gen: int, meter: Meter, task: str | None,
           log: Callable[[str], None], end: Callable[[], str | None] | None = None) -> None:
    """The run's one `usage` transition (a failure is logged: the run is over either way);
    `end`: why the run ended, asked once its output is all read."""
    got, reports, bad = meter.finish()
    ended = end() if end is not None else None
    if bad:
        log(f"usage: {bad} malformed report(s) of run {meter.run} skipped")
    refused = plausible(got, reports, meter.duration())
    if refused:
        _implausible(liza, gen, meter.run, task, refused, log)
    source = None
    if got.cost is not None:
        source = "cli" if meter.cli != "command" else "report"
    try:
        liza.do(RecordUsage, gen=gen, run_id=meter.run, cli=meter.cli,
                duration=meter.duration(), task=task,
                # a CLI's odd name: none; no name from the CLI: the model its launch named
                model=got.model if got.model and plain_word(got.model) else meter.model,
                input_tokens=got.input, output_tokens=got.output,
                cached_tokens=min(got.cached, got.input), cost_micro_usd=got.cost,
                cost_source=source, end=ended)
    except LizaError as e:
        log(f"usage of run {meter.run} not recorded: {e}")
        return
    if meter.cli == "command" and got.cost is None and not (got.input or got.output):
        # A `-- COMMAND` agent (a script) that reported nothing: say how it would, rather than
        # print a run of zeros a newcomer takes for a failure to count; once per agent.
        if liza.agent not in _TOLD_NONE:
            _TOLD_NONE.add(str(liza.agent))
            log(f"usage of run {meter.run}: none reported (a -- COMMAND agent reports its own "
                "with `git liza usage report`; docs/usage.md)")
        return
    cost = f", {core_usage.usd_text(got.cost)}" if got.cost is not None else ""
    log(f"usage of run {meter.run}: {got.input:,} in, {got.output:,} out, "
        f"{got.cached:,} cached{cost}")


def plausible(got: Counted, reports: list[Counted], seconds: int) -> list[str]:
    """Add to `got` the reports a run of `seconds` could have made, in their order; clamp what
    the CLI's output said to the per-run caps (a forged event past them must not void the run).
    Returns what was refused or clamped, one line each."""
    out: list[str] = []
    tokens = REPORT_TOKENS_BASE + REPORT_TOKENS_PER_SECOND * max(seconds, 1)
    micros = REPORT_MICROS_BASE + REPORT_MICROS_PER_SECOND * max(seconds, 1)
    taken = Counted()
    for r in reports:
        if (taken.input + taken.output + r.input + r.output > tokens
                or (taken.cost or 0) + (r.cost or 0) > micros):
            out.append(f"a report of {r.input + r.output:,} tokens"
                       + (f" and {core_usage.usd_text(r.cost)}" if r.cost else "")
                       + f" in a run of {seconds} s (more than {tokens:,} tokens or "
                       f"{core_usage.usd_text(micros)} reported)")
            continue
        taken.add(r)
    got.add(taken)
    cap, cost_cap = core_usage.MAX_TOKENS_PER_RUN, core_usage.micros(core_usage.MAX_USD_PER_RUN)
    if max(got.input, got.output, got.cached) > cap or (got.cost or 0) > cost_cap:
        out.append(f"the CLI's output said {got.input + got.output:,} tokens, past the per-run "
                   f"cap: counted as {cap:,}")
        got.input, got.output, got.cached = (min(v, cap) for v in (got.input, got.output,
                                                                   got.cached))
        got.cost = None if got.cost is None else min(got.cost, cost_cap)
    return out


def _implausible(liza: Liza, gen: int, run: str, task: str | None, refused: list[str],
                 log: Callable[[str], None]) -> None:
    """The supervisor's log and an anomaly on the board: someone is bending the usage."""
    for line in refused:
        log(f"usage of run {run}: refused {line}")
    try:
        liza.do(AnomalyOp, gen=gen, type="system_ambiguity", task=task, ordered=True,
                details=(("protocol_section", "usage: implausible report"),
                         ("question", f"run {run}: {refused[0]}"[:500])))
    except LeaseLost:
        raise
    except LizaError as e:
        log(f"usage of run {run}: cannot record the anomaly: {e}")


def run_limit(liza: Liza, role: Role, task: str | None) -> int | None:
    """What is left of a coder's task's token budget: the budget stop during its run."""
    if task is None or role != Role.CODER:
        return None
    board = liza.board()
    t = board.task(task)
    budget = core_usage.task_budget(board, t) if t is not None else None
    if budget is None:
        return None
    return max(budget - core_usage.task_tokens(board, task), 1)


# -- the agent's own report ---------------------------------------------------------------------
def report(liza_dir: Path, env: Mapping[str, str], *, input_tokens: int, output_tokens: int,
           cached_tokens: int = 0, cost: str | None = None, model: str | None = None) -> str:
    """`git liza usage report`: one line appended to the run's report file; its supervisor adds
    them up when the run ends. Refused (nothing written) outside a run its supervisor started."""
    run = env.get(RUN_ENV)
    if not run:
        raise ValidationError(f"not inside an agent run (no ${RUN_ENV}): usage is reported by an "
                              "agent its supervisor (`git liza agent`) started")
    for name, v in (("--input", input_tokens), ("--output", output_tokens),
                    ("--cached", cached_tokens)):
        check_tokens(v, name)
    if cached_tokens > input_tokens:
        raise ValidationError(f"--cached ({cached_tokens}) cannot exceed --input "
                              f"({input_tokens}): cached input is input")
    check_word(model, "--model")
    line: dict[str, object] = {"input": input_tokens, "output": output_tokens,
                               "cached": cached_tokens}
    if cost is not None:
        line["cost"] = core_usage.micros(core_usage.parse_usd(cost, "--cost",
                                                              core_usage.MAX_USD_PER_RUN,
                                                              zero=True))
    if model is not None:
        line["model"] = model
    path = reports_path(liza_dir, run)
    if "/" in run or not path.is_file():
        raise ValidationError(f"run {run} is not running here (its supervisor has recorded its "
                              "usage, or it never started)")
    # One write with O_APPEND: concurrent reports of one run never interleave.
    fd = os.open(path, os.O_WRONLY | os.O_APPEND)
    try:
        os.write(fd, (json.dumps(line) + "\n").encode())
    finally:
        os.close(fd)
    return run


# -- budgets before a launch ----------------------------------------------------------------------
def stop_for_budget(liza: Liza, gen: int, role: Role, task: str | None,
                    log: Callable[[str], None]) -> str | None:
    """Why the run must not start, or None: "goal" when the goal's budget is spent (the
    supervisor then waits: wake.Hold.BUDGET), "task" when a coder's task's is (it blocks the
    task and logs a budget_exceeded anomaly). A review is not stopped by its task's budget: the
    work it reviews is done, and only a coder can block the task; the goal's budget stops it."""
    board = liza.board()
    why = core_usage.goal_over_budget(board)
    if why is not None:
        log(f"{why}: not starting the agent")
        return "goal"
    if task is None or role != Role.CODER:
        return None
    over = core_usage.task_over_budget(board, task)
    if over is None:
        return None
    budget, spent = over
    reason = core_usage.task_budget_reason(budget, spent).replace("TASK", task)
    log(f"{task}: {reason}; not starting the agent")
    try:
        liza.do(Block, gen=gen, task=task, reason=reason,
                questions=(f"Is {task} worth more than {budget:,} tokens (raise its budget), "
                           "or should it be rescoped?",))
        liza.do(AnomalyOp, gen=gen, type="budget_exceeded", task=task, ordered=True,
                details=(("budget", budget), ("spent", spent)))
    except LeaseLost:
        raise
    except LizaError as e:
        log(f"budget stop of {task}: {e}")
    return "task"
