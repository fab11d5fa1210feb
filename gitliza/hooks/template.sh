#!/bin/sh
# gitliza-hook-shim v4 c734ca2c-fda1-4d0c-ac1b-9f4f0fa024fb
# Installed by `git liza hooks install`; do not edit (docs/hooks-install.md). sh parses a script as
# it runs it: the common cases are decided in the first lines and the rest is never read.
# start templated (the installer fills these three lines)
HOOK='__HOOK__'
INSTALL_PYTHON='__INSTALL_PYTHON__'
SKIP_ALLOWED='__SKIP_ALLOWED__'
# end templated
case $0 in
*/*) LEGACY=${0%/*}/$HOOK.gitliza-legacy ;;
*) LEGACY=./$HOOK.gitliza-legacy ;;
esac
# reference-transaction "committed" and "aborted": git ignores their exit status, so only a chained
# hook has anything to do.
case $HOOK/${1:-} in
reference-transaction/prepared) ;;
reference-transaction/*) [ -x "$LEGACY" ] || exit 0 ;;
esac

# Client reference-transaction "prepared": decide here, without Python (~100 ms), when no line
# concerns gitliza (comments kept short up to the exit: sh reads them too). See after this block.
nothing_concerns() {
	gitdir=${GIT_DIR:-.git}
	[ -f "$gitdir" ] && { read -r gitdir <"$gitdir"; gitdir=${gitdir#gitdir: }; }
	common=$gitdir state= cache= ib= head= c=no
	[ -f "$gitdir/commondir" ] && { read -r common <"$gitdir/commondir"; case $common in /*) ;; *) common=$gitdir/$common ;; esac; }
	if [ -f "$common/refs/liza/state" ]; then
		read -r state <"$common/refs/liza/state"
		[ -f "$common/gitliza-hooks.cache" ] && read -r cache <"$common/gitliza-hooks.cache"
		[ -n "$state" ] && [ "${cache%% *}" = "$state" ] || return 1
		ib="refs/heads/${cache#* }"
	elif [ -f "$common/packed-refs" ]; then
		return 1
	fi
	while read -r old new ref; do
		PENDING="$PENDING$old $new $ref
"
		case $ref in
		refs/liza/* | "$ib") c=yes ;;
		refs/heads/liza/*) [ -n "$ib" ] && { [ -n "$head" ] || read -r head <"$gitdir/HEAD"; [ "$head" = "ref: $ref" ] && c=yes; } ;;
		esac
	done
	[ $c = no ]
}
PENDING= decided=no
if [ "$SKIP_ALLOWED$HOOK/${1:-}" = yesreference-transaction/prepared ] && [ -z "${GITLIZA_HOOK_TRACE:-}" ] &&
	[ "${LIZA_SKIP_HOOKS:-}" != 1 ] && [ ! -x "$LEGACY" ]; then
	nothing_concerns && exit 0
	decided=yes
fi

# What nothing_concerns decides: only what is certain from files git keeps; anything else goes to
# Python. refs/liza/* lines concern gitliza, and so do the integration branch and, for the commit
# rule, the task branch (refs/heads/liza/*) checked out here. The integration branch is the board's
# config; hook-impl leaves it in gitliza-hooks.cache as "<state commit> <branch>", good while
# refs/liza/state (a loose ref) still names that commit. No state ref and no packed-refs: no board,
# so only a refs/liza/* line concerns gitliza. The lines read are kept in PENDING for Python.
#
# Plain POSIX sh on purpose: git runs hooks with whatever /bin/sh is (dash, busybox, Git for Windows).
#
# The marker on line 2: "v<N>" orders shim versions (the installer upgrades older ones) and the id,
# which never changes, tells a gitliza shim from any other hook. `git liza hooks uninstall` removes
# the shim and puts back the hook it replaced, which lives on next to it as <hook>.gitliza-legacy
# and runs first.
#
# Emergency bypass, client hooks only. Server hooks (SKIP_ALLOWED=no) ignore it: over a local or
# file:// push the pusher's environment reaches the receiving repository's hooks, so honouring it
# there would hand every pusher an off switch. The chained foreign hook still runs: it is not ours
# to switch off (`git commit --no-verify` skips every pre-commit hook).
run_impl=yes
if [ "${LIZA_SKIP_HOOKS:-}" = 1 ] && [ "$SKIP_ALLOWED" = yes ]; then
	run_impl=skip
fi
if [ "$HOOK" = reference-transaction ] && [ "${1:-}" != prepared ]; then
	run_impl=no
fi

# git runs a hook by its path, from the work tree top (or $GIT_DIR), so $0 locates the hooks dir.
# The legacy name comes from $HOOK, not $0, so the shim still finds it when another hook manager
# renames this file and chains it.
if [ -x "$LEGACY" ]; then
	if [ "$run_impl" = yes ] && [ ! -t 0 ]; then
		# Both hooks may read stdin (pre-push, pre-receive, reference-transaction): keep one copy,
		# open it twice so that each reader has its own offset, and unlink it at once so that
		# nothing is left behind whatever happens next.
		tmp=$(mktemp "${TMPDIR:-/tmp}/gitliza-hook.XXXXXX") || {
			echo "gitliza: $HOOK hook: cannot create a temporary file for stdin" >&2
			exit 1
		}
		cat >"$tmp" || {
			rm -f "$tmp"
			echo "gitliza: $HOOK hook: cannot save stdin to $tmp" >&2
			exit 1
		}
		exec 3<"$tmp" 4<"$tmp"
		rm -f "$tmp"
		"$LEGACY" "$@" <&3 3<&- 4<&- || exit $?
		exec 0<&4 3<&- 4<&-
	else
		"$LEGACY" "$@" || exit $?
	fi
fi

case $run_impl in
yes) ;;
skip)
	echo "gitliza: LIZA_SKIP_HOOKS=1: gitliza's $HOOK checks skipped" >&2
	exit 0
	;;
*) exit 0 ;;
esac

# After a chained hook, the same decision (server hooks always run: they enforce; so does
# GITLIZA_HOOK_TRACE, which runs Python to record each run).
if [ "$decided" = no ] && [ "$SKIP_ALLOWED$HOOK/${1:-}" = yesreference-transaction/prepared ] &&
	[ -z "${GITLIZA_HOOK_TRACE:-}" ]; then
	nothing_concerns && exit 0
fi

# -P: do not put the current directory (the work tree) on sys.path, so that a gitliza/ directory in
# the repository being checked can never stand in for the installed gitliza. Only the recorded
# interpreter runs: no fallback to a git-liza found on PATH, which whoever controls PATH (an agent,
# a directory the repository put there) chooses; a gone interpreter fails with the reinstall line.
run_python() {
	if [ -x "$INSTALL_PYTHON" ]; then
		exec "$INSTALL_PYTHON" -P -m gitliza hook-impl "$HOOK" "$@"
	fi
	if [ "$SKIP_ALLOWED" = yes ]; then
		echo "gitliza: $HOOK hook: cannot run gitliza ($INSTALL_PYTHON is gone); run 'git liza hooks install' again, or set LIZA_SKIP_HOOKS=1 to bypass once" >&2
	else
		echo "gitliza: $HOOK hook: cannot run gitliza ($INSTALL_PYTHON is gone); run 'git liza hooks install --server' again" >&2
	fi
	exit 1
}
if [ -n "$PENDING" ]; then # stdin was read above: hand the same lines on
	printf '%s' "$PENDING" | run_python "$@"
	exit $?
fi
run_python "$@"
