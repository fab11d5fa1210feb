"""The board's pages as HTML, from the views' data (gitliza/web/snapshot.py): the layout every
page shares, the board (a column per task state, the agents, the panels), the audit timeline and
the pictures. Text is escaped where it is put in; times are rendered as `data-expires` /
`data-since` attributes that the page's script turns into countdowns and ages every second, so
the clock never needs the server."""
from __future__ import annotations

from html import escape
from typing import Any, Iterable, Sequence

from gitliza.core.states import TaskState

STATES = [s.value for s in TaskState]
TERMINAL = ("MERGED", "SUPERSEDED", "ABANDONED")
DONE_SHOWN = 30  # archived tasks listed in each terminal column


def e(value: Any) -> str:
    return escape("" if value is None else str(value))


def label(state: str) -> str:
    return state.replace("_", " ").lower()


def layout(title: str, body: str, *, csrf: str, read_only: bool, fragment: str | None = None,
           active: str = "board") -> str:
    """A whole page. `fragment`: the URL the script re-fetches the `#live` part from whenever the
    board moves (the server's event stream says so)."""
    nav = "".join(f'<a href="{href}" class="{"on" if key == active else ""}">{name}</a>'
                  for key, href, name in (("board", "/", "Board"), ("log", "/log", "Timeline"),
                                          ("pictures", "/pictures", "Pictures")))
    mode = '<span class="badge ro">read-only</span>' if read_only else ""
    return f"""<!doctype html>
<html lang="en"><head><meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<meta name="csrf" content="{e(csrf)}">
<title>{e(title)} · gitliza</title>
<link rel="stylesheet" href="/static/style.css"><link rel="stylesheet" href="/pygments.css">
<script src="/static/board.js" defer></script></head>
<body data-fragment="{e(fragment or '')}">
<header class="top"><span class="brand">git liza</span><nav>{nav}</nav>{mode}
<span id="conn" class="conn" title="live updates">●</span></header>
<div id="flash" role="status" aria-live="polite"></div>
<div id="live">{body}</div>
</body></html>"""


def when(ts: str | None, kind: str = "expires") -> str:
    """A time the script keeps current: a countdown (`expires`) or an age (`since`)."""
    if not ts:
        return ""
    return f'<span class="clock" data-{kind}="{e(ts)}" title="{e(ts)}">{e(ts[11:19])}</span>'


def board_body(data: dict[str, Any], done: dict[str, list[dict[str, Any]]], verify: dict[str, Any],
               read_only: bool) -> str:
    if data["state"] is None:
        return '<section class="panel"><h2>No board here</h2><p>Run <code>git liza init ' \
               'GOAL</code> in this repository; this page follows as soon as it exists.</p>' \
               '</section>'
    if "#earlier" in done and not done["#earlier"][0].get("every_goal"):
        # The header counts what the columns show: this goal's archived tasks, not every goal's.
        data = {**data, "archived": sum(done[f"{s}#count"][0]["n"] for s in TERMINAL
                                        if f"{s}#count" in done)}
    return (header(data, verify) + ("" if read_only else board_actions(data))
            + alarms_panel(data.get("alarms"))
            + earlier_goals(done) + columns(data["tasks"], done, data["now"])
            + agents_panel(data["agents"]) + machines_panel(data.get("machines") or [])
            + '<div class="grid4">' + journal_panels(data) + '</div>'
            + recent_panel(data.get("recent", [])))


