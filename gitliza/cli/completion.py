"""`git liza completion bash|zsh|fish`: shell completion scripts for `git liza` (and `gitliza`).

The candidates come from typer's own completion machinery (the bash protocol: COMP_WORDS and
COMP_CWORD in, one candidate per line out, asked with _GIT_LIZA_COMPLETE=complete_bash), so a new
command or option completes without touching this file. The scripts plug into git's completion:
git's bash completion calls `_git_liza` for `git liza ...`, zsh's `_git` calls `_git-liza`, and
fish gets a `complete -c git` rule for the `liza` subcommand. A normal start pays one environment
lookup for this (gitliza/cli/fastpath.py hands completion requests to typer).
"""
from __future__ import annotations

from typing import Any

from gitliza.errors import ValidationError

# The words after `git liza` (or `gitliza`) go to git-liza as COMP_WORDS with the program first.
_BASH = r"""# gitliza completion for bash (git liza ... and gitliza ...); source it from ~/.bashrc:
#   source <(git liza completion bash)
__gitliza_candidates() {  # $1: current word index among the words after the program name
    local IFS=$'\n'
    COMP_WORDS="git-liza ${__gitliza_words[*]}" COMP_CWORD="$1" \
        _GIT_LIZA_COMPLETE=complete_bash git-liza 2>/dev/null
}
_git_liza() {  # called by git's own bash completion for `git liza`
    local __gitliza_words=("${words[@]:2}")
    local IFS=$'\n'
    COMPREPLY=($(__gitliza_candidates "$((cword - 1))"))
}
_gitliza() {
    local __gitliza_words=("${COMP_WORDS[@]:1}")
    local IFS=$'\n'
    COMPREPLY=($(__gitliza_candidates "$COMP_CWORD"))
}
complete -o default -F _gitliza gitliza git-liza
"""

_ZSH = r"""#compdef gitliza git-liza
# gitliza completion for zsh; put it on $fpath as _gitliza, or: source <(git liza completion zsh)
__gitliza_complete() {  # $1: index of the current word among the words after the program name
    local -a candidates
    candidates=("${(@f)$(COMP_WORDS="git-liza ${(j: :)@[2,-1]}" COMP_CWORD="$1" \
        _GIT_LIZA_COMPLETE=complete_bash git-liza 2>/dev/null)}")
    compadd -a candidates
}
_git-liza() {  # called by zsh's _git for `git liza` (words: liza ARGS..., CURRENT: cursor)
    __gitliza_complete "$((CURRENT - 1))" "${words[@]:1}"
}
_gitliza() {
    __gitliza_complete "$((CURRENT - 1))" "${words[@]:1}"
}
compdef _gitliza gitliza git-liza 2>/dev/null
"""

_FISH = r"""# gitliza completion for fish; save as ~/.config/fish/completions/gitliza.fish, or:
#   git liza completion fish | source
function __gitliza_complete
    set -l tokens (commandline -opc)
    set -l current (commandline -ct)
    # drop `git liza` / `gitliza`: what is left are the words after the program name
    if test "$tokens[1]" = git
        set tokens $tokens[3..-1]
    else
        set tokens $tokens[2..-1]
    end
    COMP_WORDS="git-liza $tokens $current" COMP_CWORD=(math (count $tokens) + 1) \
        _GIT_LIZA_COMPLETE=complete_bash git-liza 2>/dev/null
end
complete -c git -n '__fish_seen_subcommand_from liza' -f -a '(__gitliza_complete)'
complete -c gitliza -f -a '(__gitliza_complete)'
complete -c git-liza -f -a '(__gitliza_complete)'
"""

SCRIPTS = {"bash": _BASH, "zsh": _ZSH, "fish": _FISH}


def script(env: Any, shell: str) -> int:
    text = SCRIPTS.get(shell)
    if text is None:
        raise ValidationError(f"unknown shell {shell!r} (bash, zsh or fish)")
    env.out.line(text.rstrip("\n"))
    return 0
