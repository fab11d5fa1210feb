"""Trust commands: `verify` (replay the state history) and `hooks install|uninstall|status`."""
from __future__ import annotations

import sys
from typing import Any

from gitliza.cli.commands import Env
from gitliza.errors import ValidationError


def verify(env: Env, since: str | None, at: str | None, remote: str | None = None,
           full: bool = False) -> int:
    """Replay refs/liza/state (or --at) from the newest seal, or the root with --full or where
    there is no seal (or from --since, trusted): every commit must be the legal transition it
    records, reproducing its tree exactly. Exit 4 names the first bad commit. `remote`: fetch
    that remote's board into its tracking ref (the local board does not move) and verify it:
    what a scheduled CI job runs against a hosted remote."""
    from gitliza.git.store import Store
    from gitliza.services.verify.engine import VerifyFailure
    from gitliza.services.verify.seals import verify as run
    store = Store.discover(env.path)
    if since is not None and full:
        raise ValidationError("--full replays from the root; --since starts elsewhere")
    if remote is not None:
        if at is not None:
            raise ValidationError("--remote checks the remote's tip; --at reads a local rev")
        at = _fetch_remote_board(store, remote)
    try:
        report = run(store, at=at, since=since, full=full, remote=remote)
    except VerifyFailure as e:
        if not env.json:
            raise
        env.out.json({"ok": False, "commit": e.commit, "op": e.op, "reason": e.reason})
        return e.exit_code
    ops = dict(report.ops.most_common())
    data: dict[str, Any] = {"ok": True, "commits": report.commits, "ops": ops,
                            "since": report.base, "seal": report.seal, "tip": report.tip,
                            "seconds": round(report.seconds, 3),
                            "commits_per_second": round(report.rate)}
    counts = ", ".join(f"{k} {v}" for k, v in ops.items()) or "nothing new"
    data["legacy"] = report.legacy
    data["signed"] = report.signed
    data["evidence_unread"] = report.evidence_unread
    data["signature_warnings"] = [{"commit": c, "op": o, "actor": a, "reason": r}
                                  for c, o, a, r in report.unsigned]
    start = f" from the seal {report.seal[:12]}" if report.seal else ""
    env.out.result(data, f"verified {report.commits} state commit(s){start} up to "
                   f"{str(report.tip)[:12]} in {report.seconds:.2f}s ({report.rate:.0f}/s): {counts}")
    if report.seal and not env.json:
        env.out.notice(f"the history up to the seal {report.seal[:12]} was taken on the seal's "
                       "word (the human's signature where signatures are on); "
                       "`git liza verify --full` replays it too")
    if report.legacy and not env.json:
        from gitliza.services.verify.legacy import legacy_name
        for oid in report.legacy:
            op = report.op_of.get(oid, "anomaly")
            env.out.notice(f"state commit {oid[:12]} ({op}) accepted in a legacy encoding: "
                           f"{legacy_name(op)}")
    if report.evidence_unread and not env.json:
        env.out.notice(f"{len(report.evidence_unread)} verdict(s) name evidence in a commit this "
                       f"clone lacks (first: state commit {report.evidence_unread[0][:12]}): "
                       "unchecked; fetch the task branches to check them")
    if not env.json:
        for oid, op, actor, why in report.unsigned:
            env.out.notice(f"state commit {oid[:12]} ({op}): actor {actor}: {why} "
                           "(accepted: signatures = warn)")
    return 0


def _fetch_remote_board(store: Any, remote: str) -> str:
    """Fetch `remote`'s board into its tracking ref; its tip (ValidationError: it has none)."""
    from gitliza.git.remotes import remote as remotes
    from gitliza.git.remotes import transport
    from gitliza.git.repository import repo_path
    path = repo_path(store.repo)
    fetched = transport.fetch_board(path, remotes.resolve(path, remote))
    if fetched.new_oid is None:
        raise ValidationError(f"{fetched.remote} has no board ({remotes.STATE_REF}): nothing "
                              "to verify")
    return fetched.new_oid


def hooks_install(env: Env, server: bool) -> int:
    """Install the shims. They record this interpreter (the one running gitliza, e.g. the venv's
    python), so that git finds gitliza whatever PATH the hook runs with."""
    from gitliza.hooks import install
    report = install.install(env.path, server=server, python=sys.executable)
    rows = [{"hook": a.hook, "action": a.action, "chained": a.legacy} for a in report.actions]
    if env.json:
        env.out.json({"hooks_dir": str(report.hooks_dir), "server": server, "hooks": rows})
        return 0
    for a in report.actions:
        chained = " (chains the hook it replaced)" if a.legacy and a.action != "restored" else ""
        env.out.line(f"{a.action:<10} {a.hook}{chained}")
    env.out.line(f"hooks dir {report.hooks_dir} ({'server' if server else 'client'} hooks; "
                 f"gitliza runs with {sys.executable})")
    if not server:
        env.out.notice("client hooks are advisory (`git -c core.hooksPath=/dev/null` skips them); "
                       "enforcement is the server's pre-receive (`git liza hooks install --server` "
                       "in the bare repository). See docs/enforcement.md")
    return 0


def hooks_uninstall(env: Env) -> int:
    from gitliza.hooks import install
    report = install.uninstall(env.path)
    rows = [{"hook": a.hook, "action": a.action, "chained": a.legacy} for a in report.actions]
    if env.json:
        env.out.json({"hooks_dir": str(report.hooks_dir), "hooks": rows})
        return 0
    for a in report.actions:
        env.out.line(f"{a.action:<10} {a.hook}")
    if not report.actions:
        env.out.line(f"no gitliza hooks in {report.hooks_dir}")
    return 0


def hooks_status(env: Env) -> int:
    from gitliza.hooks import install
    st = install.hooks_status(env.path)
    rows = [{"hook": h.hook, "kind": h.kind, "version": h.version, "python": h.python,
             "chained": h.legacy, "current": h.kind == "gitliza" and h.version == st.current_version}
            for h in st.hooks]
    if env.json:
        env.out.json({"hooks_dir": str(st.hooks_dir), "bare": st.bare,
                      "current_version": st.current_version, "hooks": rows})
        return 0
    env.out.line(f"hooks dir {st.hooks_dir} ({'bare' if st.bare else 'work tree'}); "
                 f"this gitliza installs shim v{st.current_version}")
    env.out.table("", ["hook", "installed", "version", "python", "chained"],
                  [[h.hook, h.kind, "" if h.version is None else f"v{h.version}", h.python or "",
                    "yes" if h.legacy else ""] for h in st.hooks])
    return 0
