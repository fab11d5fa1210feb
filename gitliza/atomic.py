"""Files written whole or not at all (a temp file in the same directory, then a rename): the views
and reports a human or a watcher reads while gitliza rewrites them, and the marshalled caches
(the CLI spec, compiled classes, parsed board tables) that concurrent processes share.

And the directories and files gitliza writes inside a repository (`.liza/`), which a clone or an
agent may have filled with symbolic links: `inside` walks a path one directory at a time and
refuses a link or a non-directory at any step, and `open_file` never follows a link at the last
one (O_NOFOLLOW), so nothing is written outside the directory the caller trusts.
"""
from __future__ import annotations

import errno
import marshal
import os
import stat
from pathlib import Path
from typing import IO, Any

from gitliza.errors import GitFailure, ValidationError

PRIVATE_DIR = 0o700  # agent logs, prompts and MCP configs: the user's alone
PRIVATE_FILE = 0o600


def write(directory: Path, name: str, data: bytes, mode: int = 0o644) -> tuple[int, int]:
    """Write `directory/name` by temp file + rename; return its (size, mtime_ns). The rename
    replaces a symlink at `name` itself, never the file it points to; a unique temp name lets
    two writers race without one truncating the other's file."""
    import tempfile  # here: the CLI's start path imports this module for the caches

    fd, tmp = tempfile.mkstemp(dir=directory, prefix=f".{name}.", suffix=".tmp")
    try:
        with os.fdopen(fd, "wb") as f:
            f.write(data)
            os.fchmod(f.fileno(), mode)
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


def inside(root: Path, *parts: str, mode: int = 0o755) -> Path:
    """`root/parts[0]/parts[1]/...`, each part made (with `mode`) when missing and checked to be
    a directory of its own: a symbolic link (which a checkout creates from a committed one) or
    anything else is refused with one line, so a write below the result stays inside `root`.
    `root` is the caller's to trust (a worktree's top). A private `mode` (no group or other
    bits) is also put back on a directory that an older gitliza made readable by all."""
    path = root
    for part in parts:
        if part in ("", ".", "..") or "/" in part:
            raise ValidationError(f"not a plain directory name: {part!r}")
        path = path / part
        try:
            os.mkdir(path, mode)
        except FileExistsError:
            pass
        except OSError as e:
            raise GitFailure(f"cannot create {path}: {e.strerror}") from None
        st = os.lstat(path)
        if stat.S_ISLNK(st.st_mode):
            raise ValidationError(f"{path} is a symbolic link; gitliza never writes through one",
                                  hint="replace it with a directory (or remove it)")
        if not stat.S_ISDIR(st.st_mode):
            raise ValidationError(f"{path} is not a directory; refusing to replace it")
        if not mode & 0o077 and st.st_mode & 0o077 and st.st_uid == os.getuid():
            os.chmod(path, mode)
    return path


def open_file(path: Path, *, append: bool, mode: int = PRIVATE_FILE) -> IO[bytes]:
    """`path` opened to write, never through a symbolic link (O_NOFOLLOW) nor into a file with
    another name (a hard link): appended to, or created new (O_EXCL). The file gets `mode`,
    also when it was there before with a wider one. Its directory is the caller's to check
    (`inside`)."""
    flags = os.O_WRONLY | os.O_CREAT | os.O_CLOEXEC | os.O_NOFOLLOW
    flags |= os.O_APPEND if append else os.O_EXCL
    try:
        fd = os.open(path, flags, mode)
    except OSError as e:
        if e.errno == errno.ELOOP or (e.errno == errno.EEXIST and os.path.islink(path)):
            raise ValidationError(f"{path} is a symbolic link; gitliza never writes through one",
                                  hint="remove it") from None
        raise GitFailure(f"cannot open {path}: {e.strerror}") from None
    try:
        st = os.fstat(fd)
        if not stat.S_ISREG(st.st_mode) or st.st_nlink > 1:
            raise ValidationError(f"{path} is not a plain file of its own (a link or a device); "
                                  "refusing to write to it", hint="remove it")
        if stat.S_IMODE(st.st_mode) != mode:
            os.fchmod(fd, mode)
        return os.fdopen(fd, "ab" if append else "wb")
    except BaseException:
        os.close(fd)
        raise
