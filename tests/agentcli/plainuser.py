"""What the plain-user runs need to read, where an unprivileged uid can read it.

The tests run as root with the venv, the Python it was made from (pyenv's, under /root) and the
agent CLIs' cache (`~/.cache/gitliza-agent-clis`) in directories uid 65534 cannot enter. Rather
than open the user's home, a session makes one dedicated directory (0755, under /var/tmp, removed
at the end) holding:
- `pythons/NAME`: each base Python a venv needs (the gitliza venv's, Vibe's);
- `venvs/NAME`: the gitliza venv and each Python CLI's venv, their `pyvenv.cfg` pointing at the
  copied Python and their scripts' `#!` lines at their own copied interpreter;
- `clis/NAME-VERSION`: the CLI installs.
Files are hard links (the same inodes, so nothing is copied and nothing of the originals' modes
changes; every file there is world-readable already, checked; a real copy where /var/tmp is
another file system); what is rewritten (`pyvenv.cfg`, a script's first line) is a new file,
never written through a link. pyenv's interpreters find
libpython by an absolute RUNPATH under /root, so the runs get `LD_LIBRARY_PATH` to the copies.
"""
from __future__ import annotations

import os
import shutil
import stat
import subprocess
import tempfile
from pathlib import Path


class PlainTree:
    def __init__(self) -> None:
        self.root = Path(tempfile.mkdtemp(prefix="gitliza-plain-tree-", dir="/var/tmp"))
        self.root.chmod(0o755)
        self.libs: list[Path] = []
        self._done: dict[Path, Path] = {}

    def close(self) -> None:
        shutil.rmtree(self.root, ignore_errors=True)

    def _link_copy(self, src: Path, kind: str) -> Path:
        if src in self._done:
            return self._done[src]
        dest = self.root / kind / src.name
        dest.parent.mkdir(mode=0o755, exist_ok=True)
        unreadable = subprocess.run(["find", str(src), "!", "-perm", "-o=r"],
                                    capture_output=True, text=True).stdout.split()
        if unreadable:
            raise RuntimeError(f"not readable by others, would not be by the plain user: "
                               f"{unreadable[:3]}")
        if subprocess.run(["cp", "-al", str(src), str(dest)], capture_output=True).returncode:
            shutil.rmtree(dest, ignore_errors=True)  # another file system: a real copy
            subprocess.run(["cp", "-a", str(src), str(dest)], check=True)
        self._done[src] = dest
        return dest

    def python(self, base: Path) -> Path:
        """A base Python (a pyenv version), its copy."""
        dest = self._link_copy(base, "pythons")
        if (dest / "lib") not in self.libs:
            self.libs.append(dest / "lib")
        return dest

    def venv(self, prefix: Path) -> Path:
        """A venv, copied with its base Python, and made to use the copies."""
        cfg = (prefix / "pyvenv.cfg").read_text()
        home = next(line.split("=", 1)[1].strip() for line in cfg.splitlines()
                    if line.split("=", 1)[0].strip() == "home")
        base = Path(home).parent
        new_base = self.python(base)
        dest = self._link_copy(prefix, "venvs")
        _rewrite(dest / "pyvenv.cfg", cfg.replace(str(base), str(new_base))
                 .replace(str(prefix), str(dest)))
        for script in (dest / "bin").iterdir():
            if script.is_symlink() or not script.is_file():
                continue
            with open(script, "rb") as f:
                head = f.read(2 + len(str(prefix)))
            if head == b"#!" + str(prefix).encode():
                data = script.read_bytes()
                _rewrite(script, data.replace(str(prefix).encode(), str(dest).encode(), 1))
        # python -> /root/.pyenv/... (a venv made without --copies)
        for link in (dest / "bin").iterdir():
            if link.is_symlink() and str(base) in os.readlink(link):
                target = os.readlink(link).replace(str(base), str(new_base))
                link.unlink()
                link.symlink_to(target)
        return dest

    def cli(self, home: Path) -> Path:
        """An agent CLI's install (an npm prefix, or a venv)."""
        if (home / "pyvenv.cfg").is_file():
            return self.venv(home)
        return self._link_copy(home, "clis")


def _rewrite(path: Path, text: str | bytes) -> None:
    """Replace `path` by a new file (never write through a hard link to the original)."""
    mode = stat.S_IMODE(path.stat().st_mode)
    path.unlink()
    if isinstance(text, str):
        path.write_text(text)
    else:
        path.write_bytes(text)
    path.chmod(mode)
