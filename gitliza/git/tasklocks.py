"""Per-task mutual exclusion between the gitliza commands of one machine: an flock on
`<commondir>/liza-task-locks/<task>.lock`, shared by every worktree of the repository. A claim, a
merge or a sync's clean-up of a task's worktree holds it, so they never work on one task at once."""
from __future__ import annotations

import fcntl
import os
import time
from contextlib import contextmanager, suppress
from typing import Iterator

from pygit2 import Repository

from gitliza.core.ids import check_id
from gitliza.errors import ConcurrencyConflict
from gitliza.git.repository import common_dir

TASK_LOCK_DIR = "liza-task-locks"
TASK_LOCK_TIMEOUT = 60.0  # a claim or merge of one task holds its lock for milliseconds


@contextmanager
def task_lock(repo: Repository, task: str, *, timeout: float | None = TASK_LOCK_TIMEOUT
              ) -> Iterator[bool]:
    """flock on `<commondir>/liza-task-locks/<task>.lock`; yields whether it was acquired
    (`timeout=0`: try once; None: wait forever; otherwise ConcurrencyConflict after `timeout`).

    The kernel drops the lock when the holder dies (a SIGKILLed claim leaves no stale lock). The
    holder unlinks the file before releasing it so that locks do not pile up; a waiter that then
    gets the old inode notices (the path is gone or is a new file) and locks again.
    """
    check_id(task, "task id")
    folder = common_dir(repo) / TASK_LOCK_DIR
    folder.mkdir(exist_ok=True)
    path = folder / f"{task}.lock"
    deadline = None if timeout is None else time.monotonic() + timeout
    while True:
        fd = os.open(path, os.O_RDWR | os.O_CREAT | os.O_CLOEXEC, 0o644)
        if not _flock(fd, deadline):
            os.close(fd)
            if timeout == 0:
                yield False
                return
            raise ConcurrencyConflict(f"{task} is locked by another gitliza command ({path})",
                                      hint="retry when it has finished")
        try:
            same = os.stat(path).st_ino == os.fstat(fd).st_ino
        except FileNotFoundError:
            same = False
        if same:
            break
        os.close(fd)
    try:
        yield True
    finally:
        with suppress(FileNotFoundError):
            os.unlink(path)
        os.close(fd)


def _flock(fd: int, deadline: float | None) -> bool:
    if deadline is None:
        fcntl.flock(fd, fcntl.LOCK_EX)
        return True
    while True:
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
            return True
        except BlockingIOError:
            if time.monotonic() >= deadline:
                return False
            time.sleep(0.01)
