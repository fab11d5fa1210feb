"""What an agent or a cloned repository writes is hostile input (issue 26, item 8): a `gitliza/`
package planted in the repository, links committed under `.liza/`, escape sequences in board
text, spec paths that leave the repository. Each attack is made for real (a real repository, real
processes started the way gitliza starts them) and must change nothing it should not."""
from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
from pathlib import Path

import pytest

from tests.conftest import git
from tests.team.procs import WAIT, add_task, env_for, make_board, script

SHADOW = "SHADOW GITLIZA EXECUTED"


def plant_gitliza(root: Path, marker: Path) -> None:
    """A `gitliza/` package at the repository's root, committed (so every worktree has it), that
    says so and leaves `marker` when Python imports it instead of the installed one."""
    pkg = root / "gitliza"
    pkg.mkdir()
    body = (f"import pathlib, sys\nprint({SHADOW!r}, flush=True)\n"
            f"pathlib.Path({str(marker)!r}).write_text('ran')\n")
    (pkg / "__init__.py").write_text(body)
    (pkg / "__main__.py").write_text(body + "sys.exit(0)\n")
    git(root, "add", "gitliza")
    git(root, "commit", "-q", "-m", "a gitliza of our own")


def test_the_plant_bites_without_dash_p(repo: Path, tmp_path: Path) -> None:
    """The attack is real: a plain `python -m gitliza` in the repository runs the planted one
    (so the tests below, where it must not, can fail)."""
    marker = tmp_path / "ran"
    plant_gitliza(repo, marker)
    r = subprocess.run([sys.executable, "-m", "gitliza", "--version"], cwd=repo,
                       capture_output=True, text=True, env=env_for(), timeout=WAIT)
    assert SHADOW in r.stdout and marker.exists()


