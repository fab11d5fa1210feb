"""Signing keys: `register --key/--generate-key`, `rekey`, `allowed-signers` (docs/enforcement.md
"Signed board commits"), and `seal`, where a new clone's trust starts."""
from __future__ import annotations

from pathlib import Path

from gitliza.cli.commands import Env
from gitliza.cli.commands.board import report
from gitliza.core.states import HUMAN_ACTOR
from gitliza.errors import ValidationError


def key_text(value: str) -> str:
    """`--key`: the public key itself (`ssh-ed25519 AAAA...`) or a file holding it."""
    if value.strip().startswith("ssh-"):
        return value.strip()
    path = Path(value).expanduser()
    try:
        text = path.read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError) as e:
        raise ValidationError(f"--key {value}: neither a public key nor a readable file "
                              f"({getattr(e, 'strerror', None) or e})") from None
    lines = [line for line in text.splitlines() if line.strip() and not line.startswith("#")]
    if not lines:
        raise ValidationError(f"--key {value}: the file is empty")
    if "PRIVATE KEY" in text:
        raise ValidationError(f"--key {value} is a private key: give its public half (.pub)")
    return lines[0].strip()


def register(env: Env, agent_id: str, role: str, terminal: str | None, key: str | None,
             generate_key: bool) -> int:
    """Register an agent; with a key given, or generated for an agent on this machine (always
    when the board's signatures policy is on: it could not sign otherwise)."""
    from gitliza.core.ops.goal import Register
    from gitliza.core.agents.wake import parse_role
    from gitliza.git import signing
    # The role words `git liza agent` takes (code-reviewer, code_reviewer, reviewer) mean
    # the same here; anything else reaches the op, which refuses it.
    parsed = parse_role(role)
    role = parsed.value if parsed else role
    if key is not None and generate_key:
        raise ValidationError("give --key or --generate-key, not both")
    liza = env.liza()
    board = liza.board()
    known = board.agent(agent_id) if board.initialized else None
    if known is not None and known.role.value == role and key is None and not generate_key:
        # Registering what is already there is done, not a failure (a script, a Quickstart run
        # twice); a different role or a key is still the op's to judge.
        env.out.result({"agent": agent_id, "role": role, "registered": known.registered,
                        "already": True},
                       f"{agent_id} is already registered as {role}; nothing changed")
        return 0
    text = None if key is None else key_text(key)
    made = None
    if text is None and (generate_key or _policy_on(liza)):
        made = signing.new_key()
        text = made.public.line
        liza.store.signer().add(agent_id, made)  # it signs its own registration
    try:
        done = liza.do(Register, agent=agent_id, role=role, terminal=terminal, key=text)
    except BaseException:
        if made is not None:
            liza.store.signer().forget(agent_id)
        raise
    extra = None
    if made is not None:
        path = signing.save(liza.store.signer().common, agent_id, made)
        extra = {"private_key": str(path), "key": made.public.line}
        if not env.json:
            env.out.notice(f"{agent_id}'s private key: {path} (mode 0600; never committed)")
    return report(env, done, extra)


def seal(env: Env, every: int | None = None) -> int:
    """The human seals the history up to the tip (gitliza/services/verify/seals.py). `every`:
    only when the newest seal is `every` commits or more below the tip (for cron)."""
    from gitliza.core.ops.keys import Seal
    liza = env.liza()
    if every is not None:
        if every < 1:
            raise ValidationError(f"--every must be at least 1, got {every}")
        from gitliza.services.verify.seals import since_newest
        tip = liza.store.tip()
        above = None if tip is None else since_newest(liza.store.repo, tip, every)
        if above is not None:
            env.out.result({"sealed": None, "since_newest_seal": above},
                           f"the newest seal is {above} commit(s) below the tip (fewer than "
                           f"{every}): nothing to seal")
            return 0
    return report(env, liza.do(Seal))


def rekey(env: Env, agent_id: str, key: str | None, generate_key: bool, revoke: bool) -> int:
    """The human rotates (`--key`, `--generate-key`) or revokes (`--revoke`) an actor's key."""
    from gitliza.core.ops.keys import Rekey
    from gitliza.git import signing
    if (key is not None) + generate_key + revoke != 1:
        raise ValidationError("rekey needs exactly one of --key KEY, --generate-key, --revoke")
    if generate_key and agent_id == HUMAN_ACTOR:
        raise ValidationError("the human's key is git's user.signingkey: give its public key "
                              "with --key")
    liza = env.liza()
    made = signing.new_key() if generate_key else None
    text = made.public.line if made is not None else None if key is None else key_text(key)
    done = liza.do(Rekey, agent=agent_id, key=text, revoke=revoke)
    signer = liza.store.signer()
    extra = None
    if made is not None:
        path = signing.save(signer.common, agent_id, made)
        signer.add(agent_id, made)
        extra = {"private_key": str(path), "key": made.public.line}
    elif agent_id != HUMAN_ACTOR:
        # The old private key signs nothing any more: moved aside, not deleted (nothing is lost).
        old = signing.key_path(signer.common, agent_id)
        if old.exists():
            old.rename(old.with_name(f"{agent_id}.retired-{done.commit[:12]}"))
        signer.forget(agent_id)
    return report(env, done, extra)


def allowed_signers(env: Env, at: str | None, output: Path | None) -> int:
    """Print (or write to `output`) the allowed-signers file of every key on the board."""
    from gitliza.core.keyring.signers import allowed_signers as render
    text = render(env.liza().board(at))
    if output is not None:
        from gitliza.atomic import write
        write(output.resolve().parent, output.name, text.encode())
        env.out.result({"file": str(output), "keys": text.count("\n")},
                       f"wrote {text.count(chr(10))} key(s) to {output}")
        return 0
    if env.json:
        env.out.json({"allowed_signers": text})
    else:
        import sys
        sys.stdout.write(text)
    return 0


def _policy_on(liza: object) -> bool:
    board = liza.board()  # type: ignore[attr-defined]
    return bool(board.initialized and board.config.signatures != "off")
