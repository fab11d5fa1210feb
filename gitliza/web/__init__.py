"""`git liza web`: the live web board (docs/web.md).

A small ASGI app (Starlette, served by uvicorn) over the same views the CLI's `--json` and the MCP
tools use (gitliza/services/views/, transitions.py): `app.py` wires the routes, `auth.py` the
token, cookie and CSRF checks, `snapshot.py` what a page shows, `pages.py` and `task.py` the
HTML, `pictures.py` the SVG pictures, `actions.py` the human's transitions, `live.py` the
server-sent events fed by the ref watch of `git liza events --follow`, `server.py` the command.
Starlette and uvicorn are the optional extra `gitliza[web]`; nothing here is imported at the CLI's
start-up.
"""
