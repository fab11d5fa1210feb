"""One pack file and its index, written and read in git's format (gitformat-pack(5)).

An object's id is the hash of its content, however it is stored, so the objects of a transition
can go into one pack, two files, instead of one loose file each:

- the pack: "PACK", version 2, the count, then each object as its type-and-size header and its
  zlib-compressed body (never a delta), then the sha1 of all that;
- the index, version 2: the 256-entry fan-out, the sorted ids, the CRC32 of each packed entry,
  the offsets, the pack's sha1 and the index's own sha1.

The index is written under a temporary name and renamed into objects/pack/ after the pack is
complete, so a reader (git or libgit2, which rescan the pack directory for indexes when an object
is missing, and never use a pack without its index) never sees one without the other. A write
that fails (a full disk) removes what it wrote. `read_entries` gives back the packed entries of a
pack of this kind, which packs.py copies, without recompressing, into a merged pack. When to write
and merge packs is packs.py's business; this module only knows the bytes.
"""
from __future__ import annotations

import contextlib
import os
import struct
import threading
import zlib
from typing import Iterable

from gitliza.core.hashing import sha1

TYPE_CODES = {b"commit": 1, b"tree": 2, b"blob": 3, b"tag": 4}
LEVEL = 1  # zlib level of blobs and commits (TOML and text: about half their size)

Obj = tuple[bytes, bytes, bytes]  # (raw id, kind, body)


def temp_paths(pack_dir: str, tag: str) -> tuple[str, str]:
    """Where a pack and its index are written before being renamed into place, per process and
    thread (a supervisor's main and heartbeat threads may write the same pack).

    The names end in no extension git knows (named as git's own `tmp_pack_*`/`tmp_idx_*`):
    `git gc` (so `maintenance run`) deletes every `<name>.idx` without a `<name>.pack` in each
    pack directory it reads, alternates included, since it takes one for a leftover of a deleted
    pack. A temporary index named `tmp_<x>.idx`, written and not yet renamed, was deleted under
    the writer, whose rename then failed with ENOENT (a transition failed with "cannot
    write objects to .git/liza-objects"). Only the final names carry .pack and .idx, and a
    .pack without its .idx, the state while a pack is written, is never deleted by git."""
    own = f"{tag}_{os.getpid()}_{threading.get_ident()}"
    return os.path.join(pack_dir, f"tmp_pack_{own}"), os.path.join(pack_dir, f"tmp_idx_{own}")


def object_id(kind: bytes, body: bytes) -> bytes:
    digest: bytes = sha1(b"%s %d\0" % (kind, len(body)) + body).digest()
    return digest


def _entry(kind: bytes, body: bytes) -> bytes:
    n = len(body)
    c = (TYPE_CODES[kind] << 4) | (n & 15)
    n >>= 4
    head = bytearray()
    while n:
        head.append(c | 0x80)
        c = n & 0x7F
        n >>= 7
    head.append(c)
    # Trees are mostly 20-byte ids, which do not compress: stored (level 0) costs a tenth.
    return bytes(head) + zlib.compress(body, 0 if kind == b"tree" else LEVEL)


def write(objects_dir: str, objs: Iterable[Obj], *, durable: bool = False) -> str | None:
    """Write `objs` as one pack (None when there is nothing to write); returns its name.
    `durable`: both files are on the disk (fsync) before the index is renamed into place."""
    return write_entries(objects_dir, [(raw, _entry(kind, body)) for raw, kind, body in objs],
                         durable=durable)


