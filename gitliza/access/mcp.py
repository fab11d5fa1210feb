"""`git liza mcp`: the board as an MCP server on stdio, for one agent.

The tools are the table in gitliza/access/tools.py, restricted to the agent's role; every call
runs in this process through the library the CLI uses (one `Liza` for the server's lifetime, so
a call costs the op, not a process start). The actor is the server's agent id: no tool takes one.
A failure is a tool error (`is_error`) whose text is `CODE (exit N): message` and whose structured
content carries the same code, exit code and one-line message as the CLI's.

Resources: `liza://board` (what `status` returns), `liza://log` (the audit trail) and
`liza://task/{id}` (one task with its history).

The SDK (`mcp` on PyPI) is an optional extra, imported only here, only when the server starts.
"""
from __future__ import annotations

import contextlib
import json
import os
import threading
from pathlib import Path
from typing import Any

from gitliza.access import jsonrpc, tools
from gitliza.core.states import Role
from gitliza.errors import MissingDependency, NotFound, classify

INSTALL_HINT = "pip install 'gitliza[mcp]'"
BOARD_URI = "liza://board"
LOG_URI = "liza://log"
TASK_PREFIX = "liza://task/"
LOG_RESOURCE_ENTRIES = 200


def require_sdk() -> None:
    try:
        import mcp.server.lowlevel  # noqa: F401
    except ImportError:
        raise MissingDependency("the MCP server needs the MCP Python SDK (module 'mcp')",
                                hint=INSTALL_HINT) from None


def error_payload(e: BaseException) -> dict[str, Any]:
    """What a failed call returns: the CLI's code, exit code and one line (errors.classify)."""
    return classify(e).to_json()


class Session:
    """One agent's view: its Liza, its role, its tools. Synchronous; the server serializes calls
    (one repository object, one writer per server)."""

    def __init__(self, path: Path, agent: str | None, role: str | None,
                 supervised: bool | None = None) -> None:
        from gitliza.services.api import GEN_ENV
        from gitliza.services.session import open_liza
        # As the CLI opens it: auto-sync and materialize hooks included.
        self.liza: Any = open_liza(path, agent)
        self.role: Role = tools.resolve_role(self.liza.board(), self.liza.agent, role)
        # Started for an agent a supervisor runs (its generation is set): the tools its prompt
        # allows, without what the supervisor does for it (claim, heartbeat, merge ...).
        self.supervised = bool(os.environ.get(GEN_ENV)) if supervised is None else supervised
        self.tools = {t.name: t for t in tools.tools_for(self.role, self.supervised)}
        self.lock = threading.Lock()

    def call(self, name: str, args: dict[str, Any] | None) -> tuple[bool, dict[str, Any]]:
        """(ok, structured result)."""
        tool = self.tools.get(name)
        with contextlib.nullcontext() if tool is not None and tool.concurrent else self.lock:
            try:
                data = tools.call(self.liza, self.role, name, args, self.supervised)
            except Exception as e:  # every failure is the agent's to read, as one line
                if classify(e).bug and os.environ.get("LIZA_DEBUG"):
                    raise
                out: dict[str, Any] = {"error": error_payload(e)}
                extra = getattr(e, "data", None)
                committed = getattr(e, "committed", None)  # MergeFailed: recorded, then failed
                if extra is not None:
                    out["result"] = extra
                elif committed is not None:
                    from gitliza.services.transitions import transition_data
                    out["result"] = transition_data(committed, {
                        "result": "failed", "reason": getattr(e, "message", str(e))})
                return False, out
        return True, data if isinstance(data, dict) else {"result": data}

    def read(self, uri: str) -> Any:
        from gitliza.services.views import data as view
        with self.lock:
            if uri == BOARD_URI:
                return view.status_data(self.liza)
            if uri == LOG_URI:
                return view.log_entries(self.liza, LOG_RESOURCE_ENTRIES)
            if uri.startswith(TASK_PREFIX):
                return view.show_data(self.liza, uri[len(TASK_PREFIX):])
        raise NotFound(f"unknown resource {uri!r}",
                       hint=f"the resources are {BOARD_URI}, {LOG_URI} and {TASK_PREFIX}<task>")

    def task_ids(self) -> list[str]:
        with self.lock:
            return sorted(t.id for t in self.liza.board().tasks())

    def instructions(self) -> str:
        return (f"The Liza board of {self.liza.store.repo.workdir or self.liza.store.repo.path}. "
                f"You act as {self.liza.agent} (role {self.role.value}); the tools are the "
                "`git liza` commands your role may run. A failed call says CODE (exit N): what "
                "to do; LEASE_LOST means stand down.")


