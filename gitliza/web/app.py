"""The routes of `git liza web` (Starlette). Every page reads the board through one `Liza` under a
lock (pygit2 objects are not shared across threads); the event stream has its own thread and
handle (gitliza/web/live.py).

    GET  /                 the board              GET  /fragment/board      its live part
    GET  /task/{id}        a task                 GET  /fragment/task/{id}  its live part
    GET  /log              the audit timeline (?task= &agent= &op= &n= &all=1)  /fragment/log  its part
    GET  /pictures         dependency graph, burndown and throughput
    GET  /api/board        `status --json`        GET  /api/task/{id}       `show --json`
    GET  /events           server-sent events     GET  /task/{id}/log/{n}/stream  a log, live
    GET  /task/{id}/file/{commit}/{path}  a file at a commit the task's votes approved
    POST /action/{name}    a human action (CSRF)  GET  /static/...  /pygments.css
"""
from __future__ import annotations

import threading
from contextlib import asynccontextmanager, contextmanager
from importlib.resources import files
from pathlib import Path
from typing import Any, AsyncIterator, Callable, Iterator

from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import HTMLResponse, JSONResponse, PlainTextResponse, Response, \
    StreamingResponse
from starlette.routing import Mount, Route
from starlette.staticfiles import StaticFiles

from gitliza.errors import LizaError, classify
from gitliza.web import pages, snapshot, sources, taskpage
from gitliza.web.auth import Guard, Guarded
from gitliza.web.live import Broadcaster, event_stream, log_stream

HTTP_STATUS = {1: 422, 2: 409, 3: 500, 4: 500, 5: 503}
TERMINAL = ("MERGED", "SUPERSEDED", "ABANDONED")
LOG_DEFAULT = 200
REOPEN = 64  # transitions after which the routes' repository handle is reopened (Board.fresh)


class Board:
    """One repository's board as the routes read and change it."""

    def __init__(self, open_liza: Callable[[], Any], *, read_only: bool) -> None:
        self.open_liza = open_liza
        self.liza = open_liza()
        self.watcher: Any = None  # the alarms' Watcher over self.liza's store
        self.opened_at = 0  # the broadcaster's count of transitions when self.liza was opened
        self.lock = threading.Lock()
        self.seen: Callable[[], int] = lambda: 0  # transitions seen so far (the broadcaster's)
        self.read_only = read_only
        self._pictures: tuple[Any, str] | None = None

    @contextmanager
    def handle(self) -> Iterator[Any]:
        """The repository handle, for one request at a time (pygit2 objects are not shared
        across threads)."""
        with self.lock:
            self.fresh(self.seen())
            yield self.liza

    def fresh(self, seen: int) -> None:
        """Reopen the handle every REOPEN transitions (call under the lock): libgit2 keeps every
        pack file a handle has read open for the handle's life, and the board writes a pack per
        transition, so the server's open files would grow with the board's history."""
        if seen - self.opened_at >= REOPEN:
            old = self.liza
            self.liza, self.watcher, self.opened_at = self.open_liza(), None, seen
            old.repo.free()  # now, not when the cycle collector gets to it

    def board_html(self, verify: dict[str, Any], every_goal: bool = False) -> str:
        with self.handle():
            if self.watcher is None:
                from gitliza.governance.watch import Watcher
                self.watcher = Watcher(self.liza.store, notify=False, send=False)
            data = snapshot.board_view(self.liza, self.watcher)
            done = self._done(data["state"], every_goal)
        return pages.board_body(data, done, verify, self.read_only)

    def _done(self, state: str | None, every_goal: bool = False
              ) -> dict[str, list[dict[str, Any]]]:
        """The terminal columns: the current goal's archived tasks (every goal's with
        `every_goal`), the latest first; `#earlier`: how many earlier goals' tasks were left
        out, and the previous goal's line (its alignment history's first entry)."""
        from gitliza.core.reports.queries import of_current_goal
        from gitliza.services.views.data import task_row
        if state is None:
            return {}
        board = self.liza.store.board(state)[0]
        out: dict[str, list[dict[str, Any]]] = {s: [] for s in TERMINAL}
        archived = sorted(board.values("archive"),
                          key=lambda t: t.history[-1].time if t.history else t.created,
                          reverse=True)
        earlier = 0
        for t in archived:
            if not every_goal and not of_current_goal(board, t):
                earlier += 1
                continue
            out.setdefault(t.status.value, []).append(task_row(t))
        previous = next((a.summary for a in board.goal.alignment_history
                         if a.event == "previous_goal"), None)
        out["#earlier"] = [{"n": earlier, "previous": previous, "every_goal": every_goal}]
        for s in TERMINAL:
            out[f"{s}#count"] = [{"n": len(out[s])}]
            out[s] = out[s][:pages.DONE_SHOWN]
        return out

    def task_html(self, task: str) -> str:
        from gitliza.services.views.data import log_entries, show_data
        with self.handle():
            t = show_data(self.liza, task)
            repo = self.liza.repo
            branch = self.liza.board().config.integration_branch
            spec = sources.spec_text(repo, branch, t.get("spec_ref"))
            audit = log_entries(self.liza, task=task)
            diff = sources.review_diff(repo, t.get("base_commit"), t.get("review_commit"))
            logs = [(p, *sources.log_tail(p)) for p in sources.log_files(self.liza, task)]
        return taskpage.task_body(t, spec=spec, audit=audit, diff=diff, logs=logs,
                                  read_only=self.read_only)

    def file_html(self, task: str, commit: str, path: str) -> str | None:
        """`path` at `commit`, a commit the task's votes approved (web/evidence.py)."""
        from gitliza.services.views.data import show_data
        from gitliza.web.evidence import file_body
        with self.handle():
            return file_body(self.liza.repo, show_data(self.liza, task), commit, path)

    def pictures_html(self) -> str:
        from gitliza.services.views.data import log_entries, status_data, task_row
        from gitliza.web import pictures
        with self.handle():
            if self.liza.store.tip() is None:
                return pages.pictures_body('<p class="empty">no tasks yet</p>',
                                           '<p class="empty">no history yet</p>')
            data = status_data(self.liza)
            tip = data["state"]
            # Every task of the goal, finished ones too: they are what the others waited on.
            everything = data["tasks"] + ([task_row(t) for t in self.liza.store.board(tip)[0]
                                           .values("archive")] if tip is not None else [])
            if self._pictures is None or self._pictures[0] != tip:
                entries = list(reversed(log_entries(self.liza)))
                self._pictures = (tip, pictures.burndown(pictures.progress(entries)))
            chart = self._pictures[1]
        return pages.pictures_body(pictures.dependency_graph(everything), chart)


