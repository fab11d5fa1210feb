"""The commit signer (gitliza/git/signing.py) costs a board without keys nothing: cryptography
(~35 ms to import) is imported only where a key is made, loaded or used. Each command runs in a
fresh interpreter, as the CLI does, and reports what it imported."""
from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

from gitliza.core.ops import Init, Register
from gitliza.services.api import Liza

REPORT = """
import sys
from gitliza.__main__ import main
code = main(sys.argv[1:])
print(code, "gitliza.git.signing" in sys.modules,
      any(m.split(".")[0] == "cryptography" for m in sys.modules))
"""


def cli(repo: Path, agent: str, *args: str) -> list[str]:
    """`git liza ARGS` as `agent` in a fresh interpreter: [exit code, signer imported,
    cryptography imported]."""
    r = subprocess.run([sys.executable, "-c", REPORT, *args], cwd=repo, capture_output=True,
                       text=True, timeout=60, env={**os.environ, "LIZA_AGENT_ID": agent})
    return r.stdout.split()[-3:]


def test_an_unsigned_transition_does_not_import_cryptography(repo: Path) -> None:
    liza = Liza.open(repo, "human")
    liza.do(Init, goal="g")
    liza.do(Register, agent="planner-1", role="planner")
    # The signer is asked on every transition (so the check below means something), and on a
    # board without keys it answers without cryptography.
    assert cli(repo, "planner-1", "add", "t1", "--desc", "d", "--spec-ref", "s.md",
               "--done-when", "x", "--scope", "a") == ["0", "True", "False"]
    # An agent with a key signs: then cryptography is loaded, and the same report says so.
    assert cli(repo, "human", "register", "coder-1", "--role", "coder",
               "--generate-key") == ["0", "True", "True"]
    assert cli(repo, "coder-1", "note", "signed") == ["0", "True", "True"]


def test_the_signer_keeps_no_repository_alive(repo: Path) -> None:
    """The process's signer outlives the handle that made it (one per repository): it must not
    keep that handle's Repository, whose pack files stay open as long as it lives (a test worker
    reached 1,000 descriptors, a supervisor held the packs its first handle saw). Checked in a
    fresh interpreter, whose signer cache starts empty."""
    probe = """
import gc, sys
from pathlib import Path
import pygit2
from gitliza.core.ops import Init, Register
from gitliza.services.api import Liza
liza = Liza.open(Path("."), "human")
liza.do(Init, goal="g")
liza.do(Register, agent="coder-1", role="coder")  # a transition: the signer was asked
from gitliza.git import signing
assert signing._SIGNERS, "the signer was never made: this test checks nothing"
del liza
gc.collect()
print(sum(isinstance(o, pygit2.Repository) for o in gc.get_objects()))
"""
    r = subprocess.run([sys.executable, "-c", probe], cwd=repo, capture_output=True, text=True,
                       timeout=60)
    assert r.returncode == 0, r.stderr
    assert r.stdout.split() == ["0"]