def header(data: dict[str, Any], verify: dict[str, Any]) -> str:
    goal, sprint, control = data["goal"], data["sprint"], data["control"]
    m = sprint.get("metrics", {})
    flags = []
    if control.get("aborted"):
        flags.append(f'<span class="flag bad">ABORTED by {e(control.get("aborted_by"))}: '
                     f'{e(control.get("abort_reason"))}</span>')
    if control.get("paused"):
        why = control.get("pause_reason")
        flags.append(f'<span class="flag warn">PAUSED by {e(control.get("paused_by"))}'
                     f'{": " + e(why) if why else ""}</span>')
    if sprint.get("status") == "CHECKPOINT":
        flags.append(f'<span class="flag warn">CHECKPOINT: {e(control.get("checkpoint_reason"))}'
                     '</span>')
    stats = [("done", m.get("tasks_done", 0)), ("in progress", m.get("tasks_in_progress", 0)),
             ("blocked", m.get("tasks_blocked", 0)), ("iterations", m.get("iterations_total", 0)),
             ("review cycles", m.get("review_cycles_total", 0)),
             ("approval", _pct(m.get("review_verdict_approval_rate_percent"))),
             ("archived", data.get("archived", 0))]
    flow = data.get("flow") or {}
    stats += [("merge queue", len(data.get("merge_queue", ()))),
              ("conflicts /10 merged", _num(flow.get("conflicts_per_10_merged"))),
              ("reviews /merged", _num(flow.get("reviews_per_merged"))),
              ("queue time", _num(flow.get("queue_seconds_mean"), "s"))]
    deadline = (sprint.get("timeline", {}) or {}).get("deadline")
    state = data["state"]
    return f"""<section class="head">
<div class="goal"><div class="kicker">goal {e(goal.get("id"))} · <b>{e(goal.get("status"))}</b>
</div><h1>{e(goal.get("description"))}</h1>
<div class="sub">sprint {e(sprint.get("id"))} · <b>{e(sprint.get("status"))}</b>
{"· deadline " + when(deadline) if deadline else ""}
· state <code title="{e(state)}">{e(state[:12])}</code> {verify_badge(verify)}</div>
<div class="flags">{"".join(flags)}</div></div>
<dl class="stats">{"".join(f"<div><dt>{k}</dt><dd>{e(v)}</dd></div>" for k, v in stats)}</dl>
</section>"""


def _num(v: Any, unit: str = "") -> str:
    return "n/a" if v is None else f"{v}{unit}"


def _pct(v: Any) -> str:
    return "-" if v is None else f"{v}%"


def verify_badge(v: dict[str, Any]) -> str:
    if v.get("ok") is None:
        return '<span class="badge" id="verify">verify: running</span>'
    if v["ok"]:
        return ('<span class="badge ok" id="verify" title="every state commit replays to its '
                f'tree">verified {e(v.get("commits"))} commits</span>')
    return f'<span class="badge bad" id="verify">verify failed: {e(v.get("error"))}</span>'


def form(action: str, fields: str, button: str, *, danger: bool = False,
         confirm: str | None = None) -> str:
    conf = f' data-confirm="{e(confirm)}"' if confirm else ""
    return (f'<form class="action" method="post" action="/action/{action}"{conf}>{fields}'
            f'<button class="{"danger" if danger else ""}" type="submit">{button}</button></form>')


def text_field(name: str, placeholder: str, required: bool = False, value: str = "") -> str:
    return (f'<input name="{name}" placeholder="{e(placeholder)}" value="{e(value)}"'
            f'{" required" if required else ""}>')


def earlier_goals(done: dict[str, list[dict[str, Any]]]) -> str:
    """One line over the columns: the previous goal, and its tasks one click away (the terminal
    columns show the current goal's own, as the header counts them)."""
    info = (done.get("#earlier") or [{}])[0]
    if not info.get("previous") and not info.get("n"):
        return ""
    prev = f'previous goal: {e(info["previous"])}' if info.get("previous") else "earlier goals"
    if info.get("every_goal"):
        link = '<a href="/">this goal\'s tasks only</a>'
    else:
        link = (f'<a href="/?goals=all">show their {info.get("n", 0)} finished task(s)</a>'
                if info.get("n") else "")
    return f'<p class="goals">{prev} {link}</p>'


