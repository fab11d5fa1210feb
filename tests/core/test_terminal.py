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
