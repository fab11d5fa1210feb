"""A task's acceptance criteria as a list, and each approval's evidence per criterion, on its web
page: a `path[:line]` evidence links into the commit the vote approved
(`/task/ID/file/COMMIT/PATH#L12`, that file at that commit, lines numbered), a test or a
command (with its output's digest) is shown as given. The file view serves only commits the
task's votes or review name (no other object of the repository through it)."""
from __future__ import annotations

from typing import Any
from urllib.parse import quote

import pygit2

from gitliza.git import treepath
from gitliza.web.pages import e
from gitliza.web.sources import redact

MAX_BYTES = 512 * 1024  # a bigger file is not shown as text


def _split(ref: str) -> tuple[str, int | None]:
    path, sep, line = ref.rpartition(":")
    return (path, int(line)) if sep and line.isdigit() else (ref, None)


def evidence_item(task: str, commit: str, ev: dict[str, Any]) -> str:
    kind, ref = ev.get("kind", ""), str(ev.get("ref", ""))
    if kind == "path":
        path, line = _split(ref)
        href = f"/task/{quote(task)}/file/{quote(commit)}/{quote(path)}" + \
            (f"#L{line}" if line else "")
        return f'<a class="ev" href="{e(href)}"><code>{e(ref)}</code></a>'
    digest = f' <span class="small">{e(ev["digest"][:19])}…</span>' if ev.get("digest") else ""
    return f'{e(kind)} <code>{e(ref)}</code>{digest}'


def criteria_panel(t: dict[str, Any]) -> str:
    """The criteria as a numbered list; under each, every vote's evidence for it (who, at which
    commit, with what). Empty for a task without criteria (its "Done when" says it)."""
    criteria = list(t.get("criteria") or ())
    if not criteria:
        return ""
    votes = [v for v in t.get("review_votes") or () if v.get("evidence")]
    items = []
    for n, text in enumerate(criteria, 1):
        rows = []
        for v in votes:
            got = [evidence_item(t["id"], v["commit"], ev) for ev in v["evidence"]
                   if ev.get("criterion") == n]
            if got:
                who = ", ".join(x for x in (v.get("cli"), v.get("model")) if x)
                rows.append(f'<li class="vote"><b>{e(v["agent"])}</b>'
                            f'{f" ({e(who)})" if who else ""} at <code>{e(v["commit"][:12])}'
                            f'</code>: {"; ".join(got)}</li>')
        ev_list = f'<ul class="evidence">{"".join(rows)}</ul>' if rows else \
            '<p class="empty small">no evidence yet</p>'
        items.append(f'<li class="criterion"><span class="text">{e(text)}</span>{ev_list}</li>')
    return (f'<section class="panel criteria"><h2>Acceptance criteria</h2>'
            f'<ol class="criteria">{"".join(items)}</ol></section>')


def served_commits(t: dict[str, Any]) -> set[str]:
    """The commits the file view may show for this task."""
    out = {v.get("commit") for v in t.get("review_votes") or ()} | {t.get("review_commit")}
    return {c for c in out if c}


def file_body(repo: pygit2.Repository, t: dict[str, Any], commit: str, path: str) -> str | None:
    """The page of `path` at `commit` (one of the task's served commits), lines numbered and
    anchored (`#L12`); None when the task does not name that commit or it has no such text file."""
    if commit not in served_commits(t):
        return None
    try:
        tree = repo[commit].peel(pygit2.Commit).tree
        blob = repo[treepath.entry(tree, path).id]
    except (KeyError, ValueError, pygit2.GitError):
        return None
    if not isinstance(blob, pygit2.Blob) or blob.is_binary or blob.size > MAX_BYTES:
        return None
    lines = redact(blob.data.decode("utf-8", "replace")).split("\n")
    rows = "".join(f'<tr id="L{n}"><td class="ln"><a href="#L{n}">{n}</a></td>'
                   f'<td class="code">{e(line)}</td></tr>' for n, line in enumerate(lines, 1))
    return (f'<section class="head"><div class="kicker"><a href="/">board</a> / '
            f'<a href="/task/{quote(t["id"])}">{e(t["id"])}</a> / file at '
            f'<code>{e(commit[:12])}</code></div><h1><code>{e(path)}</code></h1></section>'
            f'<section class="panel"><table class="blob">{rows}</table></section>')