def board_actions(data: dict[str, Any]) -> str:
    c = data["control"]
    if data["goal"].get("status") != "IN_PROGRESS":
        # An ended goal has no team to pause, checkpoint or abort: a note, or the next goal.
        return ('<section class="actions">'
                + form("note", text_field("message", "a note to the team", True)
                       + text_field("for_task", "for task (optional)"), "Add note")
                + f'<p class="ended">goal {e(data["goal"].get("id"))} is '
                  f'{e(data["goal"].get("status"))}: <code>git liza init "NEXT GOAL"</code> '
                  'starts the next one</p></section>')
    paused = c.get("paused") or data["sprint"].get("status") == "CHECKPOINT"
    acts = [form("resume", text_field("decision", "decision (optional)"), "Resume")
            if paused else form("pause", text_field("reason", "why pause (optional)"), "Pause"),
            form("checkpoint", text_field("reason", "checkpoint reason", value="human review"),
                 "Checkpoint"),
            form("note", text_field("message", "a note to the team", True)
                 + text_field("for_task", "for task (optional)"), "Add note"),
            form("abort", text_field("reason", "why abort"), "Abort", danger=True,
                 confirm="Abort the team on every machine?")]
    return f'<section class="actions">{"".join(acts)}</section>'


def alarms_panel(alarms: list[dict[str, str]] | None) -> str:
    if alarms is None:
        return ""
    if not alarms:
        return '<section class="alarms none">no alarms</section>'
    return '<section class="alarms">' + "".join(
        f'<div class="alarm {e(a["level"])}"><b>{e(a["level"].upper())}</b> {e(a["text"])}</div>'
        for a in alarms) + "</section>"


def card(t: dict[str, Any]) -> str:
    lease = t.get("review_lease_expires") if t["status"] == "READY_FOR_REVIEW" else \
        t.get("lease_expires")
    who = t.get("assigned_to") or ""
    if t.get("reviewing_by") or t.get("co_reviewers"):
        held = [x for x in (t.get("reviewing_by"), *t.get("co_reviewers", ())) if x]
        who += f' · review {", ".join(held)}'
    deps = " ".join(f'<a href="/task/{e(d)}">{e(d)}</a>' for d in t.get("depends_on", ()))
    bits = [f'<span class="pri p{e(t.get("priority"))}">P{e(t.get("priority"))}</span>']
    if t.get("iteration"):
        bits.append(f'<span class="it" title="iteration">#{e(t["iteration"])}</span>')
    if t.get("approvals"):  # the review quorum's votes so far
        voters = ", ".join(t["approvals"])
        bits.append(f'<span class="votes" title="approved by {e(voters)}">'
                    f'&#10003;{len(t["approvals"])}</span>')
    if lease:
        bits.append(f'<span class="lease" title="lease">lease {when(lease)}</span>')
    if t.get("awaiting_human"):  # first in its column (views.tasks_in_order), and marked
        bits.append('<span class="awaiting" title="only the human can answer">AWAITING HUMAN'
                    '</span>')
    return (f'<article class="card s-{e(t["status"])}" data-task="{e(t["id"])}">'
            f'<div class="row"><a class="tid" href="/task/{e(t["id"])}">{e(t["id"])}</a>'
            f'{"".join(bits)}</div>'
            f'<div class="desc">{e(t.get("description"))}</div>'
            + (f'<div class="who">{e(who)}</div>' if who else "")
            + (f'<div class="deps">after {deps}</div>' if deps else "")
            + (f'<div class="lock" title="lock scope">lock {e(", ".join(t["lock_scope"]))}'
               + (f' · waits for <a href="/task/{e(t["lock_wait"])}">{e(t["lock_wait"])}</a>'
                  if t.get("lock_wait") else "") + "</div>" if t.get("lock_scope") else "")
            + (f'<div class="blocked">{e(t["blocked_reason"])}</div>'
               if t.get("blocked_reason") else "") + "</article>")


def columns(tasks: Sequence[dict[str, Any]], done: dict[str, list[dict[str, Any]]],
            now: str) -> str:
    by: dict[str, list[dict[str, Any]]] = {s: [] for s in STATES}
    for t in tasks:
        by.setdefault(t["status"], []).append(t)
    cols = []
    for s in STATES:
        items = by[s] if s not in TERMINAL else done.get(s, [])
        total = len(items) if s not in TERMINAL else done.get(f"{s}#count", [{}])[0].get("n", 0)
        shown = items if s not in TERMINAL else items[:DONE_SHOWN]
        more = f'<div class="more">+{total - len(shown)} more</div>' if total > len(shown) else ""
        cols.append(f'<section class="col c-{s}" data-state="{s}"><h3>{label(s)} '
                    f'<span class="count">{total}</span></h3>'
                    + "".join(card(t) for t in shown) + more + "</section>")
    return f'<div class="board" data-now="{e(now)}">{"".join(cols)}</div>'


