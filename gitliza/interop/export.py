"""`git liza export`: any revision of the board as the seed's state.yaml and log.yaml.

state.yaml is the materialized view (core/encoding/yamlview.py), which is the seed schema; reading
it back with `seed.read_state` gives the same board (tests/interop/test_roundtrip.py). log.yaml has
one entry per state commit up to the revision, preceded by the entries of the log.yaml imported
with the board, if it was imported with one.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from gitliza.core.encoding import record, yamlview
from gitliza.errors import ValidationError
from gitliza.git.store import Store
from gitliza.interop import genesis, seed
from gitliza.services.views.yamlrender import LOG_HEADER, commit_entry, render_log_entries, render_state


@dataclass(frozen=True)
class Exported:
    state: str          # the state commit exported
    state_yaml: str
    log_yaml: str
    log_entries: int


def export(store: Store, at: str | None = None) -> Exported:
    commit = store.resolve(at)
    if commit is None:
        raise ValidationError("no board here", hint="run `git liza init GOAL` or `git liza import`")
    oid = str(commit.id)
    state = render_state(yamlview.state_view(store.board_at(commit)), oid)
    chain = list(store.history(oid))
    chain.reverse()
    entries: list[dict[str, Any]] = []
    root = chain[0]
    if root.message and "\nLiza-Op: import\n" in root.message:
        old = genesis.imported_log(store.repo)
        rec = record.parse(root.message)
        if old is not None and getattr(rec.op, "log_sha256", None) == genesis.sha256(old):
            entries.extend(seed.read_log(old.decode("utf-8"), "imported log.yaml"))
    entries.extend(commit_entry(c) for c in chain)
    log = LOG_HEADER + render_log_entries(entries)
    return Exported(oid, state, log, len(entries))
