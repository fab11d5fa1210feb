"""A model per role: the board's `models` config names each role's agent CLI and model, so that a
team runs its planner on one model, its coders on a cheaper one, and each reviewer slot of a
quorum on a different provider (pure: the text's parse and what a member gets).

    git liza config models "planner=claude:opus coder=codex:gpt-5-mini reviewer=claude:sonnet
                            reviewer.2=gemini:gemini-2.5-pro"

Words are ROLE[.SLOT]=CLI[:MODEL][,CLI[:MODEL]...], ROLE one of planner, coder, reviewer; SLOT the
member's number (`reviewer-2` is slot 2), which wins over the role's own word. More than one CLI is
an ordered fallback (`coder=claude:opus,codex`): the member's supervisor runs the first whose
provider is not refusing it (team/fallback.py; `pick` below chooses). `git liza team` follows it for every
member it starts without `--cli` or a `-- COMMAND` (gitliza/team/launch.py); the CLI's name is
checked against the known profiles there.
"""
from __future__ import annotations

import re
from typing import Sequence

from gitliza.errors import ValidationError

ROLES = ("planner", "coder", "reviewer")
_KEY = re.compile(r"^(planner|coder|reviewer)(?:\.([1-9][0-9]?))?$")
_WORD = re.compile(r"^[A-Za-z0-9][A-Za-z0-9._/@+-]{0,99}$")
# The `git liza agent` role word -> the word `models` uses.
ROLE_OF = {"planner": "planner", "coder": "coder", "code-reviewer": "reviewer",
           "code_reviewer": "reviewer"}


Choice = tuple[str, str | None]  # (cli, model or None)


def chains(text: str | None) -> dict[str, tuple[Choice, ...]]:
    """{"coder": ((cli, model), (fallback cli, model)), "reviewer.2": ...}; a bad word is one
    ValidationError."""
    out: dict[str, tuple[Choice, ...]] = {}
    for word in (text or "").split():
        key, sep, value = word.partition("=")
        m = _KEY.match(key)
        if not sep or m is None:
            raise ValidationError(f"config models: {word!r} is not ROLE[.SLOT]=CLI[:MODEL] "
                                  f"(ROLE: {', '.join(ROLES)})")
        if key in out:
            raise ValidationError(f"config models: {key} is named twice")
        out[key] = chain(value, f"config models: {word!r}")
    return out


def chain(value: str, where: str = "--cli") -> tuple[Choice, ...]:
    """`claude:opus,codex` -> (("claude", "opus"), ("codex", None)): a CLI list in order."""
    out: list[Choice] = []
    for item in value.split(","):
        cli, _, model = item.partition(":")
        for part, what in ((cli, "CLI"), (model, "model")):
            if (part or what == "CLI") and not _WORD.match(part):
                raise ValidationError(f"{where}: bad {what} {part!r}")
        if any(c == cli.lower() for c, _ in out):
            raise ValidationError(f"{where}: {cli.lower()} is named twice")
        out.append((cli.lower(), model or None))
    return tuple(out)


def chain_text(choices: Sequence[Choice]) -> str:
    return ",".join(c + (f":{m}" if m else "") for c, m in choices)


def parse(text: str | None) -> dict[str, Choice]:
    """{"planner": (cli, model or None), ...}: each word's first CLI."""
    return {k: v[0] for k, v in chains(text).items()}


def canonical(text: str | None) -> str | None:
    """The value stored: the words sorted (each fallback list in its order), or None."""
    table = chains(text)
    if not table:
        return None
    return " ".join(f"{k}={chain_text(v)}" for k, v in sorted(table.items()))


def chain_for_member(text: str | None, role: str, agent: str) -> tuple[Choice, ...]:
    """The CLIs, in order, for the member `agent` of `role` (a `git liza agent` role word)."""
    table = chains(text)
    word = ROLE_OF.get(role, role)
    slot = re.search(r"-([0-9]+)$", agent)
    if slot is not None and f"{word}.{int(slot.group(1))}" in table:
        return table[f"{word}.{int(slot.group(1))}"]
    return table.get(word, ())


def for_member(text: str | None, role: str, agent: str) -> Choice | None:
    """(cli, model) for the member `agent` of `role`: its first CLI, or None."""
    got = chain_for_member(text, role, agent)
    return got[0] if got else None


def pick(left: Sequence[float]) -> int:
    """Which CLI of a fallback list runs next, given each one's seconds left to wait (0: its
    wait is over, or it has none): the first free one (so the first is back once its reset has
    passed), else the one free the soonest (the earliest reset; the first on a tie)."""
    for i, s in enumerate(left):
        if s <= 0:
            return i
    return min(range(len(left)), key=lambda i: (left[i], i)) if left else 0
