"""The supervisor's end of an agent's channel to the board.

Inside the sandbox an agent's `git liza` (the alias) and its MCP server are a small client
(client.py) that talks to one unix socket: a socket of this agent alone, in a directory no other
agent can see (mounted into its sandbox at BROKER_INSIDE). Whoever speaks on it is that agent,
so its identity never comes from an environment variable or a flag: the supervisor runs the
command as its agent (LIZA_AGENT_ID and the generation set here, `--agent` naming anyone else
refused), in its role (rules.py), and records a refusal (the agent log, the supervisor's log,
and an anomaly on the board, a few per session at most).

Requests are one JSON line: {"argv": [...]} runs `git liza ARGV` and answers one JSON line
{"out", "err", "exit"} ({"stdin": TEXT} beside it is the command's standard input: the content
of `add --from FILE`, read by the client inside the sandbox, so no path of the agent's is ever
opened here); {"mcp": true} starts the agent's MCP server (`git liza mcp` as this agent
and role) and relays its newline-delimited JSON-RPC both ways, answering a `tools/call` of a tool
no agent may call with an error instead of passing it on.

Every failure the agent is answered with (a malformed request, a refusal, the coder's commits
that could not be brought in, a command that could not start) is rendered by `failed` through
errors.classify, as the CLI renders its own: one line and its exit code.
"""
from __future__ import annotations

import json
import os
import subprocess
import sys
import tempfile
import threading
from contextlib import contextmanager
from pathlib import Path
from typing import Any, Callable, Iterator, Mapping, Sequence

from gitliza.core.states import Role
from gitliza.core.terminal import safe_line
from gitliza.errors import PermissionDenied, ValidationError, classify
from gitliza.sandbox import rules
from gitliza.services import procinfo
from gitliza.sandbox.policy import BROKER_INSIDE
from gitliza.sandbox.fifos import Duplex, FifoServer

MAX_REQUEST = 1 << 20  # bytes of one request line
MAX_ANOMALIES = 3  # refusals recorded on the board per session (all go to the logs)


def client_command(python: str) -> tuple[str, ...]:
    """The command an agent's `git liza` runs inside the sandbox (-I: nothing of the
    environment or the working directory decides which code runs)."""
    return (python, "-I", "-m", "gitliza.sandbox.client", BROKER_INSIDE)


