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

from gitliza.access import mcp_config
from gitliza.core import prompts
from gitliza.core.states import Role
from gitliza.git.repository import LIZA_DIR
from gitliza.services import agentlog
from gitliza.services.lifecycle.locations import main_root
from gitliza.services.api import AGENT_ENV, GEN_ENV, Liza
from gitliza.team import briefing, orphans, prepare, profiles, runner, usage
from gitliza.team.generation import Generation
from gitliza.team.heartbeat import lease_keeper
from gitliza.team.work import Job


class Sessions:
    """Runs the agent sessions of one supervisor, one at a time; `count` is how many ran."""

    def __init__(self, liza: Liza, open_liza: Callable[[], Liza], role: Role, token: Generation,
                 log: Callable[[str], None], *, profile: profiles.Profile,
                 permissions: profiles.Permissions, command: tuple[str, ...], interactive: bool,
                 mcp: bool, resume_task: str | None) -> None:
        self.liza, self.open_liza, self.role, self.token = liza, open_liza, role, token
        self.log = log
        self.agent = liza.agent
        self.profile, self.permissions = profile, permissions
        self.command, self.interactive, self.mcp = command, interactive, mcp
        self.resume_task = resume_task
        self.count = 0
        self.stopping = False
        self._proc: runner.AgentProcess | None = None
        self._prompts: Path | None = None

    def stop(self, why: str) -> None:
        """Stop the running agent, and any agent a session starts from now on."""
        self.stopping = True
        proc = self._proc
        if proc is not None:
            proc.stop(why)

    def run(self, job: Job) -> tuple[int, str | None]:
        """Run one agent session: its exit code, and why the supervisor stopped it (if so)."""
        gen = self.token.gen
        board = self.liza.board()
        text = briefing.prompt(self.liza, self.role, gen, board, job,
                               self.resume_task if self.count == 0 else None, self.log)
        path = self._save_prompt(text)
        meter = usage.Meter.start(self.liza_dir(), usage.run_id(self.agent, gen, self.count + 1),
                                  self.profile.name, self.interactive)
        launch = self._launch(job, path, text, meter)
        if self.interactive:
            self.log(f"interactive: the prompt is saved at {path}; paste it into the session")
            sys.stdout.write(text)
            sys.stdout.flush()
        what = job.task or (job.trigger.value if job.trigger else "planning")
        log_file, out = self._open_log(job, launch.argv, launch.env)
        out = meter.output(out)
        try:
            proc = self._proc = runner.AgentProcess.start(launch.argv, launch.env, job.worktree,
                                                          self.interactive, launch.stdin,
                                                          output=out)
        finally:
            if out is not None:
                out.close()  # the agent holds its own copy of the descriptor
        orphans.record(self.liza_dir(), self.agent, gen, proc.pid, job.task)
        if self.stopping:  # a SIGINT/SIGTERM that came while the work was being claimed
            proc.stop("supervisor stopping")
        self.log(f"started agent (pid {proc.pid}) on {what}; prompt {path}")
        if log_file is not None:
            self.log(f"agent log: {log_file}")
        hb = lease_keeper(self.liza, self.open_liza, self.token, self.role, job.task,
                          lambda why: proc.stop(why), self.log).start()
        try:
            code = proc.wait()
        finally:
            hb.stop()
            self._proc = None
            orphans.forget(self.liza_dir(), self.agent, gen)
        usage.record(self.liza, gen, meter, job.task, self.log)
        self.count += 1
        self.token.check(self.liza.board())
        return code, proc.stopped_by

    def _open_log(self, job: Job, argv: list[str],
                  env: dict[str, str]) -> tuple[Path | None, IO[bytes] | None]:
        """The file for this run's stdout and stderr (not in an interactive session, which keeps
        the terminal), its header naming the CLI's own transcript where there is one."""
        if self.interactive:
            return None, None
        d = self.liza_dir() / agentlog.LOGS_DIR
        d.mkdir(parents=True, exist_ok=True)
        agentlog.rotate(d, self.agent, ".log", agentlog.KEEP - 1)
        now = self.liza.now()
        path = agentlog.log_path(d, self.agent, job.task, now)
        where = agentlog.transcript(argv, env, job.worktree)
        header = (f"# {now} {self.agent} ({self.role.value}, generation {self.token.gen}) on "
                  f"{job.task or 'planning'} in {job.worktree}: {argv[0]}"
                  + (f"; transcript: {where}" if where else ""))
        return path, agentlog.open_log(path, header)

    def prompts_dir(self) -> Path:
        """`.liza/agent-prompts/` of the main worktree (made once): prompts and MCP configs,
        never in the task's worktree, where they would be committed."""
        if self._prompts is None:
            self._prompts = main_root(self.liza.repo) / LIZA_DIR / agentlog.PROMPTS_DIR
            self._prompts.mkdir(parents=True, exist_ok=True)
        return self._prompts

    def liza_dir(self) -> Path:
        return self.prompts_dir().parent

    def _save_prompt(self, text: str) -> Path:
        d = self.prompts_dir()
        agentlog.rotate(d, self.agent, ".txt", agentlog.KEEP - 1)
        path = agentlog.prompt_path(d, self.agent, self.liza.now())
        path.write_text(text)
        return path

    def _launch(self, job: Job, prompt_file: Path, text: str,
                meter: usage.Meter) -> profiles.Launch:
        """The agent's argv, environment, standard input and per-run files (its CLI's MCP and
        permission configuration), written beside the prompts: never into the task's
        worktree, where they would be committed. The MCP server runs as this agent, role and
        supervisor generation (so its ops stand down with this supervisor)."""
        main = main_root(self.liza.repo)
        mcp = None
        if self.mcp:
            mcp = mcp_config.server(main, self.agent, prompts.ROLE_WORDS[self.role],
                                    gen=self.token.gen)
        launch = prepare.launch(self.profile, self.permissions, cwd=job.worktree, main=main,
                                run_dir=self.prompts_dir(), agent=self.agent,
                                prompt_file=prompt_file, prompt=text,
                                env={**self._env(job, prompt_file), usage.RUN_ENV: meter.run},
                                mcp=mcp, role=self.role, command=self.command,
                                interactive=self.interactive)
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
        if job.task is not None:
            env["LIZA_TASK_ID"] = job.task
            env["LIZA_WORKTREE"] = str(job.worktree)
        if job.review_commit is not None:
            env["LIZA_REVIEW_COMMIT"] = job.review_commit
        if job.trigger is not None:
            env["LIZA_WAKE_TRIGGER"] = job.trigger.value
        return env
