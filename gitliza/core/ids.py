"""Rules for the names the board holds that end up as file names, refs or paths. Task and agent ids
become file names, branch names and directory names, so they are kebab-case and bounded: nothing
that could climb out of a directory or upset a ref. A branch name (config integration_branch) is
held to a conservative subset of git-check-ref-format, a spec_ref to a relative path."""
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


# The id words of each role (liza-agent.sh: `{role}-{N}`; `git liza team` names code reviewers
# `reviewer-N`), keyed by the role's value.
ROLE_ID_WORDS = {"planner": ("planner",), "coder": ("coder",),
                 "code_reviewer": ("code-reviewer", "reviewer")}


def check_agent_id_for_role(agent_id: str, role: str, registered_as: str | None = None) -> str:
    """An agent id names its role: `{role}-{N}`, optionally behind a team prefix (`m1-coder-2`),
    so that `coder-1` cannot be started as a planner. An id the board already registers with
    this role (`registered_as`: `git liza register rev-1 --role code_reviewer`) is the person's
    explicit choice, and accepted."""
    words = ROLE_ID_WORDS.get(role, ())
    if registered_as == role:
        return agent_id
    if not any(re.fullmatch(rf"(?:[a-z0-9]+(?:-[a-z0-9]+)*-)?{re.escape(w)}-[0-9]+", agent_id)
               for w in words):
        example = f"{words[0]}-1" if words else "ROLE-1"
        raise ValidationError(f"agent id {agent_id!r} does not name the {role} role "
                              f"(expected {' or '.join(w + '-N' for w in words)}: a supervisor's "
                              "id names its role, as the original liza-agent.sh requires, so "
                              "that coder-1 cannot be started as a planner)",
                              hint=f"e.g. LIZA_AGENT_ID={example}, or register the id with "
                                   f"this role first: `git liza register {agent_id} --role "
                                   f"{role}`")
    return agent_id


_REF_BAD = (" ", "~", "^", ":", "?", "*", "[", "\\", "..", "@{", "//")


def check_branch(name: str) -> str:
    """A conservative subset of git-check-ref-format, enough to keep a branch name sane."""
    if (not name or name.startswith(("-", "/", ".")) or name.endswith(("/", ".", ".lock"))
            or any(b in name for b in _REF_BAD) or any(ord(c) < 32 or ord(c) == 127 for c in name)):
        raise ValidationError(f"{name!r} is not a valid branch name")
    return name


def check_spec_ref(spec_ref: str) -> str:
    """`path/in/repo.md` with an optional `#anchor`: a relative path inside the repository."""
    path = spec_path(spec_ref)
    parts = path.split("/")
    if not path or path.startswith("/") or any(p in ("", ".", "..") for p in parts) \
            or any(ord(c) < 32 for c in spec_ref):
        raise ValidationError(f"spec_ref {spec_ref!r} is not a relative path (PATH[#anchor])")
    leaves = spec_ref_leaves(spec_ref)
    if leaves:
        raise ValidationError(leaves)
    return spec_ref


def spec_ref_leaves(spec_ref: str) -> str | None:
    """Why `spec_ref` points outside the repository (absolute, `~`, a `..` component) or is
    unfit to show (a control character), or None. Checked on every way a spec_ref comes in (the
    ops, replay, an import: core/invariants.py, core/oplimits.py), since agents are told to read
    it: `../../../../etc/passwd` was imported, verified and named in a prompt. Looser than
    `check_spec_ref`, which new `edit`s and `init`s meet, so that no board an older gitliza wrote
    with a harmless odd path (`./specs/a.md`) stops verifying."""
    path = spec_path(spec_ref)
    if path.startswith(("/", "~")) or ".." in path.split("/"):
        return f"spec_ref {spec_ref!r} leaves the repository (a relative path inside it, please)"
    if any(ord(c) < 32 or 127 <= ord(c) < 160 for c in spec_ref):
        return f"spec_ref {spec_ref!r} holds a control character"
    return None


def spec_path(spec_ref: str) -> str:
    """The file part of a spec_ref (`specs/retry.md#auth` -> `specs/retry.md`)."""
    return spec_ref.partition("#")[0]
