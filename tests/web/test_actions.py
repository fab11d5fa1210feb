"""The human's actions through the web board: each one a real transition by the human actor, and
a refused one answers with the CLI's own line while refs/liza/state stays where it was."""
from __future__ import annotations

import re
from pathlib import Path
from typing import Any

import pytest

from gitliza.services.api import Liza
from tests.conftest import git
from tests.web.board import cli
from tests.web.conftest import authed, client, csrf, state


def act(c: Any, name: str, **form: str) -> Any:
    return c.post(f"/action/{name}", data=form, headers={"X-CSRF-Token": csrf(c)})


def last_actor(repo: Path) -> str:
    return git(repo, "log", "-1", "--format=%an", "refs/liza/state")


@pytest.mark.parametrize("name,form,check", [
    ("pause", {"reason": "lunch"},
     lambda b: b.control.paused and b.control.pause_reason == "lunch"),
    ("abort", {"reason": "wrong goal"}, lambda b: b.control.aborted),
    ("checkpoint", {"reason": "look"}, lambda b: b.sprint.status.value == "CHECKPOINT"),
    ("note", {"message": "mind the tests", "for_task": "t2"},
     lambda b: any(n.message == "mind the tests" and n.for_task == "t2" and n.author == "human"
                   for n in b.values("human_notes"))),
    ("rescope", {"task": "t2", "into": "t2a, t2b", "reason": "too big"},
     lambda b: b.task("t2a") is not None and b.get("archive", "t2").status.value == "SUPERSEDED"),
    ("abandon", {"task": "t3", "reason": "not needed"},
     lambda b: b.get("archive", "t3").status.value == "ABANDONED"),
])
def test_each_action_is_a_real_transition_by_the_human(small: Path, name: str,
                                                        form: dict[str, str], check: Any) -> None:
    with client(small) as c:
        authed(c)
        before = state(small)
        r = act(c, name, **form)
        assert r.status_code == 200, r.text
        data = r.json()
        assert data["op"] == name and data["actor"] == "human" and data["parent"] == before
        assert state(small) == data["state"]
        assert check(Liza.open(small).board())
        assert last_actor(small) == "human"


def test_resume_lifts_a_pause(small: Path) -> None:
    with client(small) as c:
        authed(c)
        assert act(c, "pause").status_code == 200
        assert 'action="/action/resume"' in c.get("/").text
        assert act(c, "resume", decision="go on").status_code == 200
        assert not Liza.open(small).board().control.paused


def test_unblock_records_the_answer_and_unblocks_in_one_commit(small: Path) -> None:
    before = git(small, "rev-parse", "refs/liza/state").strip()
    with client(small) as c:
        authed(c)
        r = act(c, "unblock", task="t1", answer="the short way")
        assert r.status_code == 200 and r.json()["to"] == "UNCLAIMED"
    board = Liza.open(small).board()
    assert board.task("t1").status.value == "UNCLAIMED"
    notes = [n for n in board.values("human_notes") if n.for_task == "t1"]
    assert [n.message for n in notes] == ["answer to the blocked questions: the short way"]
    assert git(small, "rev-parse", "refs/liza/state^").strip() == before  # one transition


def test_a_refused_action_says_the_clis_line_and_moves_nothing(small: Path) -> None:
    with client(small) as c:
        authed(c)
        before = state(small)
        # t2 is not blocked: the unblock is refused, and its answer is not recorded either.
        r = act(c, "unblock", task="t2", answer="irrelevant")
        expected = cli(small, "unblock", "t2", check=False)
        assert expected.returncode == 1
        assert r.status_code == 422 and r.text.strip() == expected.stderr.strip()
        assert state(small) == before
        r = act(c, "abandon", task="nope", reason="x")
        assert r.text.strip() == cli(small, "abandon", "nope", "--reason", "x",
                                     check=False).stderr.strip()
        for name, form in (("abandon", {"task": "t2"}), ("note", {"message": "  "}),
                           ("rescope", {"task": "t2", "reason": "x"}), ("explode", {})):
            r = act(c, name, **form)
            assert r.status_code == 422, (name, r.text)
            assert re.fullmatch(r"gitliza: error: [^\n]+\n", r.text), r.text
        assert state(small) == before
        # The page shows it in one line, as the CLI prints it (the script puts it in #flash).
        assert 'id="flash"' in c.get("/").text


