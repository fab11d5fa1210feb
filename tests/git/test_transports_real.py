"""The board shared through real servers (tests/servers.py): ssh:// to an OpenSSH server and smart
HTTP to git http-backend behind nginx + fcgiwrap. Each: three clones and the server hook on the
served repository; a whole review round; a forged push refused by the hook through that transport;
and the same forgery on a hookless repository of the same server, refused by the clients' sync.
"""
from __future__ import annotations

from pathlib import Path

import pytest

from tests.conftest import git
from tests.forgery import forge
from tests.servers import HttpServer, Server, SshServer, http_server, ssh_server  # noqa: F401
from tests.services.test_multi_machine import STATE, Team, make_team, remote_ref

pytestmark = pytest.mark.slow


@pytest.fixture(params=["ssh", "http"])
def server(request: pytest.FixtureRequest) -> Server:
    fixture = "ssh_server" if request.param == "ssh" else "http_server"
    got: Server = request.getfixturevalue(fixture)
    return got


def test_three_clones_hook_and_forgeries_through_a_real_server(server: Server,
                                                              tmp_path: Path) -> None:
    bare = server.init_bare("team.git")
    tm, a, b, c = make_team(tmp_path, bare, server.url("team.git"))
    # One review round across the three machines, every push judged by the server hook.
    tm.liza(b, "claim", "t1", agent="coder-1")
    work = tm.commit(b / ".worktrees" / "t1", "f.txt", "done\n", "coder-1")
    tm.liza(b, "submit", "t1", agent="coder-1")
    tm.liza(c, "claim-review", "t1", agent="rev-1")
    tm.liza(c, "verdict", "t1", "approve", agent="rev-1")
    tm.liza(c, "merge", "t1", agent="rev-1")
    integ = remote_ref(bare, "refs/heads/integration")
    assert integ is not None and git(bare, "merge-base", "--is-ancestor", work, integ) == ""

    # A forged approval pushed with plain git through this transport: the hook refuses it.
    before = remote_ref(bare, STATE)
    tm.liza(b, "sync")
    forged = forge(b, "t2", agent="coder-1")
    r = tm.run(b, "git", "push", "--no-verify", "origin", f"{forged}:{STATE}", ok=False)
    assert r.returncode != 0 and "refused" in r.stderr, r.stderr
    assert remote_ref(bare, STATE) == before
    git(b, "update-ref", STATE, before or "")  # B takes its forgery back (no client hooks here)

    # A hookless repository on the same server: the forgery lands, every client's sync refuses.
    open_bare = server.init_bare("open.git")
    tm.run(a, "git", "push", "-q", "--no-verify", server.url("open.git"), f"{STATE}:{STATE}",
           "main:refs/heads/main", "integration:refs/heads/integration")
    x, y = tmp_path / "x", tmp_path / "y"
    for m in (x, y):
        git(tmp_path, "clone", "-q", server.url("open.git"), str(m))
        git(m, "config", "liza.remote", "origin")
        tm.liza(m, "pull")
    forged = forge(y, "t2")
    tm.run(y, "git", "push", "-q", "--no-verify", "origin", f"+{forged}:{STATE}")
    assert remote_ref(open_bare, STATE) == forged
    held = git(x, "rev-parse", STATE)
    r = tm.run(x, "git", "liza", "sync", ok=False)
    assert r.returncode == 4 and forged[:12] in r.stderr, r.stderr
    assert len(r.stderr.strip().splitlines()) == 1
    assert git(x, "rev-parse", STATE) == held
    # ... and `verify --remote` says the same without touching the local board.
    r = tm.run(x, "git", "liza", "verify", "--remote", "origin", ok=False)
    assert r.returncode == 4 and forged[:12] in r.stderr, r.stderr
    # Repaired through the same transport, every clone converges.
    r = tm.run(x, "git", "liza", "repair")
    assert "moved" in r.stdout
    for m in (y, x):
        tm.liza(m, "sync")
        assert git(m, "rev-parse", STATE) == remote_ref(open_bare, STATE)
        tm.liza(m, "verify")
    # The guarded team converges too.
    for m in (a, b, c):
        tm.liza(m, "sync")
        assert git(m, "rev-parse", STATE) == remote_ref(bare, STATE)