def agents_panel(agents: Sequence[dict[str, Any]]) -> str:
    if not agents:
        return '<section class="panel"><h2>Agents</h2><p class="empty">none registered</p>' \
               '</section>'
    rows = "".join(
        f'<tr data-agent="{e(a["id"])}"><td><b>{e(a["id"])}</b></td><td>{e(a.get("role"))}</td>'
        f'<td>{e(a.get("status"))}</td><td>'
        + (f'<a href="/task/{e(a["current_task"])}">{e(a["current_task"])}</a>'
           if a.get("current_task") else "") + "</td>"
        f'<td>{when(a.get("heartbeat"), "since")}</td><td>{when(a.get("lease_expires"))}</td>'
        f'<td>{e(a.get("generation") if a.get("generation") is not None else "")}</td>'
        f'<td>{e(a.get("model") or "")}</td>'
        f'<td><span class="live {_liveness(a)}" title="{e(a.get("supervisor_note") or "")}">'
        f'{_liveness(a)}</span></td></tr>'
        for a in sorted(agents, key=lambda a: a["id"]))
    notes = "".join(f'<p class="sup-note">{e(a[k])}</p>'
                    for a in sorted(agents, key=lambda a: a["id"])
                    for k in ("supervisor_note", "provider_note") if a.get(k))
    return ('<section class="panel"><h2>Agents</h2><table class="agents"><thead><tr><th>agent</th>'
            '<th>role</th><th>status</th><th>task</th><th>heartbeat</th><th>lease</th>'
            f'<th>supervisor gen</th><th>model</th><th></th></tr></thead><tbody>{rows}</tbody>'
            f'</table>{notes}</section>')


def machines_panel(machines: Sequence[dict[str, Any]]) -> str:
    """The machines the agents run on (core/presence/hosts.py), once there are two or one is
    unreachable or drained: a one-machine team with no news gets no panel."""
    if len(machines) < 2 and not any(m["status"] == "unreachable" or m.get("drain")
                                     for m in machines):
        return ""
    rows = "".join(
        f'<tr data-machine="{e(m["host"])}"><td><b>{e(m["host"])}</b></td>'
        f'<td>{e(m["status"])}{" " + e(m["drain"]) if m.get("drain") else ""}</td>'
        f'<td>{e(", ".join(m["agents"]))}</td><td>{when(m.get("last_seen"), "since")}</td>'
        f'<td>{e(", ".join(m["tasks"]))}</td><td>{e(", ".join(m.get("labels") or []))}</td></tr>'
        for m in machines)
    return ('<section class="panel"><h2>Machines</h2><table class="machines"><thead><tr>'
            '<th>machine</th><th>state</th><th>agents</th><th>last seen</th><th>holds</th>'
            f'<th>labels</th></tr></thead><tbody>{rows}</tbody></table></section>')


def _liveness(a: dict[str, Any]) -> str:
    """alive; stopped (its supervisor recorded its end) or gone (its token expired unrenewed),
    whatever lease its task still has; else stale (no renewal within two intervals)."""
    if a.get("supervisor") == "stopped":
        return "stopped"
    if a.get("supervisor") == "expired":
        return "gone"
    return "alive" if a.get("alive") else "stale"


