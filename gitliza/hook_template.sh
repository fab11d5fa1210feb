#!/bin/sh
# gitliza-hook-shim v2 c734ca2c-fda1-4d0c-ac1b-9f4f0fa024fb
#
# Installed by `git liza hooks install`; `git liza hooks uninstall` removes it and puts back the hook
# it replaced, which lives on next to it as <hook>.gitliza-legacy and runs first. Do not edit: an
# upgrade rewrites this file. See docs/hooks-install.md.
#
# The line above is the marker: "v<N>" orders shim versions (the installer upgrades older ones) and
# the id, which never changes, tells a gitliza shim from any other hook.
#
# Plain POSIX sh on purpose: git runs hooks with whatever /bin/sh is (dash, busybox, Git for Windows).
#
# start templated (the installer fills these three lines)
HOOK='__HOOK__'
INSTALL_PYTHON='__INSTALL_PYTHON__'
SKIP_ALLOWED='__SKIP_ALLOWED__'
# end templated

# git runs a hook by its path, from the work tree top (or $GIT_DIR), so $0 locates the hooks dir.
# The legacy name comes from $HOOK, not $0, so the shim still finds it when another hook manager
# renames this file and chains it.
case $0 in
*/*) LEGACY=${0%/*}/$HOOK.gitliza-legacy ;;
*) LEGACY=./$HOOK.gitliza-legacy ;;
esac

# Emergency bypass, client hooks only. Server hooks (SKIP_ALLOWED=no) ignore it: over a local or
# file:// push the pusher's environment reaches the receiving repository's hooks, so honouring it
# there would hand every pusher an off switch. The chained foreign hook still runs: it is not ours
# to switch off (`git commit --no-verify` skips every pre-commit hook).
run_impl=yes
if [ "${LIZA_SKIP_HOOKS:-}" = 1 ] && [ "$SKIP_ALLOWED" = yes ]; then
	run_impl=skip
fi
# reference-transaction runs three times per transaction; only "prepared" can refuse (git ignores
# the exit status of "committed" and "aborted"), so do not start Python for the other two.
if [ "$HOOK" = reference-transaction ] && [ "${1:-}" != prepared ]; then
	run_impl=no
fi

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

# Client hooks: decide here, without starting Python (~100 ms), when nothing concerns gitliza.
# Only what is certain from files git keeps is decided; anything else goes to Python:
# - pre-commit checks commits on task branches (liza/<task>) only: HEAD names another branch;
# - reference-transaction checks refs/liza/* and the integration branch: the lines name neither.
#   The integration branch is the board's config; hook-impl leaves it in gitliza-hooks.cache as
#   "<state commit> <branch>", good while refs/liza/state (a loose ref) still names that commit.
# Server hooks (SKIP_ALLOWED=no) always run: they enforce. GITLIZA_HOOK_TRACE runs Python too.
PENDING=
if [ "$SKIP_ALLOWED" = yes ] && [ -z "${GITLIZA_HOOK_TRACE:-}" ]; then
	gitdir=${GIT_DIR:-.git}
	if [ -f "$gitdir" ]; then
		read -r gitdir <"$gitdir" || gitdir=
		gitdir=${gitdir#gitdir: }
	fi
	common=$gitdir
	if [ -f "$gitdir/commondir" ]; then
		read -r common <"$gitdir/commondir" || common=.
		case $common in /*) ;; *) common=$gitdir/$common ;; esac
	fi
	case $HOOK in
	pre-commit)
		head=
		[ -f "$gitdir/HEAD" ] && { read -r head <"$gitdir/HEAD" || head=; }
		case $head in
		"ref: refs/heads/liza/"*) ;;
		?*) exit 0 ;; # another branch, detached or unborn: hook-impl would pass it too
		esac
		;;
	reference-transaction)
		state= cache=
		[ -f "$common/refs/liza/state" ] && { read -r state <"$common/refs/liza/state" || state=; }
		[ -f "$common/gitliza-hooks.cache" ] && { read -r cache <"$common/gitliza-hooks.cache" || cache=; }
		decide=no
		if [ -n "$state" ] && [ "${cache%% *}" = "$state" ]; then
			integration="refs/heads/${cache#* }" decide=yes
		elif [ -z "$state" ] && [ ! -f "$common/packed-refs" ]; then
			integration= decide=yes # no board here: only a refs/liza/* line concerns gitliza
		fi
		if [ "$decide" = yes ]; then
			concerned=no
			nl='
'
			while read -r old new ref; do
				PENDING="$PENDING$old $new $ref$nl"
				case $ref in
				refs/liza/*) concerned=yes ;;
				"$integration") concerned=yes ;;
				esac
			done
			[ "$concerned" = no ] && exit 0
		fi
		;;
	esac
fi

# -P: do not put the current directory (the work tree) on sys.path, so that a gitliza/ directory in
# the repository being checked can never stand in for the installed gitliza.
run_python() {
	if [ -x "$INSTALL_PYTHON" ]; then
		exec "$INSTALL_PYTHON" -P -m gitliza hook-impl "$HOOK" "$@"
	fi
	if command -v git-liza >/dev/null 2>&1; then
		exec git-liza hook-impl "$HOOK" "$@"
	fi
	if [ "$SKIP_ALLOWED" = yes ]; then
		echo "gitliza: $HOOK hook: cannot run gitliza ($INSTALL_PYTHON is gone and git-liza is not on PATH); run 'git liza hooks install' again, or set LIZA_SKIP_HOOKS=1 to bypass once" >&2
	else
		echo "gitliza: $HOOK hook: cannot run gitliza ($INSTALL_PYTHON is gone and git-liza is not on PATH); run 'git liza hooks install --server' again" >&2
	fi
	exit 1
}
if [ -n "$PENDING" ]; then # stdin was read above: hand the same lines on
	printf '%s' "$PENDING" | run_python "$@"
	exit $?
fi
run_python "$@"
