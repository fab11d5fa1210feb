"""An agent that hides its spend by hand: a `usage` commit whose running total says fewer tokens
than the run it records (so the budget check, which reads the total, would let it go on). verify
replays the op and refuses the commit, naming the blob; the hooks and sync use the same replay."""
from __future__ import annotations

from pathlib import Path

import pygit2

from gitliza.core.encoding.layout import path_of
from gitliza.core.ops import Init, Register
from gitliza.core.ops.usage import RecordUsage
from gitliza.git.store import STATE_REF
from gitliza.services.api import Liza
from tests.cli.test_board import liza
from tests.forgery import _replace


def test_a_forged_usage_total_does_not_verify(repo: Path) -> None:
    human = Liza.open(repo, "human")
    human.do(Init, goal="g")
    human.do(Register, agent="coder-1", role="coder")
    coder = Liza.open(repo, "coder-1")
    done = coder.do(RecordUsage, run_id="coder-1.1.1", cli="command", duration=1,
                    input_tokens=9000, output_tokens=1000)
    ok = liza(repo, "verify", agent=None)
    assert ok.returncode == 0, ok.stderr
    r = pygit2.Repository(str(repo))
    c = r[pygit2.Oid(hex=done.commit)]
    assert isinstance(c, pygit2.Commit)
    path = path_of("usage_totals", f"goal.{human.board().goal.id}")
    blob = c.tree[path]
    assert isinstance(blob, pygit2.Blob)
    text = blob.data.decode().replace("input_tokens = 9000", "input_tokens = 9")
    assert text != blob.data.decode()
    tree = _replace(r, c.tree, path.split("/"), r.create_blob(text.encode()))
    forged = r.create_commit(None, c.author, c.committer, c.message, tree, c.parent_ids)
    r.references[STATE_REF].set_target(forged)
    bad = liza(repo, "verify", agent=None)
    assert bad.returncode == 4, bad.stderr
    assert path in bad.stderr and len(bad.stderr.strip().splitlines()) == 1
