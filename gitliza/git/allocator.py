"""glibc's malloc, set for a process that lives for days (a supervisor, the web board, the MCP
server: git/longlived.py).

Left to its defaults, glibc's allocator grew a busy supervisor's heap by ~40 KB per task it
worked on, most of it free memory it kept (the free part of the arenas went from 1-2 MB
to 5-7 MB over 200 tasks, the part in use moved little). Two defaults do it: the threshold above
which a block is mapped on its own (and given back when freed) rises with every such block freed,
up to 32 MB, so the large buffers of each task (a subprocess's output, a pack read, a merge's trees)
end up in the heap, interleaved with small long-lived blocks that keep its pages; and every thread
that allocates while another holds an arena gets an arena of its own (up to 8 per core), each
fragmenting apart (the lease keeper, the output pumps and the usage reader start per agent
session). Fixed here, as the MALLOC_MMAP_THRESHOLD_, MALLOC_TRIM_THRESHOLD_ and MALLOC_ARENA_MAX
environment variables would at start-up: blocks of 128 KB and more are mapped on their own, free
memory past 128 KB at the top of the heap is given back, at most two arenas. A C library that is
not glibc is left as it is.
"""
from __future__ import annotations

import ctypes

M_TRIM_THRESHOLD = -1  # glibc's malloc.h
M_MMAP_THRESHOLD = -3
M_ARENA_MAX = -8
SETTINGS = ((M_MMAP_THRESHOLD, 128 * 1024), (M_TRIM_THRESHOLD, 128 * 1024), (M_ARENA_MAX, 2))


def set_for_long_life() -> bool:
    """Set glibc's malloc as above; whether it took (False: not glibc, or refused)."""
    try:
        libc = ctypes.CDLL(None)
        gnu = libc.gnu_get_libc_version  # glibc only: musl and others have no such symbol
        mallopt = libc.mallopt
    except (OSError, AttributeError):
        return False
    del gnu
    mallopt.argtypes = [ctypes.c_int, ctypes.c_int]
    mallopt.restype = ctypes.c_int
    return all(mallopt(param, value) == 1 for param, value in SETTINGS)
