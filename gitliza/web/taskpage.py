"""One task's page: what it is (description, done_when, its spec rendered from the integration
branch), what happened to it (the audit trail's entries for it, the rejection reasons per
iteration), the review diff file by file, highlighted, and the agent logs of its runs (the tail,
then live). Data from `show --json`'s view (gitliza/services/views/ show_data)."""
from __future__ import annotations

import posixpath
from pathlib import Path
from typing import Any, Sequence

from gitliza.web import images
from gitliza.web.pages import e, form, label, task_link, text_field, timeline_table, when
from gitliza.web.sources import FileDiff

_MD: Any = None


def markdown(text: str, base: str = "") -> str:
    """CommonMark with raw HTML off (a spec cannot inject markup) and markdown-it's link check
    (no javascript: links); an image only when it is a file of the repository (relative to
    `base`, the Markdown file's directory; web/images.py), else text."""
    global _MD
    if _MD is None:
        from markdown_it import MarkdownIt
        _MD = MarkdownIt("commonmark", {"html": False}).enable("table")
        _MD.add_render_rule("image", images.image_rule)
    out: str = _MD.render(text, {"base": base})
    return out


def highlight(patch: str) -> str:
    from pygments import highlight as hl
    from pygments.formatters import HtmlFormatter
    from pygments.lexers import DiffLexer
    out: str = hl(patch, DiffLexer(), HtmlFormatter(cssclass="hl", nowrap=False))
    return out


def pygments_css() -> str:
    from pygments.formatters import HtmlFormatter
    css: str = HtmlFormatter(style="default").get_style_defs(".hl")
    return css


def rejections(history: Sequence[dict[str, Any]]) -> list[tuple[int, str, str, str]]:
    """(iteration, time, reviewer, reason) of every rejection: the n-th submission for review is
    iteration n, and a rejection answers the submission before it."""
    out, submitted = [], 0
    for h in history:
        if h.get("event") == "ready_for_review":
            submitted += 1
        elif h.get("event") == "rejected":
            out.append((submitted, h.get("time", ""), h.get("agent") or "",
                        h.get("reason") or h.get("note") or ""))
    return out


