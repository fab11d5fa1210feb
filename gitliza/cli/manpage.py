"""The manual page git-liza(1), generated from the CLI itself (the click command typer builds from
gitliza/cli/app/), so that it never lists a command or option the CLI does not have.

git hands `git liza --help` to `git help liza`, which shows the man page `git-liza`: `man` finds it
in <prefix>/share/man/man1 next to the <prefix>/bin on PATH (man-db derives its search path from
PATH), which is where the wheel installs it and where `python3 dev.py` puts it in the venv.

    python -m gitliza.cli.manpage            # print it
    python -m gitliza.cli.manpage FILE       # write it (only when the text changed)
"""
from __future__ import annotations

import sys
from pathlib import Path
from typing import Any

from gitliza import __version__

SOURCE = Path(__file__).resolve().parent.parent / "man" / "git-liza.1"

_EXIT = [("0", "success"), ("1", "validation error (bad input, an illegal transition)"),
         ("2", "concurrency conflict after the retries (nothing was changed)"),
         ("3", "git operation failed"), ("4", "inconsistent state (an invariant is broken)"),
         ("5", "missing external dependency")]
_ENV = [("LIZA_AGENT_ID", "the acting agent (the --agent default)"),
        ("LIZA_DEBUG", "show the traceback of an unexpected error"),
        ("LIZA_SKIP_HOOKS", "1 skips gitliza's client hook checks once"),
        ("NO_COLOR", "no colour on a terminal")]


def _esc(text: str) -> str:
    out = text.replace("\\", "\\e").replace("-", "\\-")
    return "\n".join(("\\&" + line) if line[:1] in (".", "'") else line
                     for line in out.splitlines())


def _params(cmd: Any) -> list[str]:
    lines = []
    for p in cmd.params:
        if getattr(p, "hidden", False):
            continue
        if p.param_type_name == "argument":
            name = (p.metavar or p.name or "").upper()
            head = f"\\fI{_esc(name)}\\fR"
        else:
            opts = ", ".join(f"\\fB{_esc(o)}\\fR" for o in [*p.opts, *p.secondary_opts])
            meta = "" if getattr(p, "is_flag", False) else f" \\fI{_esc(p.name.upper())}\\fR"
            head = opts + meta
        lines += [".TP", head, _esc(getattr(p, "help", None) or "")]
    return lines


def _commands(group: Any, prefix: str) -> list[str]:
    out: list[str] = []
    for name, cmd in group.commands.items():
        if getattr(cmd, "hidden", False):
            continue
        path = f"{prefix} {name}".strip()
        if hasattr(cmd, "commands"):
            if getattr(cmd, "invoke_without_command", False):  # `git liza usage` itself
                out += _entry(cmd, path)
            out += _commands(cmd, path)
            continue
        out += _entry(cmd, path)
    return out


def _entry(cmd: Any, path: str) -> list[str]:
    usage = " ".join(["[OPTIONS]"] + [_arg(p) for p in cmd.params
                                      if p.param_type_name == "argument"])
    return [".SS", f"\\fBgit liza {_esc(path)}\\fR {_esc(usage)}",
            _esc(cmd.help or cmd.short_help or ""), *_params(cmd)]


def _arg(p: Any) -> str:
    name = (p.metavar or p.name or "").upper()
    name = name + "..." if p.nargs == -1 else name
    return name if p.required else f"[{name}]"


def render(group: Any) -> str:
    lines = [f'.TH GIT\\-LIZA 1 "" "gitliza {__version__}" "Git Manual"', ".SH NAME",
             "git\\-liza \\- the Liza multi\\-agent blackboard on refs/liza/state",
             ".SH SYNOPSIS", "\\fBgit liza\\fR \\fICOMMAND\\fR [\\fIARGS\\fR]...", ".br",
             "\\fBgit liza\\fR \\fB\\-\\-version\\fR", ".br",
             "\\fBgit liza help\\fR [\\fICOMMAND\\fR]",
             ".SH DESCRIPTION",
             _esc("gitliza keeps the board of a team of coding agents (tasks, agents, leases, "
                  "reviews) as commits on refs/liza/state: every change is one transition, "
                  "checked against the Liza state machine and recorded with its op in the "
                  "commit message, so that the history can be replayed and verified. "
                  "Each command prints one JSON document with --json."),
             ".SH COMMANDS", *_commands(group, ""), ".SH EXIT STATUS"]
    for code, meaning in _EXIT:
        lines += [".TP", f"\\fB{code}\\fR", _esc(meaning)]
    lines.append(".SH ENVIRONMENT")
    for name, meaning in _ENV:
        lines += [".TP", f"\\fB{name}\\fR", _esc(meaning)]
    lines += [".SH SHELL COMPLETION",
              _esc("source <(git liza completion bash); likewise zsh and fish."),
              ".SH SEE ALSO", "\\fBgit\\fR(1), \\fBgithooks\\fR(5)"]
    return "\n".join(lines) + "\n"


def write(path: Path, text: str) -> bool:
    """Write `text` to `path` unless it is already there; whether it changed."""
    if path.exists() and path.read_text("utf-8") == text:
        return False
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text, "utf-8")
    return True


def main(argv: list[str]) -> int:
    from gitliza.cli import app as cli
    text = render(cli.click_group())
    if not argv:
        sys.stdout.write(text)
        return 0
    for target in argv:
        write(Path(target), text)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
