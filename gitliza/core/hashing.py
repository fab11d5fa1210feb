"""SHA-1, the one digest the board uses: the fan-out buckets of the storage layout (layout.py),
journal keys (board.journal_key) and the ids of the git objects a transition writes (git/objects/packs.py).

It is the interpreter's builtin `_sha1` (hashlib's interface): importing hashlib loads OpenSSL,
~2 ms of every CLI start. It sits in a module of its own, below board.py and layout.py, so that
both can use it without importing each other.
"""
from __future__ import annotations

try:
    from _sha1 import sha1 as sha1  # type: ignore[import-not-found]
except ImportError:  # pragma: no cover - a Python built without it
    from hashlib import sha1 as sha1

__all__ = ["sha1"]
