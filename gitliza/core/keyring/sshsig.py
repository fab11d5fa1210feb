"""OpenSSH signatures (SSHSIG, as `ssh-keygen -Y sign` makes them) on git commit objects.

Git's SSH signing (`gpg.format=ssh`) stores an armored SSHSIG in the commit's `gpgsig` header and
checks it with `ssh-keygen -Y verify -n git`; the signed data is the commit object without that
header. This module makes and checks exactly that, in process, for ed25519 keys (PROTOCOL.sshsig):

    blob   = "SSHSIG" u32(1) string(public key) string("git") string("") string("sha512")
             string(string("ssh-ed25519") string(64-byte signature))
    signed = "SSHSIG" string("git") string("") string("sha512") string(sha512(commit payload))

Pure: bytes in, bytes out (no files, no git). Ed25519 signatures are deterministic, so a signed
commit is still a pure function of its op, its parent and the signing key.
"""
from __future__ import annotations

import base64
import hashlib
import struct
from dataclasses import dataclass
from functools import cached_property

from cryptography.exceptions import InvalidSignature
from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PrivateKey, Ed25519PublicKey

from gitliza.errors import ValidationError

KEY_TYPE = "ssh-ed25519"
NAMESPACE = b"git"
HASH = b"sha512"
MAGIC = b"SSHSIG"
BEGIN = "-----BEGIN SSH SIGNATURE-----"
END = "-----END SSH SIGNATURE-----"
HEADER = b"gpgsig"
_WRAP = 70  # ssh-keygen's line width in the armor


def _string(data: bytes) -> bytes:
    return struct.pack(">I", len(data)) + data


def _read_string(buf: bytes, pos: int) -> tuple[bytes, int]:
    if pos + 4 > len(buf):
        raise ValueError("truncated")
    (n,) = struct.unpack_from(">I", buf, pos)
    end = pos + 4 + n
    if end > len(buf):
        raise ValueError("truncated")
    return buf[pos + 4:end], end


@dataclass(frozen=True)
class PublicKey:
    """An ed25519 public key as OpenSSH writes it: `ssh-ed25519 <base64 wire blob>`."""

    raw: bytes  # the 32-byte key

    @cached_property
    def blob(self) -> bytes:
        return _string(KEY_TYPE.encode()) + _string(self.raw)

    @cached_property
    def line(self) -> str:
        """The canonical text the board records (no comment)."""
        return f"{KEY_TYPE} {base64.b64encode(self.blob).decode()}"

    @cached_property
    def sig_head(self) -> bytes:
        """What every SSHSIG blob by this key starts with (all but the signature itself)."""
        return (MAGIC + struct.pack(">I", 1) + _string(self.blob) + _string(NAMESPACE)
                + _string(b"") + _string(HASH))

    @property
    def fingerprint(self) -> str:
        """`ssh-keygen -l`'s SHA256 fingerprint."""
        digest = hashlib.sha256(self.blob).digest()
        return "SHA256:" + base64.b64encode(digest).decode().rstrip("=")

    @classmethod
    def from_blob(cls, blob: bytes) -> PublicKey:
        kind, pos = _read_string(blob, 0)
        raw, pos = _read_string(blob, pos)
        if kind != KEY_TYPE.encode() or len(raw) != 32 or pos != len(blob):
            raise ValueError(f"not an {KEY_TYPE} key")
        return cls(raw)


def parse_public(text: str) -> PublicKey:
    """An OpenSSH public key line (`ssh-ed25519 AAAA... [comment]`), options not allowed."""
    parts = text.strip().split()
    if len(parts) < 2 or parts[0] != KEY_TYPE:
        kind = parts[0] if parts else "nothing"
        raise ValidationError(f"not an OpenSSH {KEY_TYPE} public key (it starts with {kind[:20]!r})",
                              hint="give the one line of a `.pub` file, e.g. from "
                                   "`ssh-keygen -t ed25519`")
    try:
        key = PublicKey.from_blob(base64.b64decode(parts[1], validate=True))
    except (ValueError, TypeError):
        raise ValidationError(f"malformed {KEY_TYPE} public key {parts[1][:16]!r}...") from None
    return key


def public_of(private: Ed25519PrivateKey) -> PublicKey:
    from cryptography.hazmat.primitives import serialization
    return PublicKey(private.public_key().public_bytes(serialization.Encoding.Raw,
                                                       serialization.PublicFormat.Raw))


_SIGNED_HEAD = MAGIC + _string(NAMESPACE) + _string(b"") + _string(HASH)
_SIG_TYPE = _string(KEY_TYPE.encode())