def write_entries(objects_dir: str, entries: list[tuple[bytes, bytes]], *,
           durable: bool = False) -> str | None:
    """A pack of already encoded entries (raw id, header + compressed body), ids unique."""
    if not entries:
        return None
    parts = [b"PACK" + struct.pack(">II", 2, len(entries))]
    index = []
    offset = 12
    for raw, data in entries:
        index.append((raw, zlib.crc32(data), offset))
        parts.append(data)
        offset += len(data)
    if offset >= 1 << 31:  # pragma: no cover - would need 64-bit offsets: git's own repack
        raise ValueError("pack too large for 32-bit offsets")
    body = b"".join(parts)
    pack_sha: bytes = sha1(body).digest()
    index.sort()
    fanout = [0] * 256
    for raw, _crc, _off in index:
        fanout[raw[0]] += 1
    total = 0
    for i in range(256):
        total += fanout[i]
        fanout[i] = total
    n = len(index)
    idx = b"".join([b"\xfftOc", struct.pack(">I", 2), struct.pack(">256I", *fanout),
                    b"".join(r for r, _c, _o in index),
                    struct.pack(f">{n}I", *(c for _r, c, _o in index)),
                    struct.pack(f">{n}I", *(o for _r, _c, o in index)), pack_sha])
    idx += sha1(idx).digest()
    name = "pack-" + pack_sha.hex()
    pack_dir = os.path.join(objects_dir, "pack")
    final = os.path.join(pack_dir, name)
    tmp_pack, tmp_idx = temp_paths(pack_dir, name[5:])
    # git and libgit2 find packs by their index, never a .pack alone, so the pack can be written
    # under its own name (one rename fewer: a rename is most of a transition's cost on a disk);
    # only if that name exists (another writer of the same objects, perhaps still writing) does
    # it go through a temporary file too, renamed over it whole.
    try:
        created = _put(final + ".pack", body + pack_sha, exclusive=True, sync=durable)
    except FileNotFoundError:  # a fresh repository without objects/pack yet
        os.makedirs(pack_dir, exist_ok=True)
        created = _put(final + ".pack", body + pack_sha, exclusive=True, sync=durable)
    try:
        if created is None:
            _put(tmp_pack, body + pack_sha, sync=durable)
            os.replace(tmp_pack, final + ".pack")
        _put(tmp_idx, idx, sync=durable)
        os.replace(tmp_idx, final + ".idx")  # the pack appears: whole, or not at all
    except OSError:
        # A full disk, a read-only mount: leave nothing half-written (a pack without its index
        # is garbage to `git count-objects`).
        if created is not None:
            _unlink_own(final + ".pack", created)
        for path in (tmp_pack, tmp_idx):
            with contextlib.suppress(OSError):
                os.unlink(path)
        raise
    return name


def _put(path: str, data: bytes, exclusive: bool = False, sync: bool = False) -> int | None:
    """Write `data` to a new file at `path` (`sync`: and to the disk); its inode number, or None
    if `exclusive` and it exists. A failed write (a full disk) removes the file it created."""
    try:
        fd = os.open(path, os.O_WRONLY | os.O_CREAT | (os.O_EXCL if exclusive else os.O_TRUNC),
                     0o444)
    except FileExistsError:
        if not exclusive:
            raise
        return None
    ino = os.fstat(fd).st_ino
    try:
        view = memoryview(data)
        while view:
            view = view[os.write(fd, view):]
        if sync:
            os.fsync(fd)
    except OSError:
        _unlink_own(path, ino)
        raise
    finally:
        os.close(fd)
    return ino


def _unlink_own(path: str, ino: int) -> None:
    """Remove `path` if it is still the file we created (another writer of the same objects may
    have renamed its complete copy over it)."""
    try:
        if os.stat(path).st_ino == ino:
            os.unlink(path)
    except OSError:
        pass


def read_entries(base: str) -> list[tuple[bytes, bytes]] | None:
    """The entries of a pack (raw id, packed bytes), or None if it is gone or holds deltas."""
    try:
        with open(base + ".idx", "rb") as f:
            idx = f.read()
        with open(base + ".pack", "rb") as f:
            pack = f.read()
    except FileNotFoundError:
        return None
    if idx[:8] != b"\xfftOc\x00\x00\x00\x02" or pack[:4] != b"PACK":
        return None
    try:
        n = struct.unpack_from(">I", idx, 8 + 255 * 4)[0]
        # A pack cut short (a crash, a full disk) is not copied: its bytes would be trusted and
        # its original removed. Left alone, it is git's to judge (`git fsck`).
        if len(idx) != 1072 + 28 * n or struct.unpack_from(">I", pack, 8)[0] != n:
            return None
        ids_at = 8 + 1024
        offs_at = ids_at + 24 * n  # past the ids (20 bytes each) and the CRCs (4 bytes each)
        offsets = struct.unpack_from(f">{n}I", idx, offs_at)
        if any(o & 0x80000000 for o in offsets):
            return None  # 64-bit offsets: a big pack, not one of ours
        by_offset = sorted((offsets[i], idx[ids_at + 20 * i: ids_at + 20 * i + 20])
                           for i in range(n))
        end = len(pack) - 20
        out = []
        for k, (off, raw) in enumerate(by_offset):
            stop = by_offset[k + 1][0] if k + 1 < n else end
            if not 12 <= off < stop <= end:
                return None
            if (pack[off] >> 4) & 7 not in (1, 2, 3, 4):
                return None  # a delta: a pack git wrote, left to git
            out.append((raw, pack[off:stop]))
    except (struct.error, IndexError):
        return None
    return out
