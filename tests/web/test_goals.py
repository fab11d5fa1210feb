"""The web board per goal (issue 36), through the real app: the terminal columns show the current
goal's tasks with the previous goal one click away, a stopped supervisor shows as stopped with
its note, the burndown starts at the goal's init on a labelled time axis, actions fit the goal's
state, and a task page names the iteration its diff is and has its "created" row."""
from __future__ import annotations

import re
from pathlib import Path

from tests.web.board import cli
from tests.web.conftest import authed, client
from tests.web.goals import second_goal_board


def test_the_board_shows_the_current_goal_and_the_previous_one_a_click_away(repo: Path) -> None:
    second_goal_board(repo)
    c = authed(client(repo))
    page = c.get("/").text
    assert "Second goal: shout" in page and "previous goal: goal-1 COMPLETED" in page
    merged = re.search(r'data-state="MERGED"><h3>.*?<span class="count">(\d+)</span>', page)
    assert merged is not None and merged.group(1) == "0"
    assert 'data-task="t1"' not in page and 'href="/?goals=all"' in page
    # the header counts this goal's archived tasks, as the columns do (t1 was goal-1's)
    assert "<dt>archived</dt><dd>0</dd>" in page
    every = c.get("/?goals=all").text
    merged = re.search(r'data-state="MERGED"><h3>.*?<span class="count">(\d+)</span>', every)
    assert merged is not None and merged.group(1) == "1" and 'data-task="t1"' in every
    assert "<dt>archived</dt><dd>1</dd>" in every
    assert "this goal&#x27;s tasks only" in every or "this goal's tasks only" in every
    # the stopped supervisor: not "alive", and the note says what resumes the task
    assert '<span class="live stopped"' in page
    assert "t2: held by c1, supervisor stopped, lease ends in" in page
    # the burndown: this goal only, on a labelled time axis
    chart = c.get("/pictures").text
    assert "time (UTC), this goal" in chart and "merged 0" in chart
    # actions: the goal runs, so Pause is offered; once it has ended, only a note
    assert 'action="/action/pause"' in page
    cli(repo, "release", "t2", agent="c1")
    cli(repo, "abandon", "t2", "--reason", "done elsewhere", agent="p1")
    cli(repo, "complete-goal")
    ended = c.get("/").text
    for act in ("pause", "checkpoint", "abort"):
        assert f'action="/action/{act}"' not in ended
    assert 'action="/action/note"' in ended and "starts the next one" in ended


def test_a_task_page_names_its_diffs_iteration_and_has_its_created_row(repo: Path) -> None:
    second_goal_board(repo)
    c = authed(client(repo))
    t1 = c.get("/task/t1").text
    assert "iteration 1, review commit" in t1
    assert re.search(r"<b>add</b></td><td>p1</td>", t1), t1[-3000:]
