"""The cyclic garbage collector paused while a short command reads.

A read command such as `status` imports pygit2 and decodes a whole board: tens of thousands of
objects that live until the process ends, and next to no garbage. Each 700 new objects started a
collection that walked the young ones again, and every tenth an older generation: ~1% of a
1,000-task `status` (callgrind), for nothing freed. The collector runs again after the block
(a long-lived caller, such as the test suite running a command in process, keeps its own state).
"""
from __future__ import annotations

import gc
from contextlib import contextmanager
from typing import Iterator


@contextmanager
def paused() -> Iterator[None]:
    was = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if was:
            gc.enable()