def build_server(session: Session) -> Any:
    import anyio
    import mcp_types as types
    from mcp.server.lowlevel import Server
    from mcp.shared.exceptions import MCPError

    import gitliza

    def text(data: Any) -> list[Any]:
        return [types.TextContent(type="text", text=json.dumps(data, default=str))]

    async def list_tools(ctx: Any, params: Any) -> Any:
        return types.ListToolsResult(tools=[
            types.Tool(name=t.name, description=t.description, input_schema=t.schema,
                       annotations=types.ToolAnnotations(read_only_hint=t.read_only))
            for t in session.tools.values()])

    async def call_tool(ctx: Any, params: Any) -> Any:
        nulls = sorted(k for k, v in (params.arguments or {}).items() if v is None)
        if nulls:  # null is no value of any tool argument: refused, never taken as "absent"
            raise MCPError(code=jsonrpc.INVALID_PARAMS,
                           message=f"Invalid params: {params.name}: {', '.join(nulls)} must not "
                                   "be null (leave an argument out to use its default)")
        tool = session.tools.get(params.name)
        if tool is not None and tool.read_only and not tool.concurrent:
            # A read takes well under a millisecond: a thread hop would cost more than it.
            ok, data = session.call(params.name, params.arguments)
        else:  # writes may run git (a worktree, a merge, an integration test): off the loop
            ok, data = await anyio.to_thread.run_sync(session.call, params.name,
                                                      params.arguments)
        if ok:
            return types.CallToolResult(content=text(data), structured_content=data)
        e = data["error"]
        return types.CallToolResult(
            content=[types.TextContent(type="text",
                                       text=f"{e['code']} (exit {e['exit_code']}): "
                                            f"{e['message']}")],
            structured_content=data, is_error=True)

    async def list_resources(ctx: Any, params: Any) -> Any:
        ids = await anyio.to_thread.run_sync(session.task_ids)
        fixed = [types.Resource(uri=BOARD_URI, name="board", mime_type="application/json",
                                description="The board (what the status tool returns)."),
                 types.Resource(uri=LOG_URI, name="log", mime_type="application/json",
                                description="The audit trail, newest first.")]
        return types.ListResourcesResult(resources=fixed + [
            types.Resource(uri=TASK_PREFIX + i, name=i, mime_type="application/json")
            for i in ids])

    async def list_templates(ctx: Any, params: Any) -> Any:
        return types.ListResourceTemplatesResult(resource_templates=[
            types.ResourceTemplate(uri_template=TASK_PREFIX + "{task}", name="task",
                                   mime_type="application/json",
                                   description="One task with its history.")])

    async def read_resource(ctx: Any, params: Any) -> Any:
        uri = str(params.uri)
        try:
            data = await anyio.to_thread.run_sync(session.read, uri)
        except NotFound as e:
            raise MCPError(code=jsonrpc.RESOURCE_NOT_FOUND, message=f"Resource not found: {e}",
                           data={"uri": uri}) from None
        except Exception as e:  # one line, the CLI's code and exit code, no traceback
            failure = classify(e)
            if failure.bug and os.environ.get("LIZA_DEBUG"):
                raise
            raise MCPError(code=jsonrpc.INTERNAL_ERROR, message=failure.line,
                           data=failure.to_json()) from None
        return types.ReadResourceResult(contents=[types.TextResourceContents(
            uri=uri, mime_type="application/json", text=json.dumps(data, default=str))])

    return Server("gitliza", version=gitliza.__version__, instructions=session.instructions(),
                  on_list_tools=list_tools, on_call_tool=call_tool,
                  on_list_resources=list_resources, on_list_resource_templates=list_templates,
                  on_read_resource=read_resource)


def serve(path: Path, agent: str | None, role: str | None) -> int:
    """Run the stdio server until the client closes it."""
    from gitliza.git import longlived
    longlived.install()  # a long-lived process: no name kept, pack windows bounded (longlived.py)
    require_sdk()
    import anyio
    from mcp.server.stdio import stdio_server

    session = Session(path, agent, role)
    server = build_server(session)
    lines = _CheckedLines()

    async def main() -> None:
        async with stdio_server(stdin=lines.claim_stdin()) as (read, write):
            lines.answer = write
            await server.run(read, write, server.create_initialization_options())

    try:
        anyio.run(main)
    finally:
        lines.release()
    return 0


class _CheckedLines:
    """stdin as the SDK reads it, less the lines JSON-RPC says to answer with an error (parse
    errors, invalid requests, positional params): those are answered here (jsonrpc.py), since
    the SDK would drop them unanswered. fd 0 is taken over as the SDK does by itself: handlers
    and the programs they run read /dev/null, never the protocol."""

    def __init__(self) -> None:
        self.answer: Any = None
        self._saved: int | None = None
        self._file: Any = None

    def claim_stdin(self) -> Any:
        self._saved = os.dup(0)
        devnull = os.open(os.devnull, os.O_RDONLY)
        os.dup2(devnull, 0)
        os.close(devnull)
        self._file = open(os.dup(self._saved), encoding="utf-8", errors="replace", closefd=True)
        return self

    def release(self) -> None:
        if self._saved is not None:
            os.dup2(self._saved, 0)
            os.close(self._saved)
            self._saved = None

    def __aiter__(self) -> Any:
        return self._lines()

    async def _read(self) -> str:
        """The next line, or at most MAX_LINE + 1 characters of it (the rest skipped unread into
        memory: check_line refuses a line that long), "" at the end of input."""
        import anyio
        limit = jsonrpc.MAX_LINE + 1
        line: str = await anyio.to_thread.run_sync(self._file.readline, limit)
        if len(line) == limit and not line.endswith("\n"):
            rest = line
            while rest and not rest.endswith("\n"):
                rest = await anyio.to_thread.run_sync(self._file.readline, limit)
        return line

    async def _lines(self) -> Any:
        import mcp_types as types
        from mcp.shared.message import SessionMessage
        while line := await self._read():
            bad = jsonrpc.check_line(line)
            if bad is None:
                yield line
            elif bad and self.answer is not None:
                reply = types.jsonrpc_message_adapter.validate_python(bad)
                await self.answer.send(SessionMessage(reply))
