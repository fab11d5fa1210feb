"""A full file system (findings 3 and 5 of issue 18): on a small tmpfs, the transitions run with
less and less room; each either completes or fails with one line naming the full disk (exit 3),
never a partial transition; once room is made, `doctor --fix` leaves nothing `git count-objects -v`
calls garbage and the lifecycle goes on."""
from __future__ import annotations

import os
import subprocess
from pathlib import Path
from typing import Iterator

import pytest

from gitliza.services.lifecycle.doctor import doctor
from gitliza.services.api import Liza
from gitliza.git.store import Store
from gitliza.services.verify.engine import verify
from tests.conftest import git
from tests.faults import harness as h

pytestmark = pytest.mark.slow
SIZE_KB = 6144


@pytest.fixture
def small_fs(tmp_path: Path) -> Iterator[Path]:
    where = tmp_path / "fs"
    where.mkdir()
    r = subprocess.run(["mount", "-t", "tmpfs", "-o", f"size={SIZE_KB}k", "tmpfs", str(where)],
                       capture_output=True, text=True)
    if r.returncode != 0:
        pytest.skip(f"cannot mount a small tmpfs here ({r.stderr.strip() or 'not permitted'})")
    try:
        yield where
    finally:
        subprocess.run(["umount", "-l", str(where)], capture_output=True)


def fill(where: Path, leave_kb: int) -> Path:
    """Fill the file system but `leave_kb` KiB."""
    filler = where / "filler"
    filler.unlink(missing_ok=True)
    st = os.statvfs(where)
    free = st.f_bavail * st.f_frsize
    size = max(0, free - leave_kb * 1024)
    with open(filler, "wb") as f:
        try:
            f.write(b"\0" * size)
        except OSError:
            pass
    return filler


def test_transitions_on_a_full_disk(small_fs: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("LIZA_NOW", h.NOW)
    repo = small_fs / "repo"
    repo.mkdir()
    git(repo, "init", "-q", "-b", "main")
    git(repo, "commit", "-q", "--allow-empty", "-m", "initial")
    h.board_with(repo, ("t1", "t2"))
    ops = [(("claim", "t1"), "c1", "CLAIMED"), (("release", "t1"), "c1", "UNCLAIMED"),
           (("claim", "t1"), "c1", "CLAIMED")]
    full_failures = other = 0
    for args, agent, status in ops:
        for leave in (0, 2, 8, 16, 32, 64, 128, 256, 1024, 4096):
            filler = fill(small_fs, leave)
            before = git(repo, "rev-parse", "refs/liza/state")
            r = h.liza(repo, *args, agent=agent)
            filler.unlink()
            verify(Store.discover(repo))  # whatever happened is a whole, legal history
            t = Liza.open(repo).board().task("t1")
            if r.returncode == 0:
                assert t.status.value == status
                break
            assert git(repo, "rev-parse", "refs/liza/state") == before
            if "no space left on device" in r.stderr.lower() and "free some space" in r.stderr:
                full_failures += 1
            else:
                other += 1
                h.report(f"full disk, {' '.join(args)} with {leave} KiB: {r.stderr.strip()}")
            assert r.returncode in (2, 3), r.stderr  # never a bug report
            assert "please report" not in r.stderr and len(r.stderr.strip().splitlines()) == 1
            h.age_leftovers(repo)
            assert not doctor(Liza.open(repo), fix=True).remaining
        else:
            pytest.fail(f"{' '.join(args)} never went through")
    h.age_leftovers(repo)
    report = doctor(Liza.open(repo), fix=True)
    assert not report.remaining
    assert h.garbage(repo) == 0
    h.report(f"full disk: {full_failures} refusals naming the full disk, {other} others")
    assert full_failures > 0
    assert other == 0
