"""Board text made safe for a human's terminal (pure).

Descriptions, notes, reasons and every other text on a board were written by an agent, a peer's
push or an imported file: hostile input. Printed raw, an escape sequence in them changes the
terminal's title, clears the screen, plants an OSC 8 link or rewrites what the lines above said.
`safe` replaces each control character (C0 but tab and, where the output has lines, newline; DEL;
C1, whose CSI 0x9b some terminals honour like ESC [) and each bidirectional override (which
reorders what is shown) by a visible escape such as `\\x1b`. Text without any comes back as it
was, the same object, at the price of one regular-expression search.

JSON output is left exact: JSON escapes C0 control characters itself (`\\u001b`), and
everything else with ensure_ascii; a document written with ensure_ascii=False (to keep é and 漢字
readable) passes through `safe_json`, which escapes the rest JSON's way (`\\u009b`): the same
value for a JSON reader, nothing a terminal acts on.
"""
from __future__ import annotations

import re

# C0 but \t and \n, DEL, C1, and the bidirectional embeddings, overrides and isolates.
_UNSAFE_CLASS = "[\x00-\x08\x0b-\x1f\x7f-\x9f\u202a-\u202e\u2066-\u2069]"
_UNSAFE_LINE_CLASS = "[\x00-\x08\x0a-\x1f\x7f-\x9f\u202a-\u202e\u2066-\u2069]"
_patterns: dict[str, re.Pattern[str]] = {}


def _pattern(cls: str) -> re.Pattern[str]:
    """Compiled on first use: most text is printable ASCII (`_plain`), which needs no search,
    and compiling both classes cost every CLI start ~0.4 ms."""
    found = _patterns.get(cls)
    if found is None:
        found = _patterns[cls] = re.compile(cls)
    return found


def _plain(text: str) -> bool:
    """Printable ASCII only (space to `~`): none of the characters above can be in it."""
    return text.isascii() and text.isprintable()


def _visible(m: re.Match[str]) -> str:
    c = ord(m.group())
    return f"\\x{c:02x}" if c < 0x100 else f"\\u{c:04x}"


def safe(text: str) -> str:
    """`text` with every control character but tab and newline shown as an escape."""
    if _plain(text):
        return text
    unsafe = _pattern(_UNSAFE_CLASS)
    return unsafe.sub(_visible, text) if unsafe.search(text) else text


def safe_json(document: str) -> str:
    """A JSON document (ensure_ascii=False) with DEL, C1 and the bidirectional controls written
    as `\\uXXXX`: they only occur inside its strings, where that escape means the same."""
    if _plain(document):
        return document
    unsafe = _pattern(_UNSAFE_CLASS)
    return unsafe.sub(_json_escape, document) if unsafe.search(document) else document


def _json_escape(m: re.Match[str]) -> str:
    return f"\\u{ord(m.group()):04x}"


def is_safe_line(text: str) -> bool:
    """Whether `safe_line` would leave `text` as it is (one search over many cells joined)."""
    return _plain(text) or _pattern(_UNSAFE_LINE_CLASS).search(text) is None


def safe_line(text: str) -> str:
    """`text` as one line: newlines escaped too (a subject, a table cell, a one-line alert)."""
    if _plain(text):
        return text
    unsafe = _pattern(_UNSAFE_LINE_CLASS)
    return unsafe.sub(_visible, text) if unsafe.search(text) else text
