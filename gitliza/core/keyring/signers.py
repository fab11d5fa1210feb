"""Who may sign a board commit: the actors' keys on the board, the signatures policy, and the
allowed-signers file stock git checks them with (docs/enforcement.md "Signed board commits").

Each agent's keys are on its entity (`Agent.keys`), the human's in the config (`human_keys`); the
current key is the one without `until`. A commit is judged against the board *before* it (its
parent), so a rotation or a revocation never invalidates the commits made before it: they were
made under the key that was current then. The one exception is an agent registering itself with
a key: it has no key before that commit, so the key it introduces must sign it (proof that the
registrant holds it); so does the human's first key (`rekey human` while the human has none).

The policy (`config.signatures`: off | warn | required) that applies to a commit is the stricter
of the board's before and after it: the commit that switches `required` on must itself be signed,
and so must the one that switches it off.
"""
from __future__ import annotations

from typing import Any, Iterator

from gitliza.core.board import Board
from gitliza.core.model import Config, SigningKey
from gitliza.core.states import HUMAN_ACTOR
from gitliza.errors import PermissionDenied, ValidationError

OFF, WARN, REQUIRED = "off", "warn", "required"
POLICIES = (OFF, WARN, REQUIRED)


def check_policy_word(value: Any) -> str:
    word = str(value).strip().lower()
    if word not in POLICIES:
        raise ValidationError(f"config signatures must be one of {', '.join(POLICIES)}, "
                              f"got {value!r}")
    return word


def check_policy_change(config: Config, actor: str, values: dict[str, Any]) -> None:
    """Only the human changes the signatures policy; its keys change only by `rekey`; and
    `required` needs a human key first, or nobody could ever sign the human's next op."""
    if "human_keys" in values:
        raise ValidationError("the human's keys are set with `git liza rekey human --key KEY`, "
                              "not with config")
    if actor != HUMAN_ACTOR:
        raise PermissionDenied(f"the signatures policy is the human's to set, not {actor}'s")
    if values.get("signatures") == REQUIRED and current(config.human_keys) is None:
        raise ValidationError("signatures = required needs the human's key on the board first",
                              hint="`git liza rekey human --key ~/.ssh/id_ed25519.pub` (and "
                                   "`git config user.signingkey` with `gpg.format ssh`)")


def policy(before: Board | None, after: Board) -> str:
    """The stricter of the policies before and after a commit."""
    a = after.config.signatures if after.initialized else OFF
    b = before.config.signatures if before is not None and before.initialized else OFF
    return max(a, b, key=POLICIES.index)


def current(keys: tuple[SigningKey, ...]) -> SigningKey | None:
    for k in reversed(keys):
        if k.until is None:
            return k
    return None


def keys_of(board: Board, actor: str) -> tuple[SigningKey, ...]:
    if actor == HUMAN_ACTOR:
        return board.config.human_keys if board.initialized else ()
    agent = board.agent(actor)
    return () if agent is None else agent.keys


def expected(before: Board | None, after: Board, op: Any) -> SigningKey | None:
    """The key that must sign `op`'s commit (None: the actor has none)."""
    name = getattr(op, "NAME", "")
    if name == "register" and getattr(op, "agent", None) == op.actor:
        return current(keys_of(after, op.actor))
    if before is None and name == "import":
        return current(keys_of(after, op.actor))  # a genesis: its board brings the keys
    if name == "rekey" and op.agent == op.actor and \
            (before is None or current(keys_of(before, op.actor)) is None):
        return current(keys_of(after, op.actor))  # the human's first key introduces itself
    return None if before is None else current(keys_of(before, op.actor))


def owners(board: Board) -> Iterator[tuple[str, SigningKey]]:
    """(actor, key) for every key on the board, retired ones included."""
    if board.initialized:
        for k in board.config.human_keys:
            yield HUMAN_ACTOR, k
    for aid in board.keys("agents"):
        agent = board.agent(aid)
        if agent is not None:
            for k in agent.keys:
                yield aid, k


def canonical_key(text: str, board: Board, actor: str | None = None) -> str:
    """`text` (an OpenSSH ed25519 public key line) as the board records it, refused if another
    actor already has (or had) it: a key names one actor, or a signature would prove nothing."""
    from gitliza.core.keyring.sshsig import parse_public
    line = parse_public(text).line
    for owner, k in owners(board):
        if k.key == line and owner != actor:
            raise ValidationError(f"that key is already {owner}'s (keys are one per actor)",
                                  hint="generate a key for this agent: `ssh-keygen -t ed25519`")
    return line


def rotate(keys: tuple[SigningKey, ...], new: str | None, now: str) -> tuple[SigningKey, ...]:
    """Retire the current key at `now` and (unless revoking) make `new` current from `now`."""
    out = tuple(k if k.until is not None else SigningKey(k.key, k.since, now) for k in keys)
    if new is not None:
        if any(k.key == new for k in keys):
            raise ValidationError("that key was already used by this actor; a retired key "
                                  "never comes back", hint="generate a new key")
        out += (SigningKey(key=new, since=now),)
    return out


def judge(before: Board | None, after: Board, op: Any, signer: str | None,
          bad: str | None = None) -> str | None:
    """Why `op`'s commit, signed by the key line `signer` (None: unsigned, or `bad` says why its
    signature is invalid), is not signed by its actor's key; None when it is."""
    from gitliza.core.keyring.sshsig import parse_public
    actor = op.actor
    want = expected(before, after, op)
    if bad is not None:
        return f"bad signature on {actor}'s commit: {bad}"
    if signer is None:
        have = f" (key {_fp(want.key)})" if want is not None else " (no key on the board)"
        return f"unsigned: {actor}{have} did not sign it"
    if want is not None and signer == want.key:
        return None
    fp = parse_public(signer).fingerprint
    board = before if before is not None else after
    for k in keys_of(board, actor):
        if k.key == signer and k.until is not None:
            return f"signed by {actor}'s revoked key {fp} (retired at {k.until})"
    mine = f"{actor}'s key {_fp(want.key)}" if want is not None else \
        f"{actor}, who has no key on the board"
    for owner, k in owners(board):
        if k.key == signer:
            return f"signed by {owner}'s key {fp}, not by {mine}"
    return f"signed by an unknown key {fp}, not by {mine}"


def _fp(line: str) -> str:
    from gitliza.core.keyring.sshsig import parse_public
    return parse_public(line).fingerprint


def allowed_signers(board: Board) -> str:
    """An allowed-signers file (ssh-keygen(1) ALLOWED SIGNERS) for `git -c
    gpg.ssh.allowedSignersFile=FILE verify-commit`: every key on the board under its actor's id,
    limited to namespace git, a retired key valid only until it was retired (git checks a commit
    at its committer date, which is the op's time)."""
    lines = []
    for owner, k in owners(board):
        opts = 'namespaces="git"'
        if k.until is not None:
            opts += f',valid-before="{_stamp(k.until)}"'
        lines.append(f"{owner} {opts} {k.key}")
    return "".join(line + "\n" for line in lines)


def _stamp(ts: str) -> str:
    """2026-01-02T03:04:05Z -> 20260102030405Z (ssh-keygen's time format, UTC)."""
    digits = "".join(c for c in ts if c.isdigit())[:14]
    return digits + "Z"
