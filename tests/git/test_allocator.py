"""glibc's malloc set for a long-lived process (gitliza/git/allocator.py), as a supervisor sets it:
a large block freed goes back to the system instead of raising the threshold under which the next
ones stay in the heap. Each case in a fresh interpreter (the settings are the process's)."""
from __future__ import annotations

import subprocess
import sys

import pytest

PROBE = """
import ctypes, sys
from gitliza.git import allocator
if sys.argv[1] == "set":
    assert allocator.set_for_long_life()
libc = ctypes.CDLL(None)
class Info(ctypes.Structure):
    _fields_ = [(n, ctypes.c_size_t) for n in ("arena", "ordblks", "smblks", "hblks", "hblkhd",
                                                  "usmblks", "fsmblks", "uordblks", "fordblks",
                                                  "keepcost")]
libc.mallinfo2.restype = Info
libc.malloc.restype = ctypes.c_void_p
libc.malloc.argtypes = [ctypes.c_size_t]
libc.free.argtypes = [ctypes.c_void_p]
libc.free(libc.malloc(4 << 20))  # a 4 MB buffer freed: by default the threshold rises past it
mapped = libc.mallinfo2().hblkhd
block = libc.malloc(512 << 10)  # then a 512 KB one: mapped on its own, or in the heap
print(libc.mallinfo2().hblkhd - mapped >= 512 << 10)
"""


def _mapped_apart(mode: str) -> bool:
    r = subprocess.run([sys.executable, "-c", PROBE, mode], capture_output=True, text=True)
    assert r.returncode == 0, r.stderr
    return r.stdout.strip() == "True"


def test_large_blocks_are_mapped_apart_whatever_was_freed_before() -> None:
    try:
        import ctypes
        ctypes.CDLL(None).gnu_get_libc_version  # noqa: B018
    except (OSError, AttributeError):
        pytest.skip("not glibc")
    assert not _mapped_apart("default")  # glibc's own: the 512 KB block lands in the heap
    assert _mapped_apart("set")
