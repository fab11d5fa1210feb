"""Files written whole or not at all (a temp file in the same directory, then a rename): the views
and reports a human or a watcher reads while gitliza rewrites them."""
from __future__ import annotations

import os
import tempfile
from pathlib import Path


def write(directory: Path, name: str, data: bytes) -> tuple[int, int]:
    """Write `directory/name` by temp file + rename; return its (size, mtime_ns). The rename
    replaces a symlink at `name` itself, never the file it points to; a unique temp name lets
    two writers race without one truncating the other's file."""
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
