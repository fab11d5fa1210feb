"""`git liza import` and `git liza export`: the seed schema's files in and out."""
from __future__ import annotations

from pathlib import Path

from gitliza.cli.commands import Env
from gitliza.errors import GitFailure, ValidationError


def _read(path: Path) -> tuple[bytes, str]:
    from gitliza.interop.yamlload import check_size
    check_size(path)
    try:
        data = path.read_bytes()
    except FileNotFoundError:
        raise ValidationError(f"{path}: no such file") from None
    except OSError as e:
        raise GitFailure(f"cannot read {path}: {e}") from None
    try:
        return data, data.decode("utf-8")
    except UnicodeDecodeError as e:
        raise ValidationError(f"{path.name}: not UTF-8 text (byte {e.start})") from None


def import_board(env: Env, state: Path | None, log: Path | None, force: bool) -> int:
    from gitliza.services.api import now_utc
    from gitliza.core.ids import check_id
    from gitliza.core.states import HUMAN_ACTOR
    from gitliza.git.store import Store
    from gitliza.interop import genesis, seed
    from gitliza.git.repository import main_worktree
    store = Store.discover(env.path)
    root = main_worktree(store.repo)
    if state is None:
        if root is None:
            raise ValidationError("a bare repository has no .liza/state.yaml: name the file")
        state = root / ".liza" / "state.yaml"
    data, text = _read(state)
    warnings: list[str] = []
    # Everything is checked before anything is written; a broken invariant of an entity is a
    # warning (the schema's own example breaks three), a missing section is not. A spec or a
    # CLAIMED worktree missing here is a warning too: the board may come from another clone or
    # machine, where its worktrees are (`validate FILE` judges a file in its own project).
    board = seed.read_state(text, state.name, warnings)
    from gitliza.interop import filechecks
    lenient = bool(warnings)
    if root is not None:
        warnings += [f"{state.name}: {p}" for p in filechecks.problems(board.board(), root)]
    log_bytes, entries = None, 0
    if log is not None:
        log_bytes, log_text = _read(log)
        entries = len(seed.read_log(log_text, log.name))
    actor = env.agent or HUMAN_ACTOR
    if actor != HUMAN_ACTOR:
        check_id(actor, "agent id")
    op = genesis.make_op(board.entities, actor, now_utc(), genesis.sha256(data),
                         None if log_bytes is None else genesis.sha256(log_bytes), entries)
    done = genesis.write_import(store, board.entities, op, force=force, log_text=log_bytes,
                                lenient=lenient)
    for w in warnings:
        env.out.notice(f"warning: {w}")
    text_out = f"imported {state} as {done.commit[:12]} ({done.tasks} tasks"
    text_out += f", {entries} log entries)" if log is not None else ")"
    if done.attic:
        text_out += f"; the old board is kept at {done.attic}"
    env.out.result({"commit": done.commit, "tasks": done.tasks, "digest": op.digest,
                    "log_entries": entries, "replaced": done.replaced, "attic": done.attic,
                    "warnings": warnings},
                   text_out)
    return 0


def export_board(env: Env, at: str | None, out: Path, with_log: bool) -> int:
    from gitliza.git.store import Store
    from gitliza.interop.export import export
    from gitliza import atomic
    done = export(Store.discover(env.path), at)
    if str(out) == "-":
        import sys
        sys.stdout.write(done.state_yaml)
        return 0
    try:
        out.mkdir(parents=True, exist_ok=True)
        atomic.write(out, "state.yaml", done.state_yaml.encode())
        if with_log:
            atomic.write(out, "log.yaml", done.log_yaml.encode())
    except OSError as e:
        raise GitFailure(f"cannot write to {out}: {e}") from None
    files = "state.yaml and log.yaml" if with_log else "state.yaml"
    env.out.result({"state": done.state, "directory": str(out), "log_entries": done.log_entries},
                   f"wrote {files} of {done.state[:12]} to {out}")
    if with_log and not env.json:  # log.yaml starts where this clone's history does
        from gitliza.git.remotes import shallow
        store = Store.discover(env.path)
        import pygit2
        cut = shallow.note(store.repo, pygit2.Oid(hex=done.state))
        if cut is not None:
            env.out.notice(f"log.yaml: {cut}")
    return 0