def task_body(t: dict[str, Any], *, spec: str | None, audit: Sequence[dict[str, Any]],
              diff: tuple[list[FileDiff], str | None], logs: Sequence[tuple[Path, str, int]],
              read_only: bool) -> str:
    lease = t.get("review_lease_expires") if t["status"] == "READY_FOR_REVIEW" else \
        t.get("lease_expires")
    facts = [("priority", f'P{t.get("priority", 3)}'), ("assigned to", t.get("assigned_to")),
             ("reviewing", t.get("reviewing_by")), ("iteration", t.get("iteration")),
             ("review cycles", t.get("review_cycles_total") or None),
             ("base", (t.get("base_commit") or "")[:12] or None),
             ("review commit", (t.get("review_commit") or "")[:12] or None),
             ("merge commit", (t.get("merge_commit") or "")[:12] or None),
             ("approved by", t.get("approved_by")),
             ("approvals", f'{len(t.get("approvals") or ())}/{t["review_quorum"]}: '
                           f'{", ".join(t.get("approvals") or ()) or "none yet"}'
              if t.get("review_quorum", 1) > 1 or t.get("approvals") else None),
             ("root cause", t.get("root_cause")), ("scope", t.get("scope")),
             ("lock scope", ", ".join(t.get("lock_scope", ())) or None),
             ("spec", t.get("spec_ref")), ("failed by", ", ".join(t.get("failed_by", ())) or None)]
    dl = "".join(f"<div><dt>{k}</dt><dd>{e(v)}</dd></div>" for k, v in facts if v)
    if lease:
        dl += f"<div><dt>lease</dt><dd>{when(lease)}</dd></div>"
    deps = ", ".join(task_link(d) for d in t.get("depends_on", ()))
    if deps:
        dl += f"<div><dt>after</dt><dd>{deps}</dd></div>"
    parts = [f'<section class="head task"><div class="goal"><div class="kicker">'
             f'<a href="/">board</a> / task</div><h1>{e(t["id"])} <span class="state '
             f's-{e(t["status"])}">{label(t["status"])}</span></h1>'
             f'<p class="lead">{e(t.get("description"))}</p></div><dl class="facts">{dl}</dl>'
             "</section>"]
    from gitliza.web.evidence import criteria_panel
    listed = criteria_panel(t)  # several criteria: a list, each with its votes' evidence
    if listed:
        parts.append(listed)
    elif t.get("done_when"):
        parts.append(f'<section class="panel"><h2>Done when</h2><p>{e(t["done_when"])}</p>'
                     "</section>")
    if t.get("blocked_reason") or t.get("blocked_questions"):
        parts.append(blocked_panel(t, read_only))
    if t.get("integration_failure"):
        parts.append(f'<section class="panel bad"><h2>Integration failure</h2>'
                     f'<pre>{e(t["integration_failure"])}</pre></section>')
    rej = rejections(t.get("history", ()))
    if rej:
        parts.append('<section class="panel"><h2>Rejections</h2><table class="timeline">'
                     '<thead><tr><th>iteration</th><th>time</th><th>reviewer</th><th>reason</th>'
                     '</tr></thead><tbody>' + "".join(
                         f"<tr><td>#{n}</td><td class=nowrap>{e(tm)}</td><td>{e(who)}</td>"
                         f"<td class=pre>{e(why)}</td></tr>" for n, tm, who, why in rej)
                     + "</tbody></table></section>")
    parts.append(diff_panel(*diff, caption=diff_caption(t, rej)))
    if not read_only:
        parts.append(task_actions(t))
    if t.get("spec_ref"):
        body = markdown(spec, posixpath.dirname(t["spec_ref"].split("#", 1)[0])) \
            if spec is not None else \
            '<p class="empty">not on the integration branch</p>'
        parts.append(f'<section class="panel spec"><h2>Spec <code>{e(t["spec_ref"])}</code></h2>'
                     f'<div class="md">{body}</div></section>')
    notes = "".join(f'<li>{when(n.get("timestamp"), "since")} {e(n.get("message"))}</li>'
                    for n in t.get("human_notes", ()))
    if notes:
        parts.append(f'<section class="panel"><h2>Human notes</h2><ul>{notes}</ul></section>')
    parts.append(runs_panel(t.get("usage") or ()))
    parts.append(logs_panel(t["id"], logs))
    parts.append(f'<section class="panel"><h2>History</h2>'
                 f'{timeline_table(with_created(t, audit))}</section>')
    return "".join(parts)


def diff_caption(t: dict[str, Any], rej: Sequence[tuple[int, str, str, str]]) -> str:
    """Which submission the diff shows: the review commit is the last one submitted, iteration n
    (the n-th ready_for_review); once it was rejected and the task taken back, the page says the
    work in progress is the next iteration, not this diff."""
    n = sum(1 for h in t.get("history", ()) if h.get("event") == "ready_for_review")
    if not n or not t.get("review_commit"):
        return ""
    text = f"iteration {n}, review commit {t['review_commit'][:12]}"
    if rej and rej[-1][0] == n and t["status"] != "READY_FOR_REVIEW":
        text += (f", rejected by {rej[-1][2]}" if rej[-1][2] else ", rejected")
        if t["status"] in ("CLAIMED", "REJECTED"):
            text += f"; iteration {n + 1} is in the works"
    return text


def with_created(t: dict[str, Any], audit: Sequence[dict[str, Any]]) -> list[dict[str, Any]]:
    """The audit trail of the task, with its creation: an `add --from FILE` (or a planner's
    batch) names no single task, so the trail filtered by task misses it; the task's own
    history has it, as `git liza show` prints it."""
    rows = list(audit)
    first = (t.get("history") or [{}])[0]
    if first.get("event") == "created" and not any(
            x.get("op") in ("add", "rescope") and x.get("task") == t["id"] for x in rows):
        rows.append({"state": "", "time": first.get("time", t.get("created", "")), "op": "add",
                     "actor": first.get("agent") or "", "task": t["id"], "from": None,
                     "to": None, "summary": f"created {t['id']}"
                     + (f" ({first['note']})" if first.get("note") else "")})
    return rows


