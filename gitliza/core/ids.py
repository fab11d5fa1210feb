"""Identifier rules. Task and agent ids become file names, branch names and directory names, so
they are kebab-case and bounded: nothing that could climb out of a directory or upset a ref."""
from __future__ import annotations

import re

from gitliza.errors import ValidationError

MAX_ID_LEN = 64
_KEBAB = re.compile(r"^[a-z0-9]+(?:-[a-z0-9]+)*$")


def check_id(value: str, what: str = "id") -> str:
    if not isinstance(value, str) or value == "":
        raise ValidationError(f"{what} must not be empty")
    if len(value) > MAX_ID_LEN:
        raise ValidationError(f"{what} {value[:20]!r}... is longer than {MAX_ID_LEN} characters")
    if not _KEBAB.match(value):
        raise ValidationError(
            f"{what} {value!r} is not kebab-case",
            hint="use lowercase letters, digits and single dashes, e.g. task-3",
        )
    return value


def is_valid_id(value: str) -> bool:
    return isinstance(value, str) and len(value) <= MAX_ID_LEN and bool(_KEBAB.match(value))