def journal_panels(data: dict[str, Any]) -> str:
    anomalies = "".join(
        f'<li><span class="when">{when(a.get("timestamp"), "since")}</span> <b>{e(a["type"])}</b>'
        f'{" on " + task_link(a["task"]) if a.get("task") else ""} by {e(a.get("reporter"))}'
        + "".join(f' <span class="kv">{e(k)}={e(v)}</span>' for k, v in
                  (a.get("details") or {}).items()) + "</li>"
        for a in data.get("anomalies", []))
    discoveries = "".join(
        f'<li><b>{e(d["id"])}</b> <span class="sev {e(d.get("severity"))}">{e(d.get("severity"))}'
        f'</span> {e(d.get("description"))} <span class="by">by {e(d.get("by"))}</span>'
        + (f' → {task_link(d["converted_to_task"])}' if d.get("converted_to_task") else "")
        + "</li>" for d in reversed(data.get("discovered", [])))
    notes = "".join(
        f'<li><span class="when">{when(n.get("timestamp"), "since")}</span> '
        f'{"<b>" + task_link(n["for"]) + "</b> " if n.get("for") else ""}{e(n.get("message"))}'
        f' <span class="by">{e(n.get("author") or "")}</span></li>'
        for n in data.get("human_notes", []))
    cb = data.get("circuit_breaker") or {}
    cb_html = (f'<p><span class="badge {"ok" if cb.get("status", "OK") == "OK" else "bad"}">'
               f'{e(cb.get("status", "OK"))}</span>'
               + (f' {e(cb.get("current_trigger"))}' if cb.get("current_trigger") else "")
               + (f' · checked {when(cb.get("last_check"), "since")}' if cb.get("last_check")
                  else "") + "</p>")
    return (panel("Anomalies", anomalies) + panel("Discoveries", discoveries)
            + panel("Human notes", notes)
            + f'<section class="panel"><h2>Circuit breaker</h2>{cb_html}</section>')


def panel(title: str, items: str) -> str:
    body = f"<ul>{items}</ul>" if items else '<p class="empty">none</p>'
    return f'<section class="panel"><h2>{title}</h2>{body}</section>'


def task_link(tid: str) -> str:
    return f'<a href="/task/{e(tid)}">{e(tid)}</a>'


def recent_panel(entries: Iterable[dict[str, Any]]) -> str:
    return ('<section class="panel"><h2>Last transitions <a class="small" href="/log">all</a></h2>'
            + timeline_table(entries) + "</section>")


def timeline_table(entries: Iterable[dict[str, Any]]) -> str:
    rows = []
    for x in entries:
        if "error" in x:
            rows.append(f'<tr class="bad"><td><code>{e(x["state"][:12])}</code></td>'
                        f'<td colspan="5">{e(x["error"])}</td></tr>')
            continue
        move = (f'{label(x["from"])} → ' if x.get("from") else "→ ") + label(x["to"]) \
            if x.get("to") else ""
        rows.append(f'<tr><td><code title="{e(x["state"])}">{e(x["state"][:12])}</code></td>'
                    f'<td class="nowrap">{e(x["time"])}</td><td><b>{e(x["op"])}</b></td>'
                    f'<td>{e(x["actor"])}</td>'
                    f'<td>{task_link(x["task"]) if x.get("task") else ""} {e(move)}</td>'
                    f'<td>{e(x.get("summary"))}</td></tr>')
    if not rows:
        return '<p class="empty">nothing yet</p>'
    return ('<table class="timeline"><thead><tr><th>state</th><th>time</th><th>op</th>'
            '<th>actor</th><th>task</th><th>summary</th></tr></thead><tbody>'
            + "".join(rows) + "</tbody></table>")


def log_body(entries: Sequence[dict[str, Any]], filters: dict[str, str], limit: int) -> str:
    fields = "".join(
        f'<label>{name} <input name="{key}" value="{e(filters.get(key, ""))}"></label>'
        for key, name in (("task", "task"), ("agent", "actor"), ("op", "op")))
    return (f'<section class="panel"><h2>Audit timeline</h2><form class="filters" method="get">'
            f'{fields}<label>at most <input name="n" type="number" min="1" value="{limit}">'
            f'</label><label><input name="all" type="checkbox" value="1"'
            f'{" checked" if filters.get("all") else ""}> supervise and usage rows</label>'
            f'<button>Filter</button></form>'
            + timeline_table(entries) + "</section>")


def pictures_body(graph: str, chart: str) -> str:
    return (f'<section class="panel"><h2>Burndown and throughput</h2>{chart}</section>'
            f'<section class="panel"><h2>Dependencies</h2><div class="scroll">{graph}</div>'
            '</section>')