def blocked_panel(t: dict[str, Any], read_only: bool) -> str:
    qs = t.get("blocked_questions", ())
    items = "".join(f"<li>{e(q)}</li>" for q in qs)
    out = (f'<section class="panel warnbox"><h2>Blocked</h2><p>{e(t.get("blocked_reason"))}</p>'
           + (f"<ol>{items}</ol>" if items else ""))
    if not read_only and t["status"] == "BLOCKED":
        fields = f'<input type="hidden" name="task" value="{e(t["id"])}">' + \
            '<textarea name="answer" rows="3" placeholder="your answer (recorded as a note ' \
            'for the task)"></textarea>'
        out += form("unblock", fields, "Unblock")
    return out + "</section>"


def task_actions(t: dict[str, Any]) -> str:
    hidden = f'<input type="hidden" name="task" value="{e(t["id"])}">'
    acts = [form("note", hidden.replace('name="task"', 'name="for_task"')
                 + text_field("message", f"a note for {t['id']}", True), "Add note")]
    if t["status"] not in ("MERGED", "SUPERSEDED", "ABANDONED"):
        acts.append(form("rescope", hidden + text_field("into", "successor ids, comma separated",
                                                        True)
                         + text_field("reason", "why", True), "Rescope"))
        acts.append(form("abandon", hidden + text_field("reason", "why abandon", True), "Abandon",
                         danger=True, confirm=f"Abandon {t['id']}?"))
    return f'<section class="actions">{"".join(acts)}</section>'


def diff_panel(files: list[FileDiff], why: str | None, caption: str = "") -> str:
    sub = f'<p class="note iteration">{e(caption)}</p>' if caption else ""
    if why is not None:
        return f'<section class="panel"><h2>Review diff</h2>{sub}<p class="empty">{e(why)}' \
               '</p></section>'
    adds, dels = sum(f.additions for f in files), sum(f.deletions for f in files)
    index = "".join(f'<li><a href="#f{i}">{e(f.path)}</a> <span class="add">+{f.additions}'
                    f'</span> <span class="del">-{f.deletions}</span></li>'
                    for i, f in enumerate(files))
    blocks = []
    for i, f in enumerate(files):
        body = '<p class="empty">binary file</p>' if f.binary else highlight(f.patch)
        cut = '<p class="note">patch cut: too long to show</p>' if f.cut else ""
        blocks.append(f'<details class="file" id="f{i}" open><summary><code>{e(f.path)}</code> '
                      f'<span class="st">{e(f.status)}</span> <span class="add">+{f.additions}'
                      f'</span> <span class="del">-{f.deletions}</span></summary>{body}{cut}'
                      "</details>")
    return (f'<section class="panel diff"><h2>Review diff <span class="small">{len(files)} files '
            f'<span class="add">+{adds}</span> <span class="del">-{dels}</span></span></h2>'
            f'{sub}<ul class="files">{index}</ul>{"".join(blocks)}</section>')


def runs_panel(runs: Sequence[dict[str, Any]]) -> str:
    """The task's agent runs (their usage records) and how each ended."""
    if not runs:
        return ""
    rows = "".join(
        f'<tr><td class=nowrap>{e(u.get("timestamp"))}</td><td><code>{e(u.get("run"))}</code>'
        f'</td><td>{e(u.get("cli"))}{"/" + e(u["model"]) if u.get("model") else ""}</td>'
        f'<td>{u.get("input_tokens", 0) + u.get("output_tokens", 0):,}</td>'
        f'<td>{u.get("duration", 0)}s</td><td class="end-{e(u.get("end") or "unknown")}">'
        f'{e((u.get("end") or "").replace("_", " "))}</td></tr>' for u in runs)
    return ('<section class="panel"><h2>Runs</h2><table class="timeline"><thead><tr><th>ended'
            '</th><th>run</th><th>cli</th><th>tokens</th><th>time</th><th>how</th></tr></thead>'
            f'<tbody>{rows}</tbody></table></section>')


def logs_panel(task: str, logs: Sequence[tuple[Path, str, int]]) -> str:
    if not logs:
        return '<section class="panel"><h2>Agent logs</h2><p class="empty">no run of this task ' \
               'logged on this machine</p></section>'
    items = "".join(
        f'<details class="log"{" open" if i == len(logs) - 1 else ""}><summary>'
        f'<code>{e(p.name)}</code></summary><pre data-logstream="/task/{e(task)}/log/{i}/stream" '
        f'data-offset="{size}">{e(tail)}</pre></details>'
        for i, (p, tail, size) in enumerate(logs))
    return f'<section class="panel"><h2>Agent logs</h2>{items}</section>'
