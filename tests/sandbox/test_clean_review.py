"""The reviewer reviews exactly review_commit (issue 46): a coder leaves, in its worktree, a
`__pycache__` built from correct code (ignored, so Clean Sync passes) and commits wrong code of the
same size and time stamp. Real supervisors, the default sandbox: the reviewer's test, run in its
own clean checkout, sees the committed (wrong) code and rejects; the coder's worktree is left as
it was, bytecode and all. The reviewer's checkout is made clean again for its next review."""
from __future__ import annotations

import sys
from pathlib import Path

import pytest

from gitliza.core.states import TaskState
from gitliza.services.api import Liza
from tests.cli.test_board import liza, ok
from tests.sandbox.test_rogue import needs_bwrap
from tests.team.procs import Sup, add_task, make_board, script

pytestmark = [pytest.mark.slow, needs_bwrap]
PY = sys.executable

# Correct code compiled, then wrong code of the same size and mtime: Python trusts the stale
# bytecode (its check is the source's mtime and size) wherever that __pycache__ is.
CODER = f"""unset SOURCE_DATE_EPOCH PYTHONPYCACHEPREFIX
printf '__pycache__/\\n' > .gitignore
printf 'def add(a, b):\\n    return a + b\\n' > calc.py
touch -d '2020-01-01 00:00:00' calc.py
{PY} -c "import py_compile; py_compile.compile('calc.py', doraise=True)"
printf 'def add(a, b):\\n    return a - b\\n' > calc.py
touch -d '2020-01-01 00:00:00' calc.py
{PY} -c "import calc, sys; sys.exit(calc.add(2, 2) != 4)"  # passes here, on the stale bytecode
git add .gitignore calc.py
git commit -q -m "add calc"
git liza submit "$LIZA_TASK_ID"
"""

REVIEWER = f"""unset PYTHONPYCACHEPREFIX
test "$(git rev-parse HEAD)" = "$LIZA_REVIEW_COMMIT"
echo "stale" > leftover.txt 2>/dev/null || true
if {PY} -c "import calc, sys; sys.exit(calc.add(2, 2) != 4)"; then
  git liza verdict "$LIZA_TASK_ID" approve --commit "$LIZA_REVIEW_COMMIT"
else
  git liza verdict "$LIZA_TASK_ID" reject --reason "calc.add(2, 2) is not 4 in $(pwd)" \\
    --commit "$LIZA_REVIEW_COMMIT"
fi
"""


@needs_bwrap
def test_the_reviewer_tests_the_commit_not_the_coders_leftovers(repo: Path,
                                                                 tmp_path: Path) -> None:
    make_board(repo, reviewer_max_wait="3")
    add_task(repo, "t1")
    coder = Sup(repo, "coder", "coder-1", "--once", "--sandbox", "on", "--",
                str(script(tmp_path, "c.sh", CODER)))
    assert coder.wait() == 0, coder.output()
    wt = repo / ".worktrees" / "t1"
    pyc = sorted((wt / "__pycache__").glob("calc.*.pyc"))
    assert pyc, "the coder's bytecode is not there: the attack was not made"
    stamp = pyc[0].stat().st_mtime_ns
    reviewer = Sup(repo, "code-reviewer", "reviewer-1", "--once", "--sandbox", "on", "--",
                   str(script(tmp_path, "r.sh", REVIEWER)))
    assert reviewer.wait() == 0, reviewer.output()
    t = Liza.open(repo).board().task("t1")
    assert t is not None and t.status == TaskState.REJECTED, (t, reviewer.output())
    assert t.rejection_reason is not None and ".liza/reviews/reviewer-1" in t.rejection_reason
    # The coder's worktree as it was: its bytecode untouched.
    assert pyc[0].stat().st_mtime_ns == stamp
    assert (wt / "calc.py").read_text().endswith("a - b\n")
    ok(liza(repo, "verify", agent=None))


def test_the_review_checkout_is_made_clean_again(repo: Path) -> None:
    """Whatever is left in the reviewer's checkout (a change, an untracked and an ignored file, a
    nested repository) is gone at its next review, and it is at exactly the new commit."""
    from gitliza.git.worktrees.clean import clean_checkout
    from tests.conftest import git
    (repo / ".gitignore").write_text("build/\n")
    git(repo, "add", ".gitignore")
    git(repo, "commit", "-q", "-m", "ignore build")
    first = git(repo, "rev-parse", "HEAD")
    (repo / "a.txt").write_text("a\n")
    git(repo, "add", "a.txt")
    git(repo, "commit", "-q", "-m", "a")
    second = git(repo, "rev-parse", "HEAD")
    import pygit2
    r = pygit2.Repository(str(repo))
    path = repo / ".liza" / "reviews" / "reviewer-1"
    path.parent.mkdir(parents=True)
    clean_checkout(r, path, pygit2.Oid(hex=first))
    (path / "README.md").write_text("changed\n")
    (path / "untracked.txt").write_text("x\n")
    (path / "build").mkdir()
    (path / "build" / "stale.py").write_text("x = 1\n")
    (path / "nested").mkdir()
    git(path / "nested", "init", "-q")
    clean_checkout(r, path, pygit2.Oid(hex=second))
    assert git(path, "rev-parse", "HEAD") == second
    assert git(path, "status", "--porcelain", "--ignored") == ""
    assert sorted(p.name for p in path.iterdir()) == [".git", ".gitignore", "README.md", "a.txt"]
