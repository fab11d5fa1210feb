"""One agent session: its prompt saved under `.liza/agent-prompts/`, its launch prepared (argv,
environment, and its CLI's MCP and permission files beside the prompts), its output logged under
`.liza/agent-logs/`, the process started and recorded (gitliza/team/orphans.py) and the lease
keeper beating while it runs. A session ends with the agent's exit code and why the supervisor
stopped it, if it did.
"""
from __future__ import annotations

import os
import sys
from pathlib import Path
from typing import IO, Callable

from gitliza import agentcli, atomic
from gitliza.access import mcp_config
from gitliza.core.agents import prompts
from gitliza.core.agents.faults import PROVIDER_STOP, Ending, Sign
from gitliza.core.board import Board
from gitliza.core.states import Role
from gitliza.core.terminal import safe
from gitliza.git.objects import ownstore
from gitliza.git.repository import LIZA_DIR, common_dir, ensure_excluded, liza_dir
from gitliza.services import agentlog
from gitliza.services.locations import main_root
from gitliza.services.lifecycle.review import CLI_ENV
from gitliza.services.api import AGENT_ENV, GEN_ENV, Liza
from gitliza.team import briefing, orphans, prepare, runner, usage
from gitliza.team.ending import Watch
from gitliza.team.generation import Generation
from gitliza.team import wipsnap
from gitliza.team.heartbeat import Watchdog, lease_keeper, watchdog_tick
from gitliza.team.work import Job
from gitliza.core.ops.journal import AnomalyOp
from gitliza.errors import LizaError
from gitliza.git.repository import common_dir
from gitliza.sandbox.box import OFF_WARNING, Box, Sandbox, host_ports, limits, secret_env
from gitliza.sandbox.box import Session as BoxSession
from gitliza.sandbox.policy import SandboxMode


