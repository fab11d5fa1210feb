"""core/terminal.py: board text made safe for a terminal (issue 26, hostile input)."""
from __future__ import annotations

from hypothesis import given, strategies as st

from gitliza.core.terminal import is_safe_line, safe, safe_json, safe_line


def test_control_characters_are_shown_escaped_not_dropped() -> None:
    assert safe("a\x1b]0;t\x07b") == "a\\x1b]0;t\\x07b"
    assert safe("x\x9b2J\x7f\r") == "x\\x9b2J\\x7f\\x0d"
    assert safe("\u202eabc\u2066") == "\\u202eabc\\u2066"
    assert safe("two\n\tlines") == "two\n\tlines"
    assert safe_line("two\nlines") == "two\\x0alines" and not is_safe_line("a\nb")
    plain = "ordinary text, é, 漢字, emoji \u26a0\ufe0f"
    assert safe(plain) is plain and safe_line(plain) is plain and is_safe_line(plain)


@given(st.text())
def test_nothing_a_terminal_acts_on_survives(text: str) -> None:
    out = safe_line(text)  # a tab moves the cursor only: kept
    assert not any((ord(c) < 0x20 and c != "\t") or 0x7f <= ord(c) <= 0x9f or 0x202a <= ord(c) <= 0x202e
                   or 0x2066 <= ord(c) <= 0x2069 for c in out)
    assert safe_line(text).replace("\\x0a", "\n") == safe(text) or "\\x0a" in text


@given(st.dictionaries(st.text(), st.text()))
def test_safe_json_is_the_same_value_and_inert(value: dict[str, str]) -> None:
    import json
    doc = safe_json(json.dumps(value, ensure_ascii=False))
    assert json.loads(doc) == value
    assert safe_line(doc.replace("\n", "")) == doc.replace("\n", "")


def test_printable_ascii_skips_the_search_and_nothing_else_does() -> None:
    """`safe` answers printable ASCII without a regular expression (compiled on first need):
    every ASCII character, alone and inside text, comes out as the character classes say."""
    import re

    from gitliza.core.terminal import _UNSAFE_CLASS, _UNSAFE_LINE_CLASS
    for n in range(0x80):
        for text in (chr(n), f"ab{chr(n)}cd"):
            assert safe(text) == re.sub(_UNSAFE_CLASS, lambda m: f"\\x{ord(m.group()):02x}",
                                        text)
            assert safe_line(text) == re.sub(_UNSAFE_LINE_CLASS,
                                             lambda m: f"\\x{ord(m.group()):02x}", text)
            assert is_safe_line(text) == (re.search(_UNSAFE_LINE_CLASS, text) is None)
    plain = "task-1   UNCLAIMED  3"
    assert safe(plain) is plain and safe_line(plain) is plain
