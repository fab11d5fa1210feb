"""The private keys that sign board commits, found once per process (docs/enforcement.md).

- An agent's key is `<git common dir>/liza/keys/<agent-id>` (OpenSSH format, mode 0600; its
  `.pub` beside it): `git liza register AGENT --generate-key` makes it, or put the private key of
  an agent registered with `--key` there. It is never in a tree or a ref: the common dir is not
  part of any commit, and no ref points at it.
- The human's key is git's own: `user.signingkey` with `gpg.format=ssh` (a private key file, or
  its `.pub` with the private key beside it; keys held only by an ssh-agent cannot sign here).

The write path (gitliza/git/store.py) asks `Signer.sign` for every commit it forms: the commit
bytes are signed in process (gitliza/core/keyring/sshsig.py), the key loaded once and kept.
"""
from __future__ import annotations

import os
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

from gitliza.core.states import HUMAN_ACTOR
from gitliza.errors import ValidationError

# cryptography (~35 ms to import) only where a key is made, loaded or used: every transition asks
# the signer, and on a board without keys it answers "none" without it.
if TYPE_CHECKING:
    from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PrivateKey

    from gitliza.core.keyring import sshsig

KEYS_DIR = ("liza", "keys")


@dataclass(frozen=True)
class Key:
    """A private key and its public half (the docstring spares dataclass an inspect call)."""

    private: Ed25519PrivateKey
    public: sshsig.PublicKey


def key_path(common: Path, agent: str) -> Path:
    return common.joinpath(*KEYS_DIR, agent)


def new_key() -> Key:
    from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PrivateKey

    from gitliza.core.keyring import sshsig
    private = Ed25519PrivateKey.generate()
    return Key(private, sshsig.public_of(private))


def save(common: Path, agent: str, key: Key) -> Path:
    """Write `key` as the agent's private key (0600, directory 0700), replacing any earlier one
    whole (temporary file + rename)."""
    from cryptography.hazmat.primitives import serialization
    path = key_path(common, agent)
    path.parent.mkdir(mode=0o700, parents=True, exist_ok=True)
    data = key.private.private_bytes(serialization.Encoding.PEM,
                                     serialization.PrivateFormat.OpenSSH,
                                     serialization.NoEncryption())
    tmp = path.with_name(f".{agent}.{os.getpid()}.tmp")
    fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
    try:
        os.write(fd, data)
    finally:
        os.close(fd)
    os.chmod(tmp, 0o600)
    os.replace(tmp, path)
    pub = path.with_name(agent + ".pub")
    pub.write_text(f"{key.public.line} {agent}\n", encoding="utf-8")
    return path


def load(path: Path) -> Key:
    """An unencrypted OpenSSH (or PEM) ed25519 private key file."""
    from cryptography.hazmat.primitives import serialization
    from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PrivateKey

    from gitliza.core.keyring import sshsig
    try:
        data = path.read_bytes()
    except OSError as e:
        raise ValidationError(f"cannot read the signing key {path}: {e.strerror}") from None
    private: object
    try:
        if b"OPENSSH PRIVATE KEY" in data:
            private = serialization.load_ssh_private_key(data, password=None)
        else:
            private = serialization.load_pem_private_key(data, password=None)
    except (ValueError, TypeError) as e:
        why = "it is protected by a passphrase" if "password" in str(e).lower() else str(e)
        raise ValidationError(f"cannot use the signing key {path}: {why}",
                              hint="gitliza signs in process: give it an unencrypted ed25519 "
                                   "key file") from None
    if not isinstance(private, Ed25519PrivateKey):
        raise ValidationError(f"the signing key {path} is not an ed25519 key",
                              hint="`ssh-keygen -t ed25519`")
    return Key(private, sshsig.public_of(private))


class Signer:
    """The keys this process signs with, per actor, each loaded on first use and kept."""

    def __init__(self, common: Path, config: object | None) -> None:
        self.common = common
        # The human's key settings, read now: the signer outlives the handle that made it (one
        # per repository per process), and keeping its Config would keep that Repository and
        # every pack file it opened for the life of the process.
        self._human_keys: tuple[str | None, str | None] | None = None if config is None else (
            _get(config, "gpg.format"), _get(config, "user.signingkey"))
        self._keys: dict[str, Key] = {}
        self._why: dict[str, str] = {}
        # (actor, key line) the write path last found this signer holds (Store.check_signable):
        # checked once, not on every transition; any change of keys here forgets it.
        self.matched: tuple[str, str] | None = None

    def add(self, actor: str, key: Key) -> None:
        """Sign as `actor` with `key` from now on (a key made before it is saved)."""
        self._keys[actor] = key
        self._why.pop(actor, None)
        self.matched = None

    def forget(self, actor: str) -> None:
        self._keys.pop(actor, None)
        self._why.pop(actor, None)
        self.matched = None

    def key_for(self, actor: str) -> Key | None:
        key = self._keys.get(actor)
        if key is not None:
            return key
        if actor == HUMAN_ACTOR:
            if actor in self._why:
                return None
            try:
                key = self._human()
            except ValidationError as e:
                self._why[actor] = str(e)
                return None
        else:
            path = key_path(self.common, actor)
            if not path.exists():  # looked for every time: `register` in another process makes it
                self._why[actor] = f"no private key at {path}"
                return None
            try:
                key = load(path)
            except ValidationError as e:
                self._why[actor] = str(e)
                return None
        if key is not None:
            self._keys[actor] = key
        return key

    def why_not(self, actor: str) -> str:
        return self._why.get(actor, f"no key for {actor}")

    def _human(self) -> Key | None:
        if self._human_keys is None:
            raise ValidationError("no git config to read user.signingkey from")
        fmt, value = self._human_keys
        if fmt != "ssh" or not value:
            raise ValidationError("the human signs with git's user.signingkey and gpg.format=ssh, "
                                  "which are not set")
        if value.startswith("key::") or value.startswith("ssh-"):
            raise ValidationError("user.signingkey is a literal public key (an ssh-agent key); "
                                  "gitliza needs the key file")
        path = Path(os.path.expanduser(value))
        if path.suffix == ".pub" and path.with_suffix("").exists():
            path = path.with_suffix("")
        return load(path)

    def sign(self, body: bytes, actor: str) -> bytes:
        """`body` (a commit object) signed by `actor`'s key, or as it is when there is none."""
        key = self.key_for(actor)
        if key is None:
            return body
        from gitliza.core.keyring import sshsig
        return sshsig.add_to_commit(body, sshsig.sign(key.private, key.public, body))


def _get(cfg: object, name: str) -> str | None:
    try:
        return str(cfg[name])  # type: ignore[index]
    except (KeyError, ValueError):
        return None


_SIGNERS: dict[Path, Signer] = {}


def signer_for(common: Path, config: object | None) -> Signer:
    """The process's signer for the repository whose git common dir is `common`."""
    found = _SIGNERS.get(common)
    if found is None:
        found = _SIGNERS[common] = Signer(common, config)
    return found
