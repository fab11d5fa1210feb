"""The pictures, drawn on the server as inline SVG (no script, no build step): the tasks'
dependency graph coloured by state, and the burndown and throughput of the goal from the audit
trail. Pure functions of data: the routes hand them the board's task rows and log entries."""
from __future__ import annotations

from html import escape
from typing import Any, Iterable, Sequence

from gitliza.core import clock

TERMINAL = ("MERGED", "SUPERSEDED", "ABANDONED")
COLOURS = {
    "DRAFT": "#9aa5b1", "UNCLAIMED": "#cbd2d9", "CLAIMED": "#4098d7",
    "READY_FOR_REVIEW": "#9f7aea", "REJECTED": "#f0b429", "APPROVED": "#3ebd93",
    "BLOCKED": "#e12d39", "INTEGRATION_FAILED": "#ef4e4e", "MERGED": "#27ab83",
    "SUPERSEDED": "#7b8794", "ABANDONED": "#52606d",
}
NODE_W, NODE_H, GAP_X, GAP_Y = 150, 30, 60, 14
MAX_NODES = 400  # beyond this a graph is unreadable; the page says what it left out


def depth_layers(tasks: Sequence[dict[str, Any]]) -> list[list[dict[str, Any]]]:
    """Tasks in columns by the length of their longest dependency chain (a cycle, which the
    board refuses anyway, is cut where it closes)."""
    by_id = {t["id"]: t for t in tasks}
    depth: dict[str, int] = {}

    def walk(tid: str, trail: frozenset[str]) -> int:
        if tid in depth:
            return depth[tid]
        deps = [d for d in by_id[tid].get("depends_on", ()) if d in by_id and d not in trail]
        d = 1 + max((walk(x, trail | {tid}) for x in deps), default=-1)
        depth[tid] = d
        return d
    for tid in by_id:
        walk(tid, frozenset())
    layers: list[list[dict[str, Any]]] = [[] for _ in range(max(depth.values(), default=-1) + 1)]
    for t in tasks:
        layers[depth[t["id"]]].append(t)
    return layers


def dependency_graph(tasks: Sequence[dict[str, Any]], link: str = "/task/") -> str:
    """An SVG of the tasks (boxes coloured by state, linked to their pages) and arrows from each
    dependency to what waits on it."""
    shown = list(tasks)[:MAX_NODES]
    if not shown:
        return '<p class="empty">no tasks yet</p>'
    layers = depth_layers(shown)
    pos: dict[str, tuple[int, int]] = {}
    for col, layer in enumerate(layers):
        for row, t in enumerate(sorted(layer, key=lambda t: (t.get("priority", 3), t["id"]))):
            pos[t["id"]] = (10 + col * (NODE_W + GAP_X), 10 + row * (NODE_H + GAP_Y))
    width = 20 + len(layers) * (NODE_W + GAP_X) - GAP_X
    height = 20 + max(len(layer) for layer in layers) * (NODE_H + GAP_Y) - GAP_Y
    edges, nodes = [], []
    for t in shown:
        x, y = pos[t["id"]]
        for d in t.get("depends_on", ()):
            if d in pos:
                dx, dy = pos[d]
                x1, y1, x2, y2 = dx + NODE_W, dy + NODE_H // 2, x, y + NODE_H // 2
                mid = (x1 + x2) // 2
                edges.append(f'<path d="M{x1},{y1} C{mid},{y1} {mid},{y2} {x2 - 6},{y2}" '
                             'class="edge" marker-end="url(#arrow)"/>')
        colour = COLOURS.get(t["status"], "#cbd2d9")
        label = t["id"] if len(t["id"]) <= 18 else t["id"][:17] + "…"
        nodes.append(
            f'<a href="{escape(link + t["id"])}"><g class="node" data-task="{escape(t["id"])}" '
            f'data-status="{escape(t["status"])}"><title>{escape(t["id"])}: {escape(t["status"])}'
            f' - {escape(t.get("description") or "")}</title>'
            f'<rect x="{x}" y="{y}" width="{NODE_W}" height="{NODE_H}" rx="6" fill="{colour}"/>'
            f'<text x="{x + NODE_W // 2}" y="{y + NODE_H // 2 + 4}">{escape(label)}</text></g></a>')
    more = len(tasks) - len(shown)
    note = f'<p class="note">{more} more tasks not drawn</p>' if more > 0 else ""
    return (f'<svg class="graph" xmlns="http://www.w3.org/2000/svg" width="{width}" '
            f'height="{height}" viewBox="0 0 {width} {height}" role="img" '
            'aria-label="dependency graph"><defs><marker id="arrow" viewBox="0 0 10 10" refX="8" '
            'refY="5" markerWidth="7" markerHeight="7" orient="auto-start-reverse">'
            '<path d="M0,0 L10,5 L0,10 z" fill="#7b8794"/></marker></defs>'
            + "".join(edges) + "".join(nodes) + "</svg>" + note + legend())


