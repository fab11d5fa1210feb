"""`git liza validate FILE` resolves spec_ref against the repository holding the file (issue 27),
not against the file's folder."""
from __future__ import annotations

from pathlib import Path

from tests.cli.test_board import liza
from tests.conftest import git
from tests.interop.test_seed import fixed_example

GOOD = fixed_example()  # the schema's example board, as liza-validate.sh accepts it


def _board_file(text: str, where: Path) -> Path:
    where.mkdir(parents=True, exist_ok=True)
    path = where / "state.yaml"
    path.write_text(text)
    return path


def test_spec_refs_resolve_against_the_repository_wherever_the_file_is(repo: Path) -> None:
    for spec in ("specs/retry-logic.md", "specs/api.md"):
        (repo / spec).parent.mkdir(parents=True, exist_ok=True)
        (repo / spec).write_text("# spec\n")
    (repo / ".worktrees" / "task-7").mkdir(parents=True)
    for folder in (repo, repo / "plans" / "sprint-2"):
        path = _board_file(GOOD, folder)
        for cwd in (repo, folder):
            r = liza(cwd, "validate", str(path), agent=None)
            assert r.returncode == 0, r.stdout + r.stderr
            assert r.stdout.rstrip().endswith("VALID")
    # and a spec the repository lacks is still found missing, from any folder
    path = _board_file(GOOD.replace("specs/api.md#rate-limiting", "specs/gone.md"),
                       repo / "plans")
    r = liza(repo / "plans", "validate", "state.yaml", agent=None)
    assert r.returncode == 1 and "spec_ref file not found: specs/gone.md" in r.stdout + r.stderr
    assert git(repo, "rev-parse", "-q", "--verify", "refs/liza/state", check=False) == ""
