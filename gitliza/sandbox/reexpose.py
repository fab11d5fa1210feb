"""What a launch needs from the places the sandbox hides (the user's home, /tmp), shown again
read-only, and nothing around it (docs/security.md "The home stays hidden").

A launch needs the Python gitliza runs on and gitliza itself, the agent's executable and its
installation (a CLI's own install tree, a venv and the interpreter it was made from), PATH's
directories, the launch's own files and the files its command names (an agent's script).
These used to be "the parent of every `bin/`", so `~/bin` on PATH, or an agent started as
`-- ~/agent.sh`, showed the whole home (`~/.ssh`, `~/.aws`, shell history), and `~/.cargo/bin` or `~/.local/bin` showed
`~/.cargo/credentials.toml` or `~/.local/share`. Now each wanted directory is tried from the
widest to the narrowest (an installation's prefix, then the directory itself, then the file
itself) and the first that is safe is taken (what was named exactly, a PATH entry or a file, needs only the
first rule):
- never a hidden directory or one that holds it (the home, `/`);
- under the home, a directory straight in it (`~/.cargo`, `~/.local`) only when it is a tree of
  its own: a venv (`pyvenv.cfg`) or a language version manager's root (pyenv's shims, which the
  agent's `python3` may be, run `~/.pyenv/libexec` and its versions); deeper ones
  (`~/.cache/gitliza-agent-clis/claude-2.1.197`, `~/proj/.venv`) are an installation's own.
A PATH entry none of whose forms is safe (the home itself on PATH) is dropped, and named.
"""
from __future__ import annotations

import os
import shutil
import sys
from pathlib import Path
from typing import Mapping, Sequence

# Roots straight in the home that are one tool's installation and hold no login of the user's.
TOOL_ROOTS = frozenset({".pyenv", ".rbenv", ".nodenv", ".nvm", ".volta", ".asdf", ".bun",
                        ".deno", ".sdkman", ".goenv", ".jenv", ".plenv"})


def holds(d: Path, hidden: Sequence[Path]) -> bool:
    """`d` is a hidden directory or one of their parents (binding it would show them)."""
    return any(h == d or d in h.parents for h in hidden)


def safe(d: Path, hidden: Sequence[Path]) -> bool:
    """`d` may be shown again: it holds no hidden directory, and under one it is an
    installation's own tree rather than a directory of the user's (module docstring)."""
    if holds(d, hidden):
        return False
    for h in hidden:
        if h in d.parents:
            rel = d.relative_to(h).parts
            return len(rel) >= 2 or rel[0] in TOOL_ROOTS or (d / "pyvenv.cfg").is_file()
    return True


def _choices(path: Path) -> list[Path]:
    """What an executable (or a file) belongs to, widest first: the directory above
    node_modules, or the prefix of a bin/ (or shims/); its own directory; the file itself."""
    parts, d = path.parts, path.parent
    wide = []
    if "node_modules" in parts:
        wide.append(Path(*parts[:parts.index("node_modules")]))
    elif d.name in ("bin", ".bin", "shims"):  # shims: a version manager's (pyenv, asdf)
        wide.append(d.parent)
    return [*wide, d, path]


def _pick(choices: list[Path], hidden: Sequence[Path]) -> Path | None:
    """The widest safe choice; the last (the PATH entry, the file itself: exactly what was
    named) needs only to hold no hidden directory. bubblewrap binds what a link leads to, so
    where a choice is (or passes through) a link, where it leads must be safe too (`~/bin`
    a link to the home, or to `~/.ssh`, shows neither)."""
    def real(c: Path) -> Path:
        return Path(os.path.realpath(c))
    wide = next((c for c in choices[:-1] if safe(c, hidden) and safe(real(c), hidden)), None)
    if wide is None and choices:
        c = choices[-1]
        if not holds(c, hidden) and (real(c) == c or safe(real(c), hidden)):
            return c
    return wide


def _venv_base(prefix: Path) -> Path | None:
    """The prefix of the interpreter a venv was made from (its pyvenv.cfg's `home`, a bin/)."""
    try:
        text = (prefix / "pyvenv.cfg").read_text()
    except (OSError, UnicodeDecodeError):
        return None
    for line in text.splitlines():
        key, _, value = line.partition("=")
        if key.strip() == "home" and value.strip():
            home = Path(value.strip())
            return home.parent if home.name == "bin" else home
    return None


def needed(argv: Sequence[str], env: Mapping[str, str], files: Sequence[Path],
           hidden: Sequence[Path]) -> tuple[list[Path], list[str]]:
    """The directories (and files) to show again read-only, and the PATH entries dropped."""
    gitliza_pkg = Path(__file__).resolve().parents[1]  # gitliza itself, not its checkout
    out: list[Path] = []
    for p in (Path(sys.prefix), Path(sys.base_prefix),
              Path(os.path.realpath(sys.executable)).parent.parent):
        got = _pick([p, Path(os.path.realpath(sys.executable))], hidden)
        if got is not None:
            out.append(got)
    out.append(gitliza_pkg)
    exe = shutil.which(argv[0], path=env.get("PATH")) if argv else None
    for p in ([Path(exe), Path(os.path.realpath(exe))] if exe else []):
        got = _pick(_choices(p), hidden)
        if got is not None:
            out.append(got)
    dropped = []
    for entry in (env.get("PATH") or "").split(os.pathsep):
        if entry and os.path.isabs(entry) and os.path.isdir(entry):
            wide = _choices(Path(entry) / "x")[:-1]  # the entry's prefix, the entry; no file
            got = _pick(wide, hidden)
            if got is not None:
                out.append(got)
            elif any(h == Path(entry) or h in Path(entry).parents for h in hidden):
                dropped.append(entry)  # the home itself on PATH (or a link into it): not shown
    # The command's own files: `python3 /tmp/clone/examples/agents/planner.py` names its script
    # (and the script's directory holds what it imports), which a hidden /tmp would otherwise
    # take away, leaving the agent to die at once ("can't open file").
    named = [Path(a) for a in argv[1:] if os.path.isabs(a) and os.path.isfile(a)]
    for f in [*files, *named]:
        got = _pick([f.parent, f], hidden)
        if got is not None:
            out.append(got)
    for p in list(out):  # a venv: the interpreter it runs on, too
        base = _venv_base(p) if p.is_dir() else None
        if base is not None and (got := _pick([base], hidden)) is not None:
            out.append(got)
    # os.path, not Path: a directory this user cannot enter is simply not there (Path's raise)
    return [p for p in dict.fromkeys(out) if os.path.exists(p)], list(dict.fromkeys(dropped))


def dropped_warning(dropped: Sequence[str]) -> str:
    return (f"sandbox: PATH entr{'y' if len(dropped) == 1 else 'ies'} {', '.join(dropped)} "
            f"not shown to the agent (it holds your home; docs/security.md)")
