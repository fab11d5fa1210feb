"""The cyclic garbage collector held while a CLI process starts, and paused while a short command
reads.

Starting a command imports pygit2 and gitliza's modules: tens of thousands of objects (modules,
classes, functions) that live until the process ends, and next to no garbage. Each 700 new objects
started a collection that walked the young ones again, and every tenth an older generation: ~4 ms
of a `git liza status` start (29 young and 4 older collections during pygit2's import, 12 and 1
during gitliza's), for nothing freed. The entry point holds the collector (`hold`) until the
command is about to run (`release`), which moves what the imports made out of its sight
(`gc.freeze`: it is never garbage, and a long-lived command's collections need not walk it again)
and lets it run as usual.

A read command such as `status` then decodes a whole board, again objects that live until it
ends: it pauses the collector while it reads (`paused`). In a CLI process, what the read made is
moved out of the collector's sight too when the pause ends (else the first allocation after it
started a collection walking the whole decoded board, ~1 ms of `status`); a long-lived caller,
such as the test suite running a command in process, keeps its own state and objects.
"""
from __future__ import annotations

import gc
from contextlib import contextmanager
from typing import Iterator

_held = False
_cli = False  # a CLI process: `hold` was called at its start


def hold() -> None:
    """At a CLI process's start (gitliza/__main__.py): no collection while the command loads."""
    global _held, _cli
    _cli = True
    if gc.isenabled():
        gc.disable()
        _held = True


def release() -> None:
    """Before the command runs: the collector back as it was, the loaded modules out of its sight.
    Nothing when `hold` did not hold it (a command run in process)."""
    global _held
    if _held:
        _held = False
        gc.freeze()
        gc.enable()


@contextmanager
def paused() -> Iterator[None]:
    was = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if was:
            if _cli:
                gc.freeze()
            gc.enable()
