"""The pure parts of the pages: the dependency layout, the burndown from the audit trail, the
rejections per iteration, and the private-key filter."""
from __future__ import annotations

from gitliza.web import pictures
from gitliza.web.sources import HIDDEN, redact
from gitliza.web.taskpage import rejections


def row(tid: str, status: str = "UNCLAIMED", deps: tuple[str, ...] = ()) -> dict[str, object]:
    return {"id": tid, "status": status, "depends_on": list(deps), "priority": 3}


def test_layers_follow_the_longest_dependency_chain_and_survive_a_cycle() -> None:
    layers = pictures.depth_layers([row("a"), row("b", deps=("a",)), row("c", deps=("a", "b")),
                                    row("x", deps=("y",)), row("y", deps=("x",))])
    ids = [[t["id"] for t in layer] for layer in layers]
    assert ids[0][:1] == ["a"] and "b" in ids[1] and "c" in ids[2]
    assert sorted(sum(ids, [])) == ["a", "b", "c", "x", "y"]


def test_graph_draws_one_box_per_task_and_one_arrow_per_dependency() -> None:
    svg = pictures.dependency_graph([row("a", "MERGED"), row("b", "CLAIMED", ("a",)),
                                     row("c", "BLOCKED", ("a", "b"))])
    assert svg.count('class="node"') == 3 and svg.count('class="edge"') == 3
    assert pictures.COLOURS["BLOCKED"] in svg and 'href="/task/c"' in svg
    big = pictures.dependency_graph([row(f"t{i}") for i in range(pictures.MAX_NODES + 5)])
    assert big.count('class="node"') == pictures.MAX_NODES and "5 more tasks not drawn" in big


def test_graph_escapes_what_it_draws() -> None:
    svg = pictures.dependency_graph([{**row("a"), "description": "<script>x</script>"}])
    assert "<script>" not in svg and "&lt;script&gt;" in svg


def entry(op: str, time: str, task: str | None = None, to: str | None = None,
          **args: object) -> dict[str, object]:
    return {"op": op, "time": time, "task": task, "to": to, "args": args}


def test_progress_counts_open_and_merged_tasks_from_the_audit_trail() -> None:
    trail = [entry("init", "2026-01-01T00:00:00Z"),
             entry("add", "2026-01-01T00:01:00Z", "a", "UNCLAIMED"),
             entry("add", "2026-01-01T00:02:00Z", "b", "DRAFT"),
             entry("claim", "2026-01-01T00:03:00Z", "a", "CLAIMED"),
             entry("merge", "2026-01-01T00:04:00Z", "a", "MERGED"),
             entry("rescope", "2026-01-01T00:05:00Z", "b", "SUPERSEDED", into=["b1", "b2"]),
             entry("note", "2026-01-01T00:06:00Z")]
    points = pictures.progress(trail)
    assert [(o, m) for _, o, m in points] == [(0, 0), (1, 0), (2, 0), (2, 0), (1, 1), (2, 1),
                                             (2, 1)]
    again = pictures.progress([*trail, entry("init", "2026-01-02T00:00:00Z")])
    assert again[-1][1:] == (0, 0)  # a new goal starts afresh
    svg = pictures.burndown(points)
    assert "open 2" in svg and "merged 1" in svg
    assert "not enough history" in pictures.burndown(points[:1])


def test_rejections_are_numbered_by_the_submission_they_answer() -> None:
    history = [{"event": "claimed"}, {"event": "ready_for_review"},
               {"event": "rejected", "time": "t1", "agent": "r1", "reason": "no tests"},
               {"event": "ready_for_review"}, {"event": "approved"},
               {"event": "ready_for_review"},
               {"event": "rejected", "time": "t3", "agent": "r2", "reason": "breaks main"}]
    assert rejections(history) == [(1, "t1", "r1", "no tests"), (3, "t3", "r2", "breaks main")]


def test_redact_hides_whole_and_cut_off_private_keys_and_nothing_else() -> None:
    pem = "-----BEGIN RSA PRIVATE KEY-----\nMIIB\n-----END RSA PRIVATE KEY-----"
    assert redact(f"a\n{pem}\nb") == f"a\n{HIDDEN}\nb"
    assert redact("x\n-----BEGIN OPENSSH PRIVATE KEY-----\nb3Bl") == f"x\n{HIDDEN}"
    public = "ssh-ed25519 AAAAC3Nza... and -----BEGIN PUBLIC KEY-----"
    assert redact(public) == public
