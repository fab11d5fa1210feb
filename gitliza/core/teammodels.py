"""A model per role: the board's `models` config names each role's agent CLI and model, so that a
team runs its planner on one model, its coders on a cheaper one, and each reviewer slot of a
quorum on a different provider (pure: the text's parse and what a member gets).

    git liza config models "planner=claude:opus coder=codex:gpt-5-mini reviewer=claude:sonnet
                            reviewer.2=gemini:gemini-2.5-pro"

Words are ROLE[.SLOT]=CLI[:MODEL], ROLE one of planner, coder, reviewer; SLOT the member's number
(`reviewer-2` is slot 2), which wins over the role's own word. `git liza team` follows it for every
member it starts without `--cli` or a `-- COMMAND` (gitliza/team/launch.py); the CLI's name is
checked against the known profiles there.
"""
from __future__ import annotations

import re

from gitliza.errors import ValidationError

ROLES = ("planner", "coder", "reviewer")
_KEY = re.compile(r"^(planner|coder|reviewer)(?:\.([1-9][0-9]?))?$")
_WORD = re.compile(r"^[A-Za-z0-9][A-Za-z0-9._/@+-]{0,99}$")
# The `git liza agent` role word -> the word `models` uses.
ROLE_OF = {"planner": "planner", "coder": "coder", "code-reviewer": "reviewer",
           "code_reviewer": "reviewer"}


def parse(text: str | None) -> dict[str, tuple[str, str | None]]:
    """{"planner": (cli, model or None), "reviewer.2": ...}; a bad word is one ValidationError."""
    out: dict[str, tuple[str, str | None]] = {}
    for word in (text or "").split():
        key, sep, value = word.partition("=")
        m = _KEY.match(key)
        if not sep or m is None:
            raise ValidationError(f"config models: {word!r} is not ROLE[.SLOT]=CLI[:MODEL] "
                                  f"(ROLE: {', '.join(ROLES)})")
        cli, _, model = value.partition(":")
        for part, what in ((cli, "CLI"), (model, "model")):
            if (part or what == "CLI") and not _WORD.match(part):
                raise ValidationError(f"config models: {word!r}: bad {what} {part!r}")
        if key in out:
            raise ValidationError(f"config models: {key} is named twice")
        out[key] = (cli.lower(), model or None)
    return out


def canonical(text: str | None) -> str | None:
    """The value stored: the words sorted, or None for an empty one."""
    table = parse(text)
    if not table:
        return None
    return " ".join(f"{k}={c}" + (f":{m}" if m else "") for k, (c, m) in sorted(table.items()))


def for_member(text: str | None, role: str, agent: str) -> tuple[str, str | None] | None:
    """(cli, model) for the member `agent` of `role` (a `git liza agent` role word), or None."""
    table = parse(text)
    word = ROLE_OF.get(role, role)
    slot = re.search(r"-([0-9]+)$", agent)
    if slot is not None and f"{word}.{int(slot.group(1))}" in table:
        return table[f"{word}.{int(slot.group(1))}"]
    return table.get(word)