def test_finished_tasks_stay_in_the_dependency_graph(small: Path) -> None:
    with client(small) as c:
        authed(c)
        assert act(c, "abandon", task="t3", reason="not needed").status_code == 200
        page = c.get("/pictures").text
    assert 'data-task="t3" data-status="ABANDONED"' in page
    assert 'data-task="t2" data-status="UNCLAIMED"' in page


def test_under_required_signatures_an_action_is_signed_with_the_humans_key(
        small: Path, tmp_path: Path) -> None:
    """The page acts through the same write path as the command: signed in process with the key
    git's user.signingkey names; `verify` accepts it and counts it signed. And the key itself is
    never on a page."""
    import subprocess

    from gitliza.git.store import Store
    from gitliza.services.verify.engine import replay
    key = tmp_path / "human_ed25519"
    subprocess.run(["ssh-keygen", "-q", "-t", "ed25519", "-N", "", "-C", "human", "-f", str(key)],
                   check=True)
    git(small, "config", "gpg.format", "ssh")
    git(small, "config", "user.signingkey", str(key))
    cli(small, "rekey", "human", "--key", f"{key}.pub")
    cli(small, "config", "signatures", "required")
    # A server started after the key was configured, as a person would (this test process's
    # signers were cached by small()'s set-up, before the key existed).
    import urllib.parse
    import urllib.request

    from tests.web.browser import Served
    served = Served(small)
    try:
        auth = {"Authorization": f"Bearer {served.url.split('token=')[1]}"}

        def get(path: str) -> str:
            with urllib.request.urlopen(urllib.request.Request(served.base + path, headers=auth),
                                        timeout=60) as r:
                return str(r.read().decode())
        token = re.search(r'name="csrf" content="(\w+)"', get("/"))
        assert token is not None
        body = urllib.parse.urlencode({"message": "signed from the browser"}).encode()
        post = urllib.request.Request(served.base + "/action/note", data=body,
                                      headers={**auth, "X-CSRF-Token": token.group(1)})
        with urllib.request.urlopen(post, timeout=60) as r:
            assert r.status == 200
        pages = "".join(get(p) for p in ("/", "/log", "/task/t1", "/api/board"))
    finally:
        served.close()
    assert "gpgsig" in git(small, "cat-file", "commit", "refs/liza/state")
    store = Store.discover(small)
    assert replay(store, store.tip(), git(small, "rev-parse", "refs/liza/state~1")).signed == 1
    assert "PRIVATE KEY" not in pages
    assert key.read_text().splitlines()[1] not in pages


def test_the_board_shows_each_agents_model(small: Path) -> None:
    cli(small, "config", "models", "coder=codex:cheap-1 reviewer=claude:sonnet")
    cli(small, "register", "r1", "--role", "code-reviewer")
    with client(small) as c:
        authed(c)
        page = c.get("/").text
    rows = {m.group(1): m.group(0) for m in re.finditer(r'<tr data-agent="([^"]+)">.*?</tr>',
                                                        page, re.S)}
    assert "<td>codex:cheap-1</td>" in rows["c1"] and "<td>claude:sonnet</td>" in rows["r1"]
    assert "<td>codex" not in rows["p1"]


def test_the_board_shows_the_machines_once_one_is_drained(small: Path) -> None:
    with client(small) as c:
        authed(c)
        assert "<h2>Machines</h2>" not in c.get("/").text  # one machine, no news: no panel
    cli(small, "drain", "machine-x")
    with client(small) as c:
        authed(c)
        page = c.get("/").text
    row = re.search(r'<tr data-machine="machine-x">.*?</tr>', page, re.S)
    assert "<h2>Machines</h2>" in page and row is not None and "gone DRAINED" in row.group(0)
