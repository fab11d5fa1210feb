"""The fast reader returns what tomllib returns, or None: never a different answer."""
from __future__ import annotations

import re
import tomllib
from typing import Any

import pytest
from hypothesis import assume, given, settings
from hypothesis import strategies as st

from gitliza.core.encoding import codec, tomlblob, tomlfast
from gitliza.core.board import ENTITY_TYPES
from tests.core.test_tomlblob import MIXED, _shapes


def _tomllib(text: str) -> Any:
    try:
        return tomllib.loads(text)
    except tomllib.TOMLDecodeError:
        return "refused"


@pytest.mark.parametrize("coll", sorted(ENTITY_TYPES))
@settings(max_examples=100, deadline=None)
@given(data=st.data())
def test_agrees_with_tomllib_on_every_entity(coll: str, data: st.DataObject) -> None:
    entity = data.draw(_shapes(ENTITY_TYPES[coll]))
    try:
        text = tomlblob.dumps(entity).decode()
    except UnicodeEncodeError:
        return
    fast = tomlfast.loads(text)
    if fast is not None:
        assert fast == tomllib.loads(text)
        assert list(fast) == list(tomllib.loads(text))  # key order too


PLAIN = st.text(st.characters(blacklist_categories=("Cs", "Cc"), blacklist_characters='"\\'),
                max_size=20)


@settings(max_examples=200, deadline=None)
@given(data=st.data())
def test_plain_entities_take_the_fast_path(data: st.DataObject) -> None:
    """Text without escapes (nearly every real blob) is read here, not by tomllib."""
    coll = data.draw(st.sampled_from(["tasks", "agents", "goal", "config", "sprint"]))
    table = codec.encode(data.draw(_shapes(ENTITY_TYPES[coll])))

    def plain(v: Any) -> Any:
        if isinstance(v, str):
            return data.draw(PLAIN)
        if isinstance(v, list):
            return [plain(x) for x in v]
        if isinstance(v, dict):
            return {k: plain(x) for k, x in v.items()}
        return v
    text = tomlblob._toml(plain(table))
    # The fast layout has one-level sections only: a vote's evidence is written as a dotted
    # `[[review_votes.evidence]]` section, which tomllib reads (an approval's blob, rare).
    assume(not re.search(r"^\[\[?[^\]]*\.", text, re.M))
    assert tomlfast.loads(text) == tomllib.loads(text)


# Edits of a canonical blob: tomlfast must refuse (None) or agree with tomllib, including on what
# tomllib refuses.
BASE = ('id = "t-1"\ndescription = "say hello"\npriority = 3\nurgent = true\nlist = [\n'
        '    "a",\n    { time = "x", n = -4, ok = false },\n]\nempty = []\n\n[scope]\n\n'
        '[timeline]\nstarted = "2026-01-01T00:00:00Z"\ninline = { a = "1, 2", b = 2 }\n\n'
        '[[history]]\nevent = "a"\n\n[[history]]\nevent = "b"\nn = 1\n')
EDITS = st.sampled_from(['"', "\\", "\n", "\r", "\t", " ", "#", "=", ",", "[", "]", "{", "}",
                         ".", "+", "_", "0", "x", "é", "\x00", "\x7f", "true", "'", "\\u0041",
                         "1_0", "0x1", "inf", '""', "\n\n", "[[a]]", "a.b", "999999999999999999"])


@settings(max_examples=1500, deadline=None)
@given(pos=st.integers(0, len(BASE)), cut=st.integers(0, 3), insert=st.one_of(EDITS, MIXED))
def test_mutations_never_disagree(pos: int, cut: int, insert: str) -> None:
    text = BASE[:pos] + insert + BASE[pos + cut:]
    fast = tomlfast.loads(text)
    if fast is not None:
        assert _tomllib(text) == fast


def test_the_canonical_base_is_read_fast() -> None:
    assert tomlfast.loads(BASE) == tomllib.loads(BASE)


@pytest.mark.parametrize("text", [
    'a = 1\na = 2\n',                 # duplicate key: tomllib refuses
    'a = "x"\n\n[a]\n',               # a table over a key
    'a = 1',                          # no final newline (valid TOML, not canonical)
    'a = +1\n', 'a = 1_000\n', 'a = 0x10\n', 'a = 01\n',
    'a = "\\n"\n',                    # an escape
    'a = 1 # note\n', 'a=1\n', '"a" = 1\n', 'a.b = 1\n', '[a.b]\n', '[[a.b]]\n',
    'a = []\n\n[[a]]\n',             # an array of tables over a static array
    '[a]\n\n[[a]]\n', '[[a]]\n\n[a]\n',
    'a = { b = 1, b = 2 }\n', 'a = { b = [1] }\n', 'a = [\n    [1],\n]\n',
    'a = 1234567890123456789\n',      # 19 digits: tomllib checks the range
])
def test_outside_the_canonical_layout_goes_to_tomllib(text: str) -> None:
    assert tomlfast.loads(text) is None


def test_codec_still_reports_what_tomllib_refuses() -> None:
    from gitliza.core.model import Task
    from gitliza.errors import InconsistentState
    good = tomlblob.dumps(Task(id="t-1", description="d", status="UNCLAIMED",  # type: ignore[arg-type]
                            created="2025-01-17T14:00:00Z"))
    with pytest.raises(InconsistentState, match="not TOML"):
        tomlblob.loads(Task, good + good)  # every key twice