def build(open_liza: Callable[[], Any], token: str, *, read_only: bool = False,
          loopback: bool = True, cookie: str = "gitliza_web") -> Any:
    """The ASGI app for one repository (`open_liza()` opens a handle on it, as the human)."""
    board = Board(open_liza, read_only=read_only)
    bus = Broadcaster(open_liza)
    board.seen = lambda: bus.events_seen
    guard = Guard(token, loopback=loopback, cookie=cookie)
    static = files("gitliza.web") / "static"

    def page(title: str, body: str, fragment: str | None, active: str = "board") -> HTMLResponse:
        return HTMLResponse(pages.layout(title, body, csrf=guard.csrf, read_only=read_only,
                                         fragment=fragment, active=active))

    def failed(err: BaseException) -> Response:
        # errors.classify decides the code, exit code and line, as for the CLI and MCP; the
        # board renders them: the line as text, the exit code as the HTTP status, both in headers.
        f = classify(err)
        return PlainTextResponse(f"gitliza: error: {f.line}\n",
                                 status_code=HTTP_STATUS.get(f.exit_code, 500),
                                 headers={"X-Gitliza-Error": f.code,
                                          "X-Gitliza-Exit-Code": str(f.exit_code)})

    async def index(request: Request) -> Response:
        from starlette.concurrency import run_in_threadpool
        every = request.query_params.get("goals") == "all"
        body = await run_in_threadpool(board.board_html, bus.verify, every)
        return page("board", body, "/fragment/board" + ("?goals=all" if every else ""))

    async def board_fragment(request: Request) -> Response:
        from starlette.concurrency import run_in_threadpool
        every = request.query_params.get("goals") == "all"
        return HTMLResponse(await run_in_threadpool(board.board_html, bus.verify, every))

    async def task_page(request: Request) -> Response:
        from starlette.concurrency import run_in_threadpool
        tid = request.path_params["task"]
        try:
            body = await run_in_threadpool(board.task_html, tid)
        except LizaError as err:
            return failed(err)
        return page(tid, body, f"/fragment/task/{tid}")

    async def task_file(request: Request) -> Response:
        from starlette.concurrency import run_in_threadpool
        p = request.path_params
        try:
            body = await run_in_threadpool(board.file_html, p["task"], p["commit"], p["path"])
        except LizaError as err:
            return failed(err)
        if body is None:
            return PlainTextResponse("gitliza: error: no such text file at a commit of this "
                                     "task's review\n", status_code=404)
        return page(f'{p["task"]}: {p["path"]}', body, None)

    async def task_fragment(request: Request) -> Response:
        from starlette.concurrency import run_in_threadpool
        try:
            return HTMLResponse(await run_in_threadpool(board.task_html,
                                                        request.path_params["task"]))
        except LizaError as err:
            return failed(err)

    async def log_page(request: Request) -> Response:
        from starlette.concurrency import run_in_threadpool
        q = request.query_params
        filters = {k: q.get(k, "").strip() for k in ("task", "agent", "op", "all")}
        try:
            limit = max(1, int(q.get("n") or LOG_DEFAULT))
        except ValueError:
            return PlainTextResponse("gitliza: error: n must be a number\n", status_code=422)

        def read() -> list[dict[str, Any]]:
            from gitliza.services.views.data import log_entries
            with board.handle():
                found = log_entries(board.liza, None if filters["op"] else limit,
                                    task=filters["task"] or None, by=filters["agent"] or None,
                                    everything=bool(filters["all"] or filters["op"]))
            if filters["op"]:
                found = [x for x in found if x.get("op") == filters["op"]][:limit]
            return found
        body = pages.log_body(await run_in_threadpool(read), filters, limit)
        if request.url.path.startswith("/fragment/"):
            return HTMLResponse(body)
        query = f"?{request.url.query}" if request.url.query else ""
        return page("timeline", body, f"/fragment/log{query}", "log")

    async def pictures_page(request: Request) -> Response:
        from starlette.concurrency import run_in_threadpool
        return page("pictures", await run_in_threadpool(board.pictures_html),
                    "/fragment/pictures", "pictures")

    async def pictures_fragment(request: Request) -> Response:
        from starlette.concurrency import run_in_threadpool
        return HTMLResponse(await run_in_threadpool(board.pictures_html))

    async def api_board(request: Request) -> Response:
        from starlette.concurrency import run_in_threadpool

        from gitliza.services.views.data import status_data

        def read() -> dict[str, Any]:
            with board.handle():
                return status_data(board.liza)
        return JSONResponse(await run_in_threadpool(read))

    async def api_task(request: Request) -> Response:
        from starlette.concurrency import run_in_threadpool

        from gitliza.services.views.data import show_data

        def read() -> dict[str, Any]:
            with board.handle():
                return show_data(board.liza, request.path_params["task"])
        try:
            return JSONResponse(await run_in_threadpool(read))
        except LizaError as err:
            return failed(err)

    async def action(request: Request) -> Response:
        from starlette.concurrency import run_in_threadpool

        from gitliza.web.actions import perform
        form = await request.form()
        if not guard.csrf_ok(request, str(form.get("csrf") or "") or None):
            return PlainTextResponse("gitliza: error: missing or wrong CSRF token\n",
                                     status_code=403)
        if read_only:
            return PlainTextResponse("gitliza: error: this board is served read-only\n",
                                     status_code=403)
        fields = {k: str(v) for k, v in form.items() if k != "csrf"}

        def act() -> dict[str, Any]:
            with board.handle():
                return perform(board.liza, request.path_params["name"], fields)
        try:
            result = await run_in_threadpool(act)
        except Exception as err:  # as the CLI's handler: refused, the environment's refusal, a bug
            return failed(err)
        return JSONResponse(result)

    async def stream(request: Request) -> Response:
        return StreamingResponse(event_stream(bus), media_type="text/event-stream",
                                 headers={"X-Accel-Buffering": "no"})

    async def agent_log(request: Request) -> Response:
        tid, n = request.path_params["task"], request.path_params["n"]
        with board.handle():
            found = sources.log_files(board.liza, tid)
        if n >= len(found):
            return PlainTextResponse("gitliza: error: no such log\n", status_code=404)
        path: Path = found[n]
        try:
            offset = int(request.query_params.get("offset", "0"))
        except ValueError:
            offset = 0
        return StreamingResponse(log_stream(path, max(0, offset), bus.closing),
                                 media_type="text/event-stream")

    async def repo_image(request: Request) -> Response:
        from gitliza.web.images import repo_image as read
        with board.handle():
            found = read(board.liza.repo, board.liza.board().config.integration_branch,
                         request.path_params["path"])
        if found is None:
            return PlainTextResponse("gitliza: error: no such image\n", status_code=404)
        return Response(found[0], media_type=found[1])

    async def css(request: Request) -> Response:
        return Response(taskpage.pygments_css(), media_type="text/css")

    @asynccontextmanager
    async def lifespan(app: Any) -> AsyncIterator[None]:
        import asyncio
        bus.start(asyncio.get_running_loop())
        try:
            yield
        finally:
            bus.close()

    routes = [
        Route("/", index), Route("/fragment/board", board_fragment),
        Route("/task/{task}", task_page), Route("/fragment/task/{task}", task_fragment),
        Route("/task/{task}/file/{commit}/{path:path}", task_file),
        Route("/log", log_page), Route("/fragment/log", log_page),
        Route("/pictures", pictures_page),
        Route("/fragment/pictures", pictures_fragment),
        Route("/api/board", api_board), Route("/api/task/{task}", api_task),
        Route("/events", stream), Route("/task/{task}/log/{n:int}/stream", agent_log),
        Route("/action/{name}", action, methods=["POST"]), Route("/pygments.css", css),
        Route("/repo/{path:path}", repo_image),
        Mount("/static", StaticFiles(directory=str(static)), name="static"),
    ]
    async def refused(request: Request, err: Exception) -> Response:
        assert isinstance(err, LizaError)
        return failed(err)  # any route: the CLI's one line, never a traceback page

    app = Starlette(routes=routes, lifespan=lifespan, exception_handlers={LizaError: refused})
    app.state.board = board
    app.state.bus = bus
    return Guarded(app, guard)