class Sessions:
    """Runs the agent sessions of one supervisor, one at a time; `count` is how many ran."""

    def __init__(self, liza: Liza, open_liza: Callable[[], Liza], role: Role, token: Generation,
                 log: Callable[[str], None], *, profile: agentcli.Profile,
                 permissions: agentcli.Permissions, command: tuple[str, ...], interactive: bool,
                 mcp: bool, resume_task: str | None, sandbox: Sandbox | None = None,
                 watchdog: Watchdog | None = None) -> None:
        self.liza, self.open_liza, self.role, self.token = liza, open_liza, role, token
        self.log = log
        self.agent = liza.agent
        self.profile, self.permissions = profile, permissions
        self.command, self.interactive, self.mcp = command, interactive, mcp
        self.resume_task = resume_task
        self.count = 0
        self.stopping = False
        self.watchdog = watchdog if watchdog is not None else Watchdog()
        self._grace = runner.STOP_GRACE
        self._proc: runner.AgentProcess | None = None
        self._prompts: Path | None = None
        self.sandbox = sandbox if sandbox is not None else Sandbox(SandboxMode.OFF)
        self._log_file: Path | None = None
        self._job: Job | None = None
        self.ending: Ending | None = None  # why the last session ended (team/ending.py)

    def stop(self, why: str, grace: float | None = None) -> None:
        """Stop the running agent (SIGTERM, SIGKILL after `grace` seconds), and any agent a
        session starts from now on. Any thread."""
        if grace is not None:
            self._grace = grace
        self.stopping = True
        proc = self._proc
        if proc is not None:
            proc.stop(why, self._grace)

    def kill(self) -> None:
        """SIGKILL the running agent's process group now (a stop past its deadline)."""
        self.stopping = True
        proc = self._proc
        if proc is not None:
            proc.stop("supervisor stopping", 0.0)

    def run(self, job: Job) -> tuple[int, str | None]:
        """Run one agent session: its exit code, and why the supervisor stopped it (if so)."""
        self.ending = None
        if self.stopping:
            return 0, "supervisor stopping"
        gen = self.token.gen
        board = self.liza.board()
        text = briefing.prompt(self.liza, self.role, board, job,
                               self.resume_task if self.count == 0 else None)
        handed = briefing.carried_handoff(self.role, board, job)
        if handed is not None:
            self._handoff_given(gen, handed)
        path = self._save_prompt(text)
        # The sandbox (gitliza/sandbox/, docs/security.md): the box wraps the launch in bubblewrap and
        # brokers the agent's board calls; closing it brings a coder's commits in.
        run = usage.run_id(self.agent, gen, self.count + 1)
        box = self._box(job, path, run)
        # .liza/ is read-only in the sandbox: a CLI's usage export goes into the agent's private
        # home, which the supervisor reads at the run's end all the same.
        result: tuple[int, str | None] | None = None
        try:
            meter = usage.Meter.start(self.liza_dir(), run, self.profile.name, self.interactive,
                                      box.home / ".gitliza-usage" if box is not None else None)
            meter.model = self.profile.model
            result = self._run_in(job, path, text, box, gen, board, meter)
            return result
        finally:
            if box is not None:
                try:
                    box.close()
                except LizaError as e:
                    self.log(f"sandbox: {e}")
            if self.role == Role.CODER and job.task is not None:
                self._keep(job.task, result)

    def _keep(self, task: str, result: tuple[int, str | None] | None) -> None:
        """A coder's session that did not end as the agent's own choice (a crash, a stand-down,
        the supervisor's stop): the worktree's state goes to the attic, named in the log line.
        A clean worktree keeps nothing."""
        if result is None:
            why = "the session's failure"
        elif result[1] is not None:
            why = f"a stand-down ({result[1]})"
        elif self.stopping:
            why = "the supervisor's stop"
        elif result[0] != 0:
            why = f"the agent's exit {result[0]}"
        else:
            return
        import pygit2

        from gitliza.services.lifecycle.cleanup import keep_state
        try:
            for note in keep_state(self.liza, task, why):
                self.log(f"{note} (after {why})")
        except (LizaError, pygit2.GitError, OSError) as e:
            self.log(f"{task}: cannot keep its worktree's state in the attic: {e}")

    def _run_in(self, job: Job, path: Path, text: str, box: Box | None,
                gen: int, board: Board, meter: usage.Meter) -> tuple[int, str | None]:
        launch = self._launch(job, path, text, meter, box)
        if self.interactive:
            self.log(f"interactive: the prompt is saved at {path}; paste it into the session")
            sys.stdout.write(safe(text))  # board text in it: never raw on the terminal
            sys.stdout.flush()
        what = job.task or (job.trigger.value if job.trigger else "planning")
        log_file, out = self._open_log(job, launch.argv, launch.env)
        self._log_file, self._job = log_file, job
        # The task's budget stops the agent during its run, once its streamed usage passes it.
        meter.limit = usage.run_limit(self.liza, self.role, job.task)
        meter.over = self._over_budget
        known = agentcli.for_command(self.command[0]) if self.command else self.profile
        watch = meter.watch = Watch((known or self.profile).reads, self._provider_stop,
                                    (known or self.profile).exits)
        out = meter.output(out)
        argv, env = launch.argv, launch.env
        if box is not None:
            # The prompt file is the agent's own whichever way its CLI reads it (standard input,
            # a --prompt-file word, $LIZA_PROMPT_FILE): the view shows it in .liza/agent-prompts.
            argv, env = box.wrap(argv, env, [*launch.files, *filter(None, [launch.stdin]), path])
        else:
            self.log(OFF_WARNING)
        try:
            proc = self._proc = runner.AgentProcess.start(argv, env, job.worktree,
                                                          self.interactive, launch.stdin,
                                                          output=out)
        finally:
            if out is not None:
                out.close()  # the agent holds its own copy of the descriptor
        orphans.record(self.liza_dir(), self.agent, gen, proc.pid, job.task)
        if box is not None:  # its network attached, its worktree watched (gitliza/sandbox/)
            box.started(proc.pid, lambda why: proc.stop(why, self._grace))
        if self.stopping:  # a SIGINT/SIGTERM that came while the agent was being started
            proc.stop("supervisor stopping", self._grace)
        self.log(f"started agent (pid {proc.pid}) on {what}; prompt {path}")
        if log_file is not None:
            self.log(f"agent log: {log_file}")
        self.watchdog.feed()
        hb = lease_keeper(self.liza, self.open_liza, self.token, self.role, job.task,
                          lambda why: proc.stop(why), self.log, watchdog=self.watchdog).start()
        snaps = wipsnap.start(self.liza, self.open_liza, self.agent, self.role, job.task,
                              box.coder if box is not None else None, self.log)
        tick = watchdog_tick(board.config)
        try:
            code = proc.wait(self.watchdog.feed, tick)
        finally:
            hb.stop()
            if snaps is not None:
                snaps.stop()
            self._proc = None
            orphans.forget(self.liza_dir(), self.agent, gen)
        def ended() -> str:  # once the output is all read (usage.record joins its reader)
            if meter.stream is None:  # nobody read along: its last words from the log's tail
                watch.feed_tail(log_file)
            self.ending = watch.ending(code, proc.stopped_by)
            return self.ending.end.value
        usage.record(self.liza, gen, meter, job.task, self.log, ended)
        self.count += 1
        self.token.check(self.liza.board())
        return code, proc.stopped_by

    def _provider_stop(self, sign: Sign) -> None:
        """The CLI says the provider refuses it (a login, a spent quota, a third rate limit):
        stop it rather than let it retry on its own for minutes; the supervisor waits."""
        proc = self._proc
        if proc is not None:
            proc.stop(f"{PROVIDER_STOP}{sign.line}", self._grace)

    def _over_budget(self, tokens: int) -> None:
        proc = self._proc
        why = f"task budget spent during the run ({tokens:,} tokens streamed)"
        self.log(f"{why}: stopping the agent")
        if proc is not None:
            proc.stop(why, self._grace)

    def _open_log(self, job: Job, argv: list[str],
                  env: dict[str, str]) -> tuple[Path | None, IO[bytes] | None]:
        """The file for this run's stdout and stderr (not in an interactive session, which keeps
        the terminal), its header naming the CLI's own transcript where there is one."""
        if self.interactive:
            return None, None
        d = liza_dir(self.liza.repo, agentlog.LOGS_DIR, private=True)
        agentlog.rotate(d, self.agent, ".log", agentlog.KEEP - 1)
        now = self.liza.now()
        path = agentlog.log_path(d, self.agent, job.task, now)
        where = agentlog.transcript(argv, env, job.worktree)
        header = (f"# {now} {self.agent} ({self.role.value}, generation {self.token.gen}) on "
                  f"{job.task or 'planning'} in {job.worktree}: {argv[0]}"
                  + (f"; transcript: {where}" if where else ""))
        return path, agentlog.open_log(path, header)

    def prompts_dir(self) -> Path:
        """`.liza/agent-prompts/` of the main worktree: prompts and MCP configs, never in the
        task's worktree, where they would be committed. Checked at each run (0700, no link on
        the way, `.liza/` not tracked: git/repository.py `liza_dir`), since what is in the
        repository can change between runs."""
        self._prompts = liza_dir(self.liza.repo, agentlog.PROMPTS_DIR, private=True)
        # gitliza's own files stay out of `git status` (as .worktrees/ and the view do)
        ensure_excluded(common_dir(self.liza.repo), LIZA_DIR)
        return self._prompts

    def check_dirs(self) -> None:
        """Make and check where every run writes (prompts, logs) before the board changes."""
        self.prompts_dir()
        liza_dir(self.liza.repo, agentlog.LOGS_DIR, private=True)

    def liza_dir(self) -> Path:
        return self.prompts_dir().parent

    def _handoff_given(self, gen: int, task: str) -> None:
        """The prompt carries the task's pending handoff: a heartbeat that clears the flag (the
        lease keeper's heartbeats keep it, so it outlives the agent that wrote it)."""
        from gitliza.core.ops.work import Heartbeat
        try:
            self.liza.do(Heartbeat, task=task, gen=gen)
        except LizaError as e:
            self.log(f"handoff of {task} stays pending: {e}")

    def _save_prompt(self, text: str) -> Path:
        d = self.prompts_dir()
        agentlog.rotate(d, self.agent, ".txt", agentlog.KEEP - 1)
        path = agentlog.prompt_path(d, self.agent, self.liza.now())
        with atomic.open_file(path, append=False) as f:  # 0600, never through a link
            f.write(text.encode())
        return path

    def _mcp_entry(self) -> dict[str, object] | None:
        """The MCP server as this agent, role and supervisor generation (so its ops stand
        down with this supervisor)."""
        if not self.mcp:
            return None
        return mcp_config.server(main_root(self.liza.repo), self.agent,
                                 prompts.ROLE_WORDS[self.role], gen=self.token.gen)

    def _box(self, job: Job, prompt_file: Path, run: str) -> Box | None:
        """This session's sandbox (None: --sandbox off)."""
        if not self.sandbox.on:
            return None
        known = agentcli.for_command(self.command[0]) if self.command else self.profile
        return self.sandbox.open(BoxSession(
            agent=self.agent, role=self.role, worktree=job.worktree, task=job.task,
            main=main_root(self.liza.repo), repo=self.liza.repo,
            common=common_dir(self.liza.repo), cli=known.name if known else None,
            env={**self._env(job, prompt_file), usage.RUN_ENV: run},
            gitliza=prepare.gitliza_command(),
            mcp=self._mcp_entry(), refused=self._refused, limits=limits(self.liza.board()),
            host_ports=host_ports(self.liza.board())))

    def _refused(self, line: str, anomaly: bool) -> None:
        """A refused call of the sandboxed agent: the supervisor's log, the agent's log and
        (the first few per session) an anomaly on the board, where the human sees it."""
        self.log(line)
        if self._log_file is not None:
            with open(self._log_file, "a") as f:
                f.write(line + "\n")
        if anomaly:
            job = self._job
            self.open_liza().do(AnomalyOp, type="system_ambiguity",
                                task=job.task if job is not None else None,
                                details=(("protocol_section", "sandbox: refused call"),
                                         ("question", line)))

    def _launch(self, job: Job, prompt_file: Path, text: str,
                meter: usage.Meter, box: Box | None = None) -> agentcli.Launch:
        """The agent's argv, environment, standard input and per-run files (its CLI's MCP and
        permission configuration), written beside the prompts: never into the task's
        worktree, where they would be committed. In a sandbox, `git liza` and the MCP server
        are the broker's client (gitliza/sandbox/broker.py)."""
        main = main_root(self.liza.repo)
        mcp = self._mcp_entry() if box is None else box.mcp_inside
        launch = prepare.launch(self.profile, self.permissions, cwd=job.worktree, main=main,
                                run_dir=self.prompts_dir(), agent=self.agent,
                                prompt_file=prompt_file, prompt=text,
                                env={**self._env(job, prompt_file), usage.RUN_ENV: meter.run},
                                mcp=mcp, role=self.role,
                                command=self.command, interactive=self.interactive,
                                gitliza=box.gitliza_inside if box is not None else None,
                                contained=box is not None)
        launch.argv[:] = meter.argv(launch.argv, self.profile.executable, self.profile.headless)
        if launch.mcp_config is not None:
            launch.env["LIZA_MCP_CONFIG"] = str(launch.mcp_config)
        return launch

    def _env(self, job: Job, prompt_file: Path) -> dict[str, str]:
        env = dict(os.environ)
        env.update({AGENT_ENV: self.agent, "LIZA_ROLE": prompts.ROLE_WORDS[self.role],
                    "LIZA_PROMPT_FILE": str(prompt_file), GEN_ENV: str(self.token.gen)})
        for k in ("LIZA_TASK_ID", "LIZA_WORKTREE", "LIZA_REVIEW_COMMIT", "LIZA_WAKE_TRIGGER"):
            env.pop(k, None)
        # The agent's CLI, recorded on its verdicts (review_diversity, core/quorum.py): the broker
        # runs the agent's commands in this environment, which the agent cannot change. The
        # model is the supervisor's own LIZA_AGENT_MODEL, passed on as it is (unset: unknown).
        known = agentcli.for_command(self.command[0]) if self.command else self.profile
        env[CLI_ENV] = known.name if known else Path(self.command[0]).name
        if job.task is not None:
            env["LIZA_TASK_ID"] = job.task
            env["LIZA_WORKTREE"] = str(job.worktree)
        if job.review_commit is not None:
            env["LIZA_REVIEW_COMMIT"] = job.review_commit
        if job.trigger is not None:
            env["LIZA_WAKE_TRIGGER"] = job.trigger.value
        # The agent's git writes its objects where git's maintenance cannot prune them before
        # its branch names them (gitliza/git/objects/ownstore.py).
        env.update(ownstore.agent_env(self.liza.repo))
        # gitliza's secrets and the human's named ones: in every mode, `off` included.
        for k in secret_env(self.liza.board().config.sandbox_secret_env):
            env.pop(k, None)
        return env