@pytest.mark.slow
def test_a_planted_gitliza_never_runs_in_a_team(repo: Path, tmp_path: Path) -> None:
    """`git liza team` in a repository with a committed `gitliza/`: the supervisors it starts,
    the agent's `git liza` alias (run by git from the task worktree's top) and the MCP server
    its generated configuration starts (run from the worktree) are all the installed gitliza."""
    marker = tmp_path / "shadow-ran"
    plant_gitliza(repo, marker)
    make_board(repo)
    add_task(repo, "t1")
    out = tmp_path / "out"
    out.mkdir()
    agent = script(tmp_path, "agent.sh", f"""
git liza --version > {out}/alias.txt 2>&1
cp "$LIZA_MCP_CONFIG" {out}/mcp.json
pwd > {out}/cwd.txt
touch {out}/done
exec sleep 600
""")
    # The test's own start is the installed console script (a `python -m gitliza` here would be
    # the plant, as the test above shows).
    team = subprocess.Popen([str(Path(sys.executable).parent / "git-liza"), "team",
                             "--planners", "0", "--reviewers", "0", "--coders", "1", "--mcp",
                             "--", str(agent)], cwd=repo, env=env_for(),
                            stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    try:
        git(repo, "liza", "wait", "status", "--task", "t1", "--status", "CLAIMED", "--timeout",
            str(WAIT), env=env_for())
        for _ in range(int(WAIT * 10)):
            if (out / "done").exists() or team.poll() is not None:
                break
            subprocess.run(["sleep", "0.1"])
        assert (out / "done").exists(), "the agent never ran"
    finally:
        team.send_signal(signal.SIGINT)
        output, _ = team.communicate(timeout=WAIT)
    assert SHADOW not in output and not marker.exists(), output
    assert (out / "alias.txt").read_text().startswith("git-liza version"), \
        (out / "alias.txt").read_text()
    cwd = Path((out / "cwd.txt").read_text().strip())
    assert (cwd / "gitliza" / "__main__.py").exists()  # the task worktree carries the plant
    entry = json.loads((out / "mcp.json").read_text())["mcpServers"]["gitliza"]
    assert "-P" in entry["args"]
    r = subprocess.run([entry["command"], *entry["args"]], cwd=cwd, stdin=subprocess.DEVNULL,
                       capture_output=True, text=True, env={**env_for(), **entry["env"]},
                       timeout=WAIT)
    assert SHADOW not in r.stdout + r.stderr and not marker.exists(), r


def supervise_once(repo: Path, agent: Path, *extra: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([str(Path(sys.executable).parent / "git-liza"), "agent", "coder",
                           "--once", *extra, "--", str(agent)], cwd=repo, env=env_for("coder-1"),
                          capture_output=True, text=True, timeout=WAIT * 2)


def mode(path: Path) -> int:
    return path.lstat().st_mode & 0o777


@pytest.mark.slow
def test_agent_logs_prompts_and_mcp_configs_are_the_users_alone(repo: Path,
                                                                 tmp_path: Path) -> None:
    make_board(repo)
    add_task(repo, "t1")
    (repo / ".liza" / "agent-logs").mkdir(parents=True, mode=0o755)  # as an older gitliza left it
    (repo / ".liza" / "agent-logs").chmod(0o755)
    agent = script(tmp_path, "agent.sh", "echo working\n")
    r = supervise_once(repo, agent, "--mcp")
    assert "started agent" in r.stdout, r.stdout + r.stderr  # (exit 1: it made no progress)
    liza = repo / ".liza"
    for d in ("agent-logs", "agent-prompts", "agent-procs"):
        assert mode(liza / d) == 0o700, d
    files = [p for d in ("agent-logs", "agent-prompts") for p in (liza / d).iterdir()]
    kinds = {p.suffix for p in files}
    assert {".log", ".txt", ".json"} <= kinds, files  # log, prompt, MCP config
    for p in files:
        assert mode(p) == 0o600, p
    assert "working" in next(p for p in files if p.suffix == ".log").read_text()


@pytest.mark.slow
@pytest.mark.parametrize("tracked", [False, True])
def test_a_linked_or_tracked_liza_dir_refuses_the_supervisor(repo: Path, tmp_path: Path,
                                                             tracked: bool) -> None:
    """`.liza/agent-prompts` as a link to a directory outside the repository (planted, or
    committed so that a clone brings it): the supervisor refuses with one line before it claims
    anything, and writes nothing outside."""
    make_board(repo)
    add_task(repo, "t1")
    outside = tmp_path / "outside"
    outside.mkdir()
    (repo / ".liza").mkdir(exist_ok=True)
    (repo / ".liza" / "agent-prompts").symlink_to(outside)
    if tracked:
        git(repo, "add", "-f", ".liza/agent-prompts")
        git(repo, "commit", "-q", "-m", "prompts elsewhere")
    before = git(repo, "rev-parse", "refs/liza/state")
    agent = script(tmp_path, "agent.sh", f"touch {tmp_path}/agent-ran\n")
    r = supervise_once(repo, agent)
    assert r.returncode == 1, r.stdout + r.stderr
    lines = r.stderr.strip().splitlines()
    why = "is tracked by git" if tracked else "is a symbolic link"
    assert len(lines) == 1 and why in lines[0], r.stderr
    assert list(outside.iterdir()) == [] and not (tmp_path / "agent-ran").exists()
    assert git(repo, "rev-parse", "refs/liza/state") == before


# Title change, screen clear, an OSC 8 link, C1's CSI, a carriage return that rewrites the line,
# a bidirectional override, and rich markup that would become a link on a terminal.
ESCAPES = ("\x1b]0;pwned\x07 \x1b[2J\x1b[H \x1b]8;;http://evil.invalid\x1b\\click\x1b]8;;\x1b\\ "
           "\x9b2J ok\rFAKE \u202egnp.exe [link=http://evil.invalid]x[/link]")
RAW = ("\x1b", "\x07", "\x9b", "\r", "\u202e")


def _raw(text: str) -> list[str]:
    return [c for c in RAW if c in text]


@pytest.mark.slow
def test_escape_sequences_in_board_text_never_reach_the_terminal(repo: Path) -> None:
    from tests.cli.test_board import liza, ok
    make_board(repo)
    ok(liza(repo, "register", "coder-1", "--role", "coder", agent=None))
    ok(liza(repo, "add", "t1", "--desc", "desc " + ESCAPES, "--spec-ref", "README.md",
            "--done-when", "done", "--scope", "s", "--ready", agent=None))
    ok(liza(repo, "claim", "t1", agent="coder-1"))
    ok(liza(repo, "block", "t1", "--reason", "reason " + ESCAPES + "\nsecond line",
            "--question", "q " + ESCAPES, agent="coder-1"))
    ok(liza(repo, "note", "note " + ESCAPES, "--for", "t1", agent=None))
    ok(liza(repo, "pause", "--reason", "pause " + ESCAPES, agent=None))  # in the subject
    outputs = {}
    for args in (["show", "t1"], ["status"], ["log"], ["events"], ["top", "--once"],
                 ["watch", "--once"], ["watch", "--once", "--json"], ["events", "--json"]):
        r = liza(repo, *args, agent=None)
        assert r.returncode in (0, 1), (args, r.stderr)
        outputs[" ".join(args)] = r.stdout + r.stderr
    for name, text in outputs.items():
        assert not _raw(text), (name, _raw(text), text[-2000:])
    assert "\\x1b]0;pwned\\x07" in outputs["show t1"]  # shown, escaped, not dropped
    assert "BLOCKED" in outputs["watch --once"]
    # Stock `git log` prints the subjects raw: they are escaped when written.
    subjects = git(repo, "log", "--format=%s", "refs/liza/state")
    assert not _raw(subjects) and "pause by human: pause \\x1b]0;pwned" in subjects, subjects
    # JSON stays exact (it escapes control characters itself), and the board verifies.
    import json as _json
    shown = _json.loads(ok(liza(repo, "show", "t1", "--json", agent=None)))
    assert shown["description"] == "desc " + ESCAPES
    ok(liza(repo, "verify", agent=None))


def test_a_raw_subject_written_before_escaping_still_verifies_as_legacy(repo: Path) -> None:
    """A board written before subjects were escaped holds a raw control character in one: verify
    still accepts it (backward compatible), and names it; any other wording is still refused."""
    from tests.cli.test_board import liza, ok
    ok(liza(repo, "init", "g", agent=None))
    ok(liza(repo, "pause", "--reason", "stop \x1b[2J now", agent=None))
    tip = git(repo, "rev-parse", "refs/liza/state")
    raw = subprocess.run(["git", "cat-file", "commit", tip], cwd=repo, capture_output=True,
                         check=True).stdout
    escaped = b"pause by human: stop \\x1b[2J now"
    assert escaped in raw

    def forge(subject: bytes) -> str:
        data = raw.replace(escaped, subject)
        oid = subprocess.run(["git", "hash-object", "-t", "commit", "-w", "--stdin"], cwd=repo,
                             input=data, capture_output=True, check=True).stdout.decode().strip()
        git(repo, "update-ref", "refs/liza/state", oid)
        return oid

    old = forge(b"pause by human: stop \x1b[2J now")  # what gitliza wrote before
    r = liza(repo, "verify", agent=None)
    assert r.returncode == 0, r.stderr
    assert f"state commit {old[:12]} (pause) accepted in a legacy encoding" in r.stderr
    assert "\x1b" not in r.stderr
    forge(b"pause by human: stop \x1b[2J later")  # anything else: refused as before
    r = liza(repo, "verify", agent=None)
    assert r.returncode == 4 and "commit message differs" in r.stderr, r.stderr


SCHEMA_EXAMPLE = Path(__file__).parent.parent / "interop" / "data" / "schema_example.yaml"
OUTSIDE_SPECS = ["../../../../etc/passwd", "/etc/passwd", "~/.ssh/id_rsa", "specs/../../x.md",
                 "specs/a\x1b]0;x\x07.md"]


@pytest.mark.parametrize("bad", OUTSIDE_SPECS)
def test_import_refuses_a_spec_ref_outside_the_repository(tmp_path: Path, repo: Path,
                                                          bad: str) -> None:
    import json as _json
    text = SCHEMA_EXAMPLE.read_text().replace("spec_ref: specs/retry-logic.md\n",
                                              f"spec_ref: {_json.dumps(bad)}\n", 1)
    assert _json.dumps(bad) in text
    path = tmp_path / "state.yaml"
    path.write_text(text)
    from tests.faults import harness as h
    for command in ("import", "validate"):
        r = h.liza(repo, command, str(path), timeout=60)
        assert r.returncode == 1, (command, r)
        assert len(r.stderr.strip().splitlines()) == 1 and "spec_ref" in r.stderr, r.stderr
        assert "\x1b" not in r.stderr
    assert not git(repo, "for-each-ref", "refs/liza/")  # the import wrote nothing


@pytest.mark.parametrize("bad", OUTSIDE_SPECS)
def test_every_op_refuses_a_spec_ref_outside_the_repository(repo: Path, bad: str) -> None:
    """`add` of a DRAFT (no spec gate), `add --ready`, `edit`, `init --spec`: one line, exit 1,
    the board where it was."""
    from tests.cli.test_board import liza, ok
    ok(liza(repo, "init", "g", agent=None))
    ok(liza(repo, "add", "t0", "--desc", "d", agent=None))
    before = git(repo, "rev-parse", "refs/liza/state")
    for args in (["add", "t1", "--desc", "d", "--spec-ref", bad],
                 ["add", "t2", "--desc", "d", "--spec-ref", bad, "--done-when", "w",
                  "--scope", "s", "--ready"],
                 ["edit", "t0", "--spec-ref", bad]):
        r = liza(repo, *args, agent=None)
        assert r.returncode == 1 and "spec_ref" in r.stderr, (args, r.stderr)
        assert len(r.stderr.strip().splitlines()) == 1, r.stderr
    assert git(repo, "rev-parse", "refs/liza/state") == before


def test_verify_refuses_a_forged_board_with_a_spec_ref_outside(repo: Path) -> None:
    """A board whose `add` recorded `../../../../etc/passwd` (an older gitliza took it; a peer
    can still push it): verify replays it and refuses."""
    from gitliza.core.ops import Add, apply
    from gitliza.git.store import Store
    from gitliza.services.api import Liza
    from tests.cli.test_board import liza
    h = Liza.open(repo, "human", sync=False)
    h.do(__import__("gitliza.core.ops", fromlist=["Init"]).Init, goal="g")
    store: Store = h.store
    board, tip = store.board(None)[0], store.resolve(None)
    # What an older gitliza wrote: the op's record and the task both hold the path (built here
    # from a legal add, since today's core refuses it: a forger's own tool does the same).
    import dataclasses
    bad = "../../../../etc/passwd"
    legal = Add(actor="human", time=h.now(), task="t1", description="d", spec_ref="specs/a.md")
    outcome = apply(board, legal)
    changes = {k: dataclasses.replace(v, spec_ref=bad) if k == ("tasks", "t1") else v
               for k, v in outcome.changes.items()}
    forged = store.write_commit(tip, dataclasses.replace(outcome, changes=changes),
                                dataclasses.replace(legal, spec_ref=bad))
    git(repo, "update-ref", "refs/liza/state", str(forged))
    r = liza(repo, "verify", agent=None)
    assert r.returncode == 4 and "leaves the repository" in r.stderr, r.stderr


def test_the_spec_gate_refuses_a_committed_symlink(repo: Path) -> None:
    from tests.cli.test_board import liza, ok
    (repo / "specs").mkdir()
    (repo / "specs" / "vision.md").symlink_to("/etc/passwd")
    (repo / "specs" / "real.md").write_text("# real\n")
    git(repo, "add", "specs")
    git(repo, "commit", "-q", "-m", "specs")
    r = liza(repo, "init", "g", "--spec", "specs/vision.md", agent=None)
    assert r.returncode == 1 and "regular file" in r.stderr, r.stderr
    ok(liza(repo, "init", "g", agent=None))  # the default spec, a link, is not recorded
    assert "spec_ref" not in git(repo, "show", "refs/liza/state:goal.toml")
    before = git(repo, "rev-parse", "refs/liza/state")
    r = liza(repo, "add", "t1", "--desc", "d", "--spec-ref", "specs/vision.md", "--done-when", "w",
             "--scope", "s", "--ready", agent=None)
    assert r.returncode == 1 and "symbolic link" in r.stderr, r.stderr
    assert git(repo, "rev-parse", "refs/liza/state") == before
    ok(liza(repo, "add", "t1", "--desc", "d", "--spec-ref", "specs/real.md", "--done-when", "w",
            "--scope", "s", "--ready", agent=None))


def _with_tasks(extra: int, status: str = "DRAFT") -> str:
    """The schema example plus `extra` tasks (DRAFTs: live, and valid without a spec)."""
    text = SCHEMA_EXAMPLE.read_text()
    more = "".join(f"  - id: bulk-{i}\n    description: \"x\"\n    status: {status}\n"
                   f"    priority: 3\n    created: 2025-01-17T15:00:00Z\n" for i in range(extra))
    return text.replace("\ntasks:\n", "\ntasks:\n" + more, 1)


def test_an_import_is_capped(tmp_path: Path, repo: Path) -> None:
    """A board file may not bring more than a team's board ever holds (a 23 MB import of 100,000
    tasks made every `status` take 38.6 s): one line, exit 1, nothing written. Just under the
    cap is imported."""
    from gitliza.interop import seed
    from tests.faults import harness as h
    cases = {
        "live": (_with_tasks(seed.MAX_LIVE_TASKS), "live (not terminal) tasks, more than"),
        "agents": (SCHEMA_EXAMPLE.read_text().replace("\nagents:\n", "\nagents:\n" + "".join(
            f"  bulk-{i}:\n    role: coder\n    status: IDLE\n"
            for i in range(seed.MAX_ITEMS["agents"] + 1)), 1), "agents, more than"),
    }
    for name, (text, why) in cases.items():
        path = tmp_path / f"{name}.yaml"
        path.write_text(text)
        r = h.liza(repo, "import", str(path), timeout=120)
        assert r.returncode == 1, (name, r)
        assert len(r.stderr.strip().splitlines()) == 1 and why in r.stderr, r.stderr
        assert not git(repo, "for-each-ref", "refs/liza/")
    live = sum(1 for line in SCHEMA_EXAMPLE.read_text().splitlines()
               if line.strip().startswith("status:") and line.split(":")[1].split("#")[0].strip()
               in ("DRAFT", "UNCLAIMED", "CLAIMED", "READY_FOR_REVIEW", "REJECTED", "BLOCKED",
                   "APPROVED", "INTEGRATION_FAILED"))
    path = tmp_path / "under.yaml"
    path.write_text(_with_tasks(seed.MAX_LIVE_TASKS - live))
    r = h.liza(repo, "import", str(path), timeout=300)
    assert r.returncode == 0, r.stderr
