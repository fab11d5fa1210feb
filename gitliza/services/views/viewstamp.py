"""The materialized view's stamp (`.liza/.materialized`: the state commit `.liza/state.yaml`
reflects, and the file as written), and what a hand edit of the view changed.

Kept apart from materialize.py, which imports ruamel.yaml to render: `status` and `doctor` ask
whether the view was edited on every run, which costs two small reads (the stamp and a stat) unless
it was; only an edited file is hashed and read.
"""
from __future__ import annotations

import dataclasses
import stat
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from gitliza.git.repository import LIZA_DIR, main_worktree
from gitliza.git.store import Store
from gitliza.errors import LizaError

STATE_FILE = "state.yaml"
STAMP_FILE = ".materialized"
# 3: state.yaml holds the live tasks and the terminal ones that are recent or referenced
# (core/encoding/retention.py); every terminal task is in archive/ too.
STAMP_FORMAT = 3


@dataclass(frozen=True)
class Stamp:
    state: str
    state_file: tuple[int, int]   # (size, mtime_ns) of state.yaml as we wrote it
    log_file: tuple[int, int]
    log_entries: int
    archive: str | None = None  # the `archive` tree of the state the archive/ files reflect
    # Archived tasks that ended within config.archive_after of the state: id -> end time (the
    # few the view still lists by age; kept here so that no archived blob is read to find them).
    recent: dict[str, str] = dataclasses.field(default_factory=dict)
    # sha256 of state.yaml as written: a changed size or time with the same bytes (a `touch`, a
    # copy back) is no edit. None in stamps written before it was recorded.
    state_sha: str | None = None
    # The renewals off the chain (refs/liza/live/*) the view's leases include: the view is a
    # function of the state and of them. None: no renewal counted.
    live: str | None = None

    def dumps(self) -> str:
        import json
        return json.dumps({"format": STAMP_FORMAT, "state": self.state,
                           "state_yaml": list(self.state_file), "log_yaml": list(self.log_file),
                           "log_entries": self.log_entries, "archive": self.archive,
                           "recent": self.recent, "state_sha": self.state_sha,
                           "live": self.live},
                          sort_keys=True) + "\n"


def read_stamp(path: Path) -> Stamp | None:
    import json  # here: `status` on a board with no view here never reads a stamp
    try:
        d = json.loads(path.read_text())
        if d.get("format") != STAMP_FORMAT:
            return None
        archive = d.get("archive")
        recent = d.get("recent") or {}
        sha = d.get("state_sha")
        return Stamp(str(d["state"]), (int(d["state_yaml"][0]), int(d["state_yaml"][1])),
                     (int(d["log_yaml"][0]), int(d["log_yaml"][1])), int(d["log_entries"]),
                     None if archive is None else str(archive),
                     {str(k): str(v) for k, v in recent.items()},
                     None if sha is None else str(sha),
                     None if d.get("live") is None else str(d["live"]))
    except (OSError, ValueError, KeyError, IndexError, TypeError):
        return None  # missing or damaged: rebuild everything


def sig(path: Path) -> tuple[int, int] | None:
    try:
        st = path.lstat()
    except FileNotFoundError:
        return None
    if not stat.S_ISREG(st.st_mode):
        return None
    return st.st_size, st.st_mtime_ns


def sha256(data: bytes) -> str:
    import hashlib  # here: `status` reads the stamp on every run and hashes only an edited view
    return hashlib.sha256(data).hexdigest()


@dataclass(frozen=True)
class ViewEdit:
    """`.liza/state.yaml` differs from what materialize wrote for the board at `state`."""

    path: Path
    state: str
    changes: tuple[str, ...]  # each change and the command that makes it (core/encoding/viewedits.py)

    def message(self) -> str:
        what = "; ".join(self.changes) if self.changes else \
            "no task, config, agent or goal changed"
        return (f"{self.path} was edited by hand, which changes nothing on the board ({what}); "
                "the board changes only through `git liza` commands, and the next "
                "`git liza materialize` rewrites the view, keeping the edited copy beside it")


def view_edit(store: Store, stamp: Stamp | None = None) -> ViewEdit | None:
    """The hand edit of the materialized state.yaml, if any (None: not materialized here, not
    edited, or edited back to the same bytes)."""
    root = main_worktree(store.repo)
    if root is None:
        return None
    directory = root / LIZA_DIR
    path = directory / STATE_FILE
    now = sig(path)
    if now is None:  # no view here: no stamp to read
        return None
    if stamp is None:
        stamp = read_stamp(directory / STAMP_FILE)
    if stamp is None or now == stamp.state_file:
        return None
    try:
        data = path.read_bytes()
    except OSError:
        return None
    if stamp.state_sha is None or sha256(data) == stamp.state_sha:
        return None  # same bytes (or a stamp that cannot tell): nothing was edited
    return ViewEdit(path, stamp.state, tuple(_changes(store, stamp, data)))


def _changes(store: Store, stamp: Stamp, data: bytes) -> list[str]:
    from ruamel.yaml import YAML  # only for an edited file
    from ruamel.yaml.error import YAMLError

    from gitliza.core.encoding import yamlview
    from gitliza.core.encoding.viewedits import view_edits
    try:
        found: Any = YAML(typ="safe").load(data.decode("utf-8"))
    except (YAMLError, UnicodeDecodeError, ValueError) as e:
        return [f"it is no longer valid YAML: {' '.join(str(e).split())[:80]}"]
    try:
        commit = store.resolve(stamp.state)
        if commit is None:
            return []
        board = store.board_at(commit)
        listed = {str(t.get("id")) for t in (found.get("tasks") or []) if isinstance(t, dict)} \
            if isinstance(found, dict) else set()
        keep = [t for tid in sorted(listed) if (t := board.get("archive", tid)) is not None]
        expected = yamlview.state_view(board, archived=False, keep=keep)
    except LizaError:
        return []
    return view_edits(expected, found)