def sign(private: Ed25519PrivateKey, public: PublicKey, payload: bytes) -> str:
    """The armored SSHSIG of `payload` in namespace `git` (what `ssh-keygen -Y sign -n git`
    prints, ending with a newline)."""
    sig = private.sign(_SIGNED_HEAD + _string(hashlib.sha512(payload).digest()))
    text = base64.b64encode(public.sig_head + _string(_SIG_TYPE + _string(sig))).decode()
    lines = [text[i:i + _WRAP] for i in range(0, len(text), _WRAP)]
    return "\n".join([BEGIN, *lines, END]) + "\n"


class BadSignature(Exception):
    """A signature that does not check out (one line: why)."""


def verify(armored: bytes, payload: bytes) -> PublicKey:
    """The key that made `armored` over `payload`; BadSignature if it is not a valid ed25519
    SSHSIG in namespace `git` over exactly these bytes."""
    text = armored.decode("ascii", "replace").strip().splitlines()
    if len(text) < 3 or text[0].strip() != BEGIN or text[-1].strip() != END:
        raise BadSignature("the signature is not an armored SSH signature")
    try:
        blob = base64.b64decode("".join(line.strip() for line in text[1:-1]), validate=True)
        if blob[:6] != MAGIC or blob[6:10] != struct.pack(">I", 1):
            raise ValueError("not SSHSIG version 1")
        pos = 10
        pub_blob, pos = _read_string(blob, pos)
        namespace, pos = _read_string(blob, pos)
        _reserved, pos = _read_string(blob, pos)
        algo, pos = _read_string(blob, pos)
        sig_blob, pos = _read_string(blob, pos)
        kind, spos = _read_string(sig_blob, 0)
        sig, spos = _read_string(sig_blob, spos)
        key = PublicKey.from_blob(pub_blob)
    except (ValueError, TypeError, struct.error) as e:
        raise BadSignature(f"malformed SSH signature ({e})") from None
    if namespace != NAMESPACE:
        raise BadSignature(f"signature namespace {namespace.decode(errors='replace')!r}, not 'git'")
    if kind != KEY_TYPE.encode():
        raise BadSignature(f"signature type {kind.decode(errors='replace')!r} is not {KEY_TYPE}")
    if algo not in (b"sha512", b"sha256"):
        raise BadSignature(f"unknown hash {algo.decode(errors='replace')!r}")
    digest = hashlib.new(algo.decode(), payload).digest()
    data = MAGIC + _string(namespace) + _string(_reserved) + _string(algo) + _string(digest)
    try:
        _verifier(key.raw).verify(sig, data)
    except InvalidSignature:
        raise BadSignature(f"the signature by {key.fingerprint} does not match the commit "
                           "(edited after signing)") from None
    return key


_VERIFIERS: dict[bytes, Ed25519PublicKey] = {}


def _verifier(raw: bytes) -> Ed25519PublicKey:
    """The loaded key, once per key: a replay checks thousands of commits by a handful of keys."""
    found = _VERIFIERS.get(raw)
    if found is None:
        if len(_VERIFIERS) > 1024:
            _VERIFIERS.clear()
        found = _VERIFIERS[raw] = Ed25519PublicKey.from_public_bytes(raw)
    return found


# -- the commit object -----------------------------------------------------------------------------
def add_to_commit(body: bytes, armored: str) -> bytes:
    """`body` (a commit object) with `armored` as its gpgsig header, placed as git places it: at
    the end of the header, every line after the first indented by one space."""
    head, sep, rest = body.partition(b"\n\n")
    lines = armored.encode().rstrip(b"\n").split(b"\n")
    sig = b"\n".join([HEADER + b" " + lines[0], *(b" " + line for line in lines[1:])])
    return head + b"\n" + sig + sep + rest


def split_commit(body: bytes) -> tuple[bytes | None, bytes]:
    """(the armored gpgsig, the payload it signs: the commit without that header); (None, body)
    for an unsigned commit."""
    end = body.find(b"\n\n")
    head = body if end < 0 else body[:end + 1]
    if b"\n" + HEADER + b" " not in b"\n" + head:
        return None, body
    out: list[bytes] = []
    sig: list[bytes] = []
    taking = False
    for line in head.split(b"\n")[:-1] if head.endswith(b"\n") else head.split(b"\n"):
        if taking and line.startswith(b" "):
            sig.append(line[1:])
            continue
        taking = line.startswith(HEADER + b" ")
        if taking:
            sig.append(line[len(HEADER) + 1:])
        else:
            out.append(line)
    payload = b"\n".join(out) + b"\n" + (b"" if end < 0 else body[end + 1:])
    return b"\n".join(sig) + b"\n", payload


def commit_signer(body: bytes) -> tuple[str | None, str | None]:
    """(the public key line that signed the commit `body`, None) for a valid signature; (None,
    why) for an invalid one; (None, None) for an unsigned commit."""
    armored, payload = split_commit(body)
    if armored is None:
        return None, None
    try:
        return verify(armored, payload).line, None
    except BadSignature as e:
        return None, str(e)