class Broker:
    """Serves one agent session's socket; `before_write` runs before a command that changes the
    board (the coder's commits brought in first), `refused` records a refusal."""

    def __init__(self, agent: str, role: Role, env: Mapping[str, str], cwd: Path,
                 gitliza: Sequence[str], mcp: Mapping[str, Any] | None,
                 before_write: Callable[[], None], refused: Callable[[str, bool], None]) -> None:
        self.agent, self.role, self.env, self.cwd = agent, role, dict(env), cwd
        self.gitliza, self.mcp = tuple(gitliza), mcp
        self.before_write, self.refused = before_write, refused
        self.refusals = 0
        # A short path (sun_path holds 108 bytes) in /tmp, which every sandbox hides: only this
        # agent's sandbox mounts it.
        self.dir = Path(tempfile.mkdtemp(prefix="gitliza-broker-", dir="/tmp"))
        self.path = self.dir  # what the client is given (fifos.py: the door and the FIFOs)
        self._lock = threading.Lock()  # serializes brokered writes of this agent
        self._children: set[subprocess.Popen[bytes]] = set()
        self._closed = False  # set by close(): a child started after it is killed at once
        self._server = FifoServer(self.dir, self._serve, f"broker-{agent}")

    def close(self) -> None:
        self._closed = True
        self._server.close()
        for p in list(self._children):
            p.kill()
        try:
            self.dir.rmdir()
        except OSError:
            pass

    def _serve(self, f: Duplex) -> None:
        line = f.readline(MAX_REQUEST + 1)
        try:
            req = json.loads(line) if len(line) <= MAX_REQUEST else None
        except (ValueError, RecursionError):  # nested past the parser's depth: malformed
            req = None
        if isinstance(req, dict) and req.get("mcp") is True and self.mcp is not None:
            self._relay_mcp(f)
            return
        argv = req.get("argv") if isinstance(req, dict) else None
        stdin = req.get("stdin") if isinstance(req, dict) else None
        if not isinstance(argv, list) or not all(isinstance(a, str) for a in argv) \
                or not isinstance(stdin, (str, type(None))):
            answer = failed(ValidationError("a malformed request to the sandbox broker"))
        else:
            answer = self.run(argv, stdin)
        try:
            f.write(json.dumps(answer).encode() + b"\n")
            f.flush()
        except OSError:
            pass

    def run(self, argv: list[str], stdin: str | None = None) -> dict[str, Any]:
        """`git liza ARGV` as this agent (`stdin` its standard input), or its refusal."""
        v = rules.check_command(self.role, self.agent, argv)
        if not v.ok:
            return failed(self._refuse(f"`git liza {' '.join(argv)[:200]}`", v.rule))
        argv = _without_agent(argv)
        env = {**self.env, "LIZA_AGENT_ID": self.agent}
        with self._write_lock(argv[0] in rules.writes(self.role)) as error:
            if error is not None:
                return failed(error)
            try:
                out, err, code = self._child([*self.gitliza, *argv], env,
                                             None if stdin is None else stdin.encode())
            except Exception as e:  # could not start it (out of memory, processes): one line
                self._said(e)
                return failed(e)
        return {"out": out.decode("utf-8", "replace"), "err": err.decode("utf-8", "replace"),
                "exit": code}

    def _child(self, argv: list[str], env: Mapping[str, str],
               stdin: bytes | None = None) -> tuple[bytes, bytes, int]:
        """Run a brokered command outside the sandbox. It ends with the session: `close` kills
        it (a `git liza wait` would otherwise run on, orphaned, until its timeout, after a stop),
        and the parent-death signal kills it when the supervisor dies without closing (SIGKILL,
        the stop deadline's exit)."""
        run, preexec = procinfo.with_parent_death(argv)
        proc = subprocess.Popen(run, env=dict(env), cwd=self.cwd,
                                stdin=subprocess.DEVNULL if stdin is None else subprocess.PIPE,
                                stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                                preexec_fn=preexec)
        self._children.add(proc)
        try:
            if self._closed:  # closed while it started: the loop in close() missed it
                proc.kill()
            out, err = proc.communicate(stdin)
        finally:
            self._children.discard(proc)
        return out, err, proc.returncode

    @contextmanager
    def _write_lock(self, write: bool) -> Iterator[Exception | None]:
        """Around a call that changes the board: one at a time, the coder's commits brought in
        first (so that `submit` sees them); yields the error that prevented that, if any: any
        exception, not only a LizaError, so that the agent is answered and the channel lives."""
        if not write:
            yield None
            return
        with self._lock:
            try:
                self.before_write()
            except Exception as e:
                self._said(e)
                yield e
                return
            yield None

    def _said(self, e: Exception) -> None:
        """A bug (not a refusal, not the environment) goes to the supervisor's log as well."""
        failure = classify(e)
        if failure.bug:
            sys.stderr.write(f"[{self.agent}] {safe_line(failure.line)}\n")

    def _refuse(self, what: str, rule: str) -> PermissionDenied:
        """The refusal (recorded here) the agent is answered with."""
        self.refusals += 1
        refusal = PermissionDenied(f"sandbox: refused {what} for {self.agent}: {rule}")
        try:
            self.refused(f"gitliza {refusal}", self.refusals <= MAX_ANOMALIES)
        except Exception as e:  # recording must not take the channel down
            sys.stderr.write(f"[{self.agent}] cannot record a refusal: {e}\n")
        return refusal

    # -- MCP ------------------------------------------------------------------------------------
    def _relay_mcp(self, f: Any) -> None:
        assert self.mcp is not None
        env = {**os.environ, **self.mcp.get("env", {}), "LIZA_AGENT_ID": self.agent}
        run, preexec = procinfo.with_parent_death([self.mcp["command"], *self.mcp["args"]])
        proc = subprocess.Popen(run, env=env, cwd=self.cwd, stdin=subprocess.PIPE,
                                stdout=subprocess.PIPE, preexec_fn=preexec)
        self._children.add(proc)
        if self._closed:
            proc.kill()
        out_lock = threading.Lock()
        assert proc.stdin is not None and proc.stdout is not None

        def down() -> None:
            assert proc.stdout is not None
            try:
                for out in proc.stdout:
                    with out_lock:
                        f.write(out)
                        f.flush()
            except OSError:  # the agent's end closed (its CLI exited): nobody left to answer
                pass

        t = threading.Thread(target=down, daemon=True)
        t.start()
        try:
            while True:
                line = f.readline(MAX_REQUEST + 1)
                if not line:
                    break
                error, write = self._mcp_refusal(line)
                if error is not None:
                    with out_lock:
                        f.write(error)
                        f.flush()
                    continue
                with self._write_lock(write) as failure:
                    if failure is not None:
                        with out_lock:
                            f.write(_tool_error(line, classify(failure).line))
                            f.flush()
                        continue
                    proc.stdin.write(line)
                    proc.stdin.flush()
        except OSError:
            pass
        finally:
            try:
                proc.stdin.close()
            except OSError:
                pass
            try:
                proc.wait(timeout=10)
            except subprocess.TimeoutExpired:
                proc.kill()
                proc.wait()
            self._children.discard(proc)
            t.join(1)

    def _mcp_refusal(self, line: bytes) -> tuple[bytes | None, bool]:
        """(the error answer to a tools/call no agent may make, or None: pass it on, the server
        validates everything else itself; whether it is a call that changes the board)."""
        try:
            msg = json.loads(line)
        except (ValueError, RecursionError):
            return None, False
        if not isinstance(msg, dict) or msg.get("method") != "tools/call":
            return None, False
        params = msg.get("params")
        name = params.get("name") if isinstance(params, dict) else None
        args = params.get("arguments") if isinstance(params, dict) else None
        rule = None
        if not isinstance(name, str):
            return None, False
        v = rules.check_tool(self.role, name)
        if not v.ok:
            rule = v.rule
        elif isinstance(args, dict) and args.get("agent") not in (None, self.agent):
            rule = f"identity is bound by the supervisor: you act as {self.agent}"
        if rule is None:
            return None, name.replace("_", "-") in rules.writes(self.role)
        return _tool_error(line, classify(self._refuse(f"MCP tool {name}", rule)).line), False


def failed(e: Exception) -> dict[str, Any]:
    """The answer to a request that failed: errors.classify's line and exit code, the line as
    the CLI prints it (`gitliza: error: ...`), so an agent reads the same inside the sandbox."""
    failure = classify(e)
    return {"out": "", "err": f"gitliza: error: {safe_line(failure.line)}\n",
            "exit": failure.exit_code}


def _tool_error(line: bytes, text: str) -> bytes:
    """A tools/call's error result (the request's id kept)."""
    try:
        ident = json.loads(line).get("id")
    except (ValueError, AttributeError, RecursionError):
        ident = None
    answer = {"jsonrpc": "2.0", "id": ident,
              "result": {"content": [{"type": "text", "text": text}], "isError": True}}
    return json.dumps(answer).encode() + b"\n"


def _without_agent(argv: list[str]) -> list[str]:
    """ARGV less its `--agent` (already checked to name this agent): the environment names it."""
    out, skip = [], False
    for a in argv:
        if skip:
            skip = False
            continue
        if a in rules.AGENT_FLAGS:
            skip = True
            continue
        if any(a.startswith(f + "=") for f in rules.AGENT_FLAGS):
            continue
        out.append(a)
    return out
