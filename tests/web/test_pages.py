"""Every page of the web board on a real board (a review diff made by the CLI in a real task
worktree): what each shows, that it is the same view as the CLI's --json, and that a private key
in a diff, a log or a spec never reaches a page."""
from __future__ import annotations

import json
import re
from pathlib import Path

from tests.web.board import cli
from tests.web.conftest import authed, client

STATES = ["DRAFT", "UNCLAIMED", "CLAIMED", "READY_FOR_REVIEW", "REJECTED", "APPROVED", "BLOCKED",
          "INTEGRATION_FAILED", "MERGED", "SUPERSEDED", "ABANDONED"]


def column_of(page: str, task: str) -> str:
    """The state of the column whose section holds the card of `task`."""
    for m in re.finditer(r'<section class="col c-(\w+)" data-state="\w+">(.*?)</section>', page,
                         re.S):
        if f'data-task="{task}"' in m.group(2):
            return m.group(1)
    raise AssertionError(f"no card for {task}")


def test_board_page_has_a_column_per_state_and_each_card_in_its_own(review_board: Path) -> None:
    with client(review_board) as c:
        page = authed(c).get("/").text
    assert re.findall(r'data-state="(\w+)"', page) == STATES
    assert {t: column_of(page, t) for t in ("t1", "t2", "t3", "t4", "d1")} == {
        "t1": "READY_FOR_REVIEW", "t2": "UNCLAIMED", "t3": "BLOCKED", "t4": "CLAIMED",
        "d1": "DRAFT"}
    t1 = page.split('data-task="t1"')[1].split("</article>")[0]
    assert "P1" in t1 and "#1" in t1 and "c1" in t1
    t4 = page.split('data-task="t4"')[1].split("</article>")[0]
    assert "data-expires" in t4 and "c2" in t4  # the lease countdown
    t2 = page.split('data-task="t2"')[1].split("</article>")[0]
    assert 'href="/task/t1"' in t2  # its dependency
    assert "which languages?" in page.split('data-task="t3"')[1].split("</article>")[0]
    assert "Ship the hello CLI" in page
    for agent in ("p1", "c1", "c2", "r1"):
        assert f'data-agent="{agent}"' in page
    assert "supervisor gen" in page and ("stale" in page or "alive" in page)
    assert 'id="verify"' in page
    assert "BLOCKED: t3" in page  # the watcher's alarm for the blocked task
    assert "Circuit breaker" in page and "Human notes" in page and "Anomalies" in page


def test_the_json_is_the_same_view_as_the_cli(review_board: Path) -> None:
    with client(review_board) as c:
        authed(c)
        board = c.get("/api/board").json()
        task = c.get("/api/task/t1").json()
    status = json.loads(cli(review_board, "status", "--json").stdout)
    show = json.loads(cli(review_board, "show", "t1", "--json").stdout)
    for key in ("state", "goal", "tasks", "agents", "control", "archived"):
        assert board[key] == status[key], key
    assert task == show


def test_task_page_shows_spec_diff_history_and_logs(review_board: Path) -> None:
    with client(review_board) as c:
        page = authed(c).get("/task/t1").text
    assert "<h1>Greeting</h1>" in page and "<strong>hello</strong>" in page
    assert "<script>alert" not in page  # the spec's raw HTML is text, not markup
    assert "it greets" in page  # done_when
    assert '<details class="file"' in page and "<code>app.py</code>" in page
    assert 'class="hl"' in page and "greet" in page  # highlighted
    assert "submit" in page and "claim" in page  # the audit trail of t1
    assert "wrote app.py" in page and 'data-logstream="/task/t1/log/0/stream"' in page
    t3 = c.get("/task/t3").text
    assert "Which languages first?" in t3 and "Who translates?" in t3
    assert 'action="/action/unblock"' in t3


def test_no_page_ever_shows_a_private_key(review_board: Path) -> None:
    """The review diff and the agent log both hold an OpenSSH private key."""
    with client(review_board) as c:
        authed(c)
        for path in ("/", "/task/t1", "/fragment/task/t1", "/log", "/pictures"):
            text = c.get(path).text
            assert "PRIVATE KEY" not in text and "b3BlbnNzaC1rZXktdjEAAAAA" not in text, path
        assert "private key hidden" in c.get("/task/t1").text
        with c.stream("GET", "/task/t1/log/0/stream?offset=0") as r:
            got = ""
            for line in r.iter_lines():
                got += line + "\n"
                if "hidden" in line:
                    break
        assert "wrote app.py" in got and "PRIVATE KEY" not in got


def test_an_unknown_task_is_the_clis_one_line(review_board: Path) -> None:
    with client(review_board) as c:
        r = authed(c).get("/task/nope")
    line = cli(review_board, "show", "nope", check=False).stderr.strip()
    assert r.status_code == 422 and r.text.strip() == line


def test_timeline_filters(review_board: Path) -> None:
    with client(review_board) as c:
        authed(c)
        ops = lambda page: re.findall(r"<td><b>([\w-]+)</b></td>", page)  # noqa: E731
        everything = ops(c.get("/log").text)
        assert "init" in everything and "submit" in everything
        by_c2 = c.get("/log?agent=c2").text
        assert ops(by_c2) == ["claim", "block", "claim"]
        t3 = c.get("/log?task=t3").text
        assert set(ops(t3)) == {"add", "claim", "block"}
        assert ops(c.get("/log?op=register").text) == ["register"] * 4
        assert len(ops(c.get("/log?n=3").text)) == 3
        assert c.get("/log?n=x").status_code == 422
        # The page follows the board with its filters (its live part keeps the query).
        assert 'data-fragment="/fragment/log?agent=c2"' in by_c2
        assert ops(c.get("/fragment/log?agent=c2").text) == ["claim", "block", "claim"]


def test_pictures_draw_every_task_coloured_by_state_and_the_burndown(review_board: Path) -> None:
    with client(review_board) as c:
        page = authed(c).get("/pictures").text
    nodes = dict(re.findall(r'data-task="(\w+)" data-status="(\w+)"', page))
    assert nodes == {"t1": "READY_FOR_REVIEW", "t2": "UNCLAIMED", "t3": "BLOCKED",
                     "t4": "CLAIMED", "d1": "DRAFT"}
    assert page.count('class="edge"') == 1  # t1 -> t2
    assert 'aria-label="burndown and throughput"' in page and "open 5" in page


def test_a_repository_without_a_board_says_how_to_make_one_and_then_follows(repo: Path) -> None:
    with client(repo) as c:
        authed(c)
        assert "git liza init" in c.get("/").text
        assert "no tasks yet" in c.get("/pictures").text
        assert c.get("/log").status_code == 200
        r = c.get("/task/t1")
        assert r.status_code == 422 and r.text.startswith("gitliza: error: ")
        cli(repo, "init", "a goal")
        assert "a goal" in c.get("/fragment/board").text


def test_a_card_shows_the_review_quorums_votes_and_every_reviewer() -> None:
    from gitliza.web.pages import card
    html = card({"id": "t1", "status": "READY_FOR_REVIEW", "priority": 2, "assigned_to": "c1",
                 "reviewing_by": "r1", "co_reviewers": ["r<2>"], "approvals": ["r0"],
                 "description": "d"})
    assert 'title="approved by r0"' in html and "&#10003;1" in html
    assert "c1 · review r1, r&lt;2&gt;" in html
