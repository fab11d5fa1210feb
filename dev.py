#!/usr/bin/env python3
"""Set-up and entry points that need nothing but Python 3.11+ and git.

    python3 dev.py example   # the main job: a team builds the hello-CLI demo (examples/team.py)
    python3 dev.py example walkthrough   # the scripted command-by-command walkthrough
    python3 dev.py test      # run the whole test suite
    python3 dev.py bench     # run the benchmarks (not part of the tests)

Each creates ./.venv on first use and installs gitliza (editable) with what it needs; the install is
redone only when pyproject.toml changes. Extra arguments are passed on (to pytest for `test`).
"""
from __future__ import annotations

import hashlib
import os
import subprocess
import sys
import venv
from pathlib import Path

ROOT = Path(__file__).resolve().parent
VENV = ROOT / ".venv"
BIN = VENV / ("Scripts" if os.name == "nt" else "bin")
PY = BIN / ("python.exe" if os.name == "nt" else "python")
STAMP = VENV / ".gitliza-install-stamp"


def _ensure_venv() -> None:
    if sys.version_info < (3, 11):
        sys.exit(f"gitliza needs Python 3.11+, this is {sys.version.split()[0]}")
    want = hashlib.sha256((ROOT / "pyproject.toml").read_bytes()).hexdigest()
    if PY.exists() and STAMP.exists() and STAMP.read_text() == want:
        return
    if not PY.exists():
        print(f"dev.py: creating {VENV}", flush=True)
        venv.EnvBuilder(with_pip=True).create(VENV)
    print("dev.py: installing gitliza and its dependencies", flush=True)
    subprocess.run([str(PY), "-m", "pip", "install", "-q", "--upgrade", "pip"], check=False)
    subprocess.run([str(PY), "-m", "pip", "install", "-q", "-e", f"{ROOT}[test,bench,mcp]"],
                   check=True)
    STAMP.write_text(want)


def _install_man() -> None:
    """Regenerate man/git-liza.1 from the CLI and put it in the venv's share/man/man1, where
    `git help liza` (and so `git liza --help`) finds it with the venv's bin on PATH."""
    subprocess.run([str(PY), "-m", "gitliza.cli.manpage", str(ROOT / "man" / "git-liza.1"),
                    str(VENV / "share" / "man" / "man1" / "git-liza.1")], cwd=ROOT, check=False)


def main(argv: list[str]) -> int:
    if not argv or argv[0] not in {"example", "test", "bench"}:
        print(__doc__)
        return 1
    _ensure_venv()
    _install_man()
    env = dict(os.environ, PATH=f"{BIN}{os.pathsep}{os.environ.get('PATH', '')}")
    cmd, rest = argv[0], argv[1:]
    if cmd == "example":
        name = rest.pop(0) if rest and not rest[0].startswith("-") else "team"
        args = [str(PY), str(ROOT / "examples" / f"{name}.py"), *rest]
    elif cmd == "test":
        args = [str(PY), "-m", "pytest", "-n", "auto", *rest]
    else:
        args = [str(PY), str(ROOT / "benchmarks" / "run.py"), *rest]
    return subprocess.run(args, cwd=ROOT, env=env).returncode


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
