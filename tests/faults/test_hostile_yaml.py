"""Hostile YAML (finding 4 of issue 18): each refused as one line, exit 1, before the parser
can blow up (no MemoryError, no RecursionError, no SIGSEGV); and an import refuses whatever the
ops refuse (a description longer than `add` takes).

The tests assert the behaviour, not a library's wording: exit 1, one line that names the file and
the line and says what was wrong (the idea, e.g. nesting, not the exact words: PyYAML 6.0.4 began
stopping deep nesting itself, "exceeded maximum nesting depth", before gitliza's own check, "nested
more than 64 levels deep", could), and refs/liza/ unmoved. A case just past gitliza's own limit,
well within any parser's, keeps gitliza's check itself tested whatever libyaml does."""
from __future__ import annotations

import os
import re
from pathlib import Path

import pytest

from gitliza.interop import yamlload
from tests.conftest import git
from tests.faults import harness as h

pytestmark = pytest.mark.slow


def laughs() -> str:
    lines = ['lol0: &a0 ["lol","lol","lol","lol","lol","lol","lol","lol","lol"]']
    lines += [f"lol{i}: &a{i} [" + ",".join([f"*a{i - 1}"] * 9) + "]" for i in range(1, 10)]
    return "\n".join(lines) + "\n"


def brackets(depth: int) -> str:
    return "[" * depth + "]" * depth + "\n"


# name -> (the document, what the one line must say was wrong, as a pattern over the idea)
HOSTILE = {
    "billion-laughs": (laughs, r"alias"),
    "nested-brackets": (lambda: brackets(100_000), r"nest"),
    "nested-mappings": (lambda: "".join("  " * i + f"k{i}:\n" for i in range(5000)) + "  " * 5000
                        + "v\n", r"nest"),
    # Past gitliza's limit, far below any YAML parser's: only gitliza's own check can refuse it.
    "nested-just-past-ours": (lambda: brackets(yamlload.MAX_DEPTH + 1),
                              rf"nested more than {yamlload.MAX_DEPTH} levels"),
    "many-aliases": (lambda: "a: &x 1\nb: [" + ",".join(["*x"] * 20_000) + "]\n", r"alias"),
}


@pytest.mark.parametrize("name", list(HOSTILE))
@pytest.mark.parametrize("command", ["validate", "import"])
def test_hostile_yaml_is_one_line_exit_1(tmp_path: Path, repo: Path, name: str,
                                         command: str) -> None:
    make, why = HOSTILE[name]
    path = tmp_path / f"{name}.yaml"
    path.write_text(make())
    r = h.liza(repo, command, str(path), timeout=60)
    assert r.returncode == 1, r
    lines = r.stderr.strip().splitlines()
    assert len(lines) == 1, r.stderr
    # The place (file:line) and the reason, in gitliza's one-line form, no Python exception.
    assert re.match(rf"gitliza: error: {re.escape(path.name)}:\d+: ", lines[0]), lines[0]
    assert re.search(why, lines[0], re.IGNORECASE), lines[0]
    assert "please report" not in r.stderr and "Error" not in r.stderr
    assert not git(repo, "for-each-ref", "refs/liza/")  # the import wrote nothing


def test_a_file_larger_than_any_board_is_refused_unread(tmp_path: Path, repo: Path) -> None:
    path = tmp_path / "huge.yaml"
    with open(path, "wb") as f:  # sparse: nothing is written, nothing need be read
        f.truncate(yamlload.MAX_BYTES + 1)
    for command in ("validate", "import"):
        r = h.liza(repo, command, str(path), timeout=60)
        assert r.returncode == 1 and "bytes, more than" in r.stderr, r


def test_import_refuses_what_add_refuses(tmp_path: Path, repo: Path) -> None:
    text = (Path(__file__).parent.parent / "interop" / "data" / "schema_example.yaml").read_text()
    marker = "description: "
    at = text.index(marker, text.index("tasks:"))
    end = text.index("\n", at)
    path = tmp_path / "state.yaml"
    path.write_text(text[:at] + marker + "'" + "x" * 5_000_000 + "'" + text[end:])
    r = h.liza(repo, "import", str(path), timeout=60)
    assert r.returncode == 1 and "longer than 4000 characters" in r.stderr, r
    assert not git(repo, "for-each-ref", "refs/liza/")
    assert os.path.getsize(path) > 5_000_000