def legend() -> str:
    return '<div class="legend">' + "".join(
        f'<span><svg class="swatch" width="10" height="10" aria-hidden="true"><rect '
        f'width="10" height="10" rx="2" fill="{c}"/></svg>{s.replace("_", " ").lower()}</span>'
        for s, c in COLOURS.items()) + "</div>"


def progress(entries: Iterable[dict[str, Any]]) -> list[tuple[int, int, int]]:
    """(epoch, open tasks, merged so far) after each transition of the current goal, from the
    audit trail oldest first (`log_entries` reversed): a task counts from the transition that
    first names it (its `add`, or a rescope that created it) until one ends it."""
    status: dict[str, str] = {}
    merged = 0
    points: list[tuple[int, int, int]] = []
    for e in entries:
        if "error" in e:
            continue
        if e["op"] == "init":  # a new goal starts the count, and the chart, afresh:
            status.clear()     # goals overlaid on one axis read as one
            merged = 0
            points.clear()
        task, to = e.get("task"), e.get("to")
        if task and to:
            if to == "MERGED" and status.get(task) != "MERGED":
                merged += 1
            status[task] = to
        for successor in (e.get("args") or {}).get("into", ()) if e["op"] == "rescope" else ():
            status.setdefault(str(successor), "DRAFT")
        points.append((clock.to_epoch(e["time"]), sum(s not in TERMINAL for s in status.values()),
                       merged))
    return points


def _hhmm(t: int, t0: int, t1: int) -> str:
    """A time-axis label: HH:MM, with the date where the span crosses days."""
    ts = clock.from_epoch(t)
    same_day = clock.from_epoch(t0)[:10] == clock.from_epoch(t1)[:10]
    return ts[11:16] if same_day else f"{ts[5:10]} {ts[11:16]}"


def burndown(points: Sequence[tuple[int, int, int]], width: int = 900, height: int = 220) -> str:
    """Open tasks (the burndown) and merged tasks (the throughput, cumulative) over time."""
    if len(points) < 2:
        return '<p class="empty">not enough history yet</p>'
    t0, t1 = points[0][0], max(points[-1][0], points[0][0] + 1)
    top = max(max(p[1] for p in points), max(p[2] for p in points), 1)
    pad, plot_w, plot_h = 34, width - 44, height - 52

    def xy(t: int, v: int) -> str:
        return f"{pad + (t - t0) * plot_w / (t1 - t0):.1f},{10 + plot_h - v * plot_h / top:.1f}"
    open_line = " ".join(xy(t, o) for t, o, _ in points)
    done_line = " ".join(xy(t, m) for t, _, m in points)
    secs = t1 - t0
    span = f"{secs // 60}m" if secs < 3600 else f"{secs / 3600:.1f}h" if secs < 172800 else \
        f"{secs / 86400:.1f}d"
    return (f'<svg class="chart" xmlns="http://www.w3.org/2000/svg" width="{width}" '
            f'height="{height}" viewBox="0 0 {width} {height}" role="img" '
            'aria-label="burndown and throughput">'
            f'<line x1="{pad}" y1="{10 + plot_h}" x2="{pad + plot_w}" y2="{10 + plot_h}" '
            'class="axis"/>'
            f'<line x1="{pad}" y1="10" x2="{pad}" y2="{10 + plot_h}" class="axis"/>'
            f'<text x="{pad - 6}" y="16" class="tick" text-anchor="end">{top}</text>'
            f'<text x="{pad - 6}" y="{14 + plot_h}" class="tick" text-anchor="end">0</text>'
            + "".join(
                f'<line x1="{x:.1f}" y1="{10 + plot_h}" x2="{x:.1f}" y2="{14 + plot_h}" '
                f'class="axis"/><text x="{x:.1f}" y="{height - 26}" class="tick" '
                f'text-anchor="{anchor}">{escape(_hhmm(t, t0, t1))}</text>'
                for x, t, anchor in ((pad, t0, "start"), (pad + plot_w / 2, (t0 + t1) // 2,
                                                         "middle"),
                                     (pad + plot_w, t1, "end")))
            + f'<text x="{pad + plot_w / 2:.1f}" y="{height - 6}" class="tick" '
            f'text-anchor="middle">time (UTC), this goal: {escape(span)}</text>'
            f'<polyline points="{open_line}" class="open"/>'
            f'<polyline points="{done_line}" class="done"/>'
            f'<text x="{pad + 8}" y="24" class="key open">open {points[-1][1]}</text>'
            f'<text x="{pad + 8}" y="40" class="key done">merged {points[-1][2]}</text></svg>')
