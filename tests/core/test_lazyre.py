"""core/encoding/lazyre.py: a pattern compiled on its first use answers as `re.compile` would,
and a module that declares one compiles nothing at import."""
from __future__ import annotations

import re
import subprocess
import sys

import pytest

from gitliza.core.encoding.lazyre import lazy


def test_a_lazy_pattern_answers_as_the_compiled_one(monkeypatch: pytest.MonkeyPatch) -> None:
    compiled: list[str] = []
    real = re.compile
    monkeypatch.setattr(re, "compile", lambda p, f=0: compiled.append(p) or real(p, f))
    p = lazy(r"^(\d+)\s*([smhdw])$")
    assert compiled == []  # declared, not compiled
    for text in ("5m", "12 h", "x", "5mm", ""):
        want = real(r"^(\d+)\s*([smhdw])$").match(text)
        got = p.match(text)
        assert (got and got.groups()) == (want and want.groups())
    assert p.sub("", "5m") == "" and p.fullmatch("7d") is not None
    assert compiled == [r"^(\d+)\s*([smhdw])$"]  # once, whatever the methods used


def test_the_status_modules_compile_no_pattern_at_import() -> None:
    code = ("import re, sys, pygit2; seen = []; real = re._compile\n"  # pygit2: the floor's own
            "re._compile = lambda p, f=0: seen.append(p) or real(p, f)\n"
            "import gitliza.core.encoding.tomlblob\n"
            "import gitliza.core.clock, gitliza.core.quorum, gitliza.core.encoding.tomlfast\n"
            "import gitliza.core.presence.placement\n"
            "print(len([p for p in seen if isinstance(p, str)]))")
    r = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60)
    assert r.returncode == 0, r.stderr
    assert r.stdout.strip() == "0"
