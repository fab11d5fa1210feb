"""Reading the TOML that gitliza's own writer produces, ~5x faster than tomllib.

Every board read decodes entity blobs: `status` on a 1,000-task board spent more time in tomllib
(pure Python, general TOML) than in everything else, and replay (verify, sync, the server hook)
decodes every entity version it meets. Nearly every blob is in the one canonical layout that
`tomlblob.dumps` writes: `key = value` lines, one-level `[table]` and `[[table]]` sections after a
blank line, arrays one item a line, strings without escapes. This reader accepts exactly that
layout and no more; on anything else (an escape, a comment, other spacing, a dotted key or section,
a duplicate key, a non-decimal number...) it returns None and the caller asks tomllib, which gives
the full answer or the precise error. So for every input this reader accepts, its result is the one
tomllib returns: tests/core/test_tomlfast.py checks that on generated entities and on mutations of
them.
"""
from __future__ import annotations

import sys
from typing import Any

from gitliza.core.encoding.lazyre import lazy

# A basic string's characters that end the fast path: the quote and the backslash (escapes) and
# what TOML forbids raw (control characters other than tab).
_UNSAFE = lazy(r'[\x00-\x08\x0a-\x1f\x7f"\\]')
_KEY = lazy(r"[A-Za-z0-9_-]+")
_INLINE_KEY = lazy(r"([A-Za-z0-9_-]+) = ")
# Decimal integers as the writer prints them (str(int)); TOML's +1, 1_000, 0x1, 01 go to tomllib.
# At most 18 digits: always within TOML's 64-bit range.
_INT = lazy(r"-?(?:0|[1-9][0-9]{0,17})")
_INT_AT = lazy(r"-?(?:0|[1-9][0-9]{0,17})(?=,| \})")


class _Bad(Exception):
    """Not the canonical layout: tomllib decides."""


def loads(text: str) -> dict[str, Any] | None:
    """The table `text` holds, or None when it is not in the canonical layout."""
    try:
        return _document(text)
    except _Bad:
        return None


def _document(text: str) -> dict[str, Any]:
    if not text.endswith("\n"):
        raise _Bad
    lines = text.split("\n")
    lines.pop()
    root: dict[str, Any] = {}
    arrays: set[str] = set()  # names of `[[name]]` arrays of tables
    table = root
    i, n = 0, len(lines)
    while i < n:
        line = lines[i]
        i += 1
        if not line or line[0] == "[":
            # A section, `[name]` or `[[name]]`: first in the text or after one blank line.
            if not line:
                if i >= n or not lines[i].startswith("["):
                    raise _Bad
                line = lines[i]
                i += 1
            elif i != 1:
                raise _Bad
            if line.startswith("[[") and line.endswith("]]"):
                name = line[2:-2]
                if not _KEY.fullmatch(name) or (name in root and name not in arrays):
                    raise _Bad
                arrays.add(name)
                table = {}
                root.setdefault(name, []).append(table)
                continue
            name = line[1:-1]
            if line[-1] != "]" or not _KEY.fullmatch(name) or name in root:
                raise _Bad
            table = root[name] = {}
            continue
        key, sep, rest = line.partition(" = ")
        if not sep or key in table or not _KEY.fullmatch(key):
            raise _Bad
        key = sys.intern(key)  # the few dozen field names, shared by every table
        if rest == "[":
            items = []
            while True:
                if i >= n:
                    raise _Bad
                item = lines[i]
                i += 1
                if item == "]":
                    break
                if item[:4] != "    " or item[-1:] != ",":
                    raise _Bad
                items.append(_value(item[4:-1]))
            table[key] = items
        else:
            table[key] = _value(rest)
    return root


def _value(s: str) -> Any:
    if not s:
        raise _Bad
    c = s[0]
    if c == '"':
        inner = s[1:-1]
        if len(s) < 2 or s[-1] != '"' or _UNSAFE.search(inner):
            raise _Bad
        return inner
    if c == "{":
        return _inline(s)
    if s == "true":
        return True
    if s == "false":
        return False
    if s == "[]":
        return []
    if _INT.fullmatch(s):
        return int(s)
    raise _Bad


def _inline(s: str) -> dict[str, Any]:
    """`{ k = v, k2 = v2 }` with scalar values (the writer puts arrays on lines of their own)."""
    if s == "{}":
        return {}
    if not s.startswith("{ ") or not s.endswith(" }"):
        raise _Bad
    out: dict[str, Any] = {}
    pos, end = 2, len(s) - 2
    while True:
        m = _INLINE_KEY.match(s, pos)
        if m is None or m.group(1) in out:
            raise _Bad
        key, pos = m.group(1), m.end()
        c = s[pos:pos + 1]
        if c == '"':
            close = s.find('"', pos + 1)
            if close < 0:
                raise _Bad
            inner = s[pos + 1:close]
            if _UNSAFE.search(inner):
                raise _Bad
            out[key], pos = inner, close + 1
        elif s.startswith("true", pos) and s[pos + 4:pos + 5] in (",", " "):
            out[key], pos = True, pos + 4
        elif s.startswith("false", pos) and s[pos + 5:pos + 6] in (",", " "):
            out[key], pos = False, pos + 5
        else:
            m = _INT_AT.match(s, pos)
            if m is None:
                raise _Bad
            out[key], pos = int(m.group()), m.end()
        if pos == end:
            return out
        if s[pos:pos + 2] != ", " or pos > end:
            raise _Bad
        pos += 2
