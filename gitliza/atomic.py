"""Files written whole or not at all (a temp file in the same directory, then a rename): the views
and reports a human or a watcher reads while gitliza rewrites them, and the marshalled caches
(the CLI spec, compiled classes, parsed board tables) that concurrent processes share."""
from __future__ import annotations

import marshal
import os
from pathlib import Path
from typing import Any


def write(directory: Path, name: str, data: bytes) -> tuple[int, int]:
    """Write `directory/name` by temp file + rename; return its (size, mtime_ns). The rename
    replaces a symlink at `name` itself, never the file it points to; a unique temp name lets
    two writers race without one truncating the other's file."""
    import tempfile  # here: the CLI's start path imports this module for the caches

    fd, tmp = tempfile.mkstemp(dir=directory, prefix=f".{name}.", suffix=".tmp")
    try:
        with os.fdopen(fd, "wb") as f:
            f.write(data)
            os.fchmod(f.fileno(), 0o644)
        os.replace(tmp, directory / name)
    except BaseException:
        try:
            os.unlink(tmp)
        except OSError:
            pass
        raise
    st = (directory / name).lstat()
    return st.st_size, st.st_mtime_ns


def read_marshal(path: str) -> Any:
    """The data marshalled in `path`, or None when it is missing or unreadable (a cache only)."""
    try:
        with open(path, "rb") as f:
            return marshal.loads(f.read())  # load(f) reads object by object: ~20x slower
    except (OSError, EOFError, ValueError, TypeError):
        return None


def write_marshal(path: str, data: Any) -> bool:
    """Write `data` to `path` atomically (concurrent processes may write it at once); False, and
    nothing left behind, when that fails."""
    tmp = f"{path}.{os.getpid()}.tmp"
    try:
        with open(tmp, "wb") as f:
            marshal.dump(data, f)
        os.replace(tmp, path)
        return True
    except (OSError, ValueError):
        try:
            os.unlink(tmp)
        except OSError:
            pass
        return False
