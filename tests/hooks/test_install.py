"""Hook shims: installed by gitliza.hooks.install, run by the real git, traced by gitliza.hooks.dispatch.

Every hook run appends `<hook> <args...> stdin=<sha256>` to $GITLIZA_HOOK_TRACE, which is how these
tests see that git ran the shim and what it passed through.
"""
from __future__ import annotations

import hashlib
import os
import shutil
import stat
import subprocess
import sys
from pathlib import Path

import pytest

from gitliza.hooks import dispatch
from gitliza.__main__ import main as gitliza_main
from gitliza.errors import EXIT_DEPENDENCY, ValidationError
from gitliza.hooks.install import (
    CLIENT_HOOKS,
    LEGACY_SUFFIX,
    SERVER_HOOKS,
    hooks_status,
    install,
    render_shim,
    shim_version,
    template_text,
    uninstall,
)
from tests.conftest import git

ROOT = Path(__file__).resolve().parents[2]
ZERO = "0" * 40
PY = sys.executable  # the venv python, where gitliza is installed (editable)


def sha(data: str | bytes) -> str:
    return hashlib.sha256(data.encode() if isinstance(data, str) else data).hexdigest()


EMPTY = sha(b"")


@pytest.fixture
def trace(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    path = tmp_path / "trace.log"
    monkeypatch.setenv("GITLIZA_HOOK_TRACE", str(path))
    monkeypatch.delenv("LIZA_SKIP_HOOKS", raising=False)
    return path


def traced(path: Path) -> list[str]:
    return path.read_text().splitlines() if path.exists() else []


def run_git(cwd: Path, *args: str, env: dict[str, str] | None = None) -> subprocess.CompletedProcess[str]:
    """Like conftest.git, but returns the result (stderr and status) instead of asserting success."""
    return subprocess.run(
        ["git", *args], cwd=cwd, capture_output=True, text=True, check=False,
        env=None if env is None else {**os.environ, **env},
    )


def write_hook(path: Path, body: str | bytes, mode: int = 0o755) -> bytes:
    data = body.encode() if isinstance(body, str) else body
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_bytes(data)
    path.chmod(mode)
    return data


def commit(cwd: Path, msg: str = "change") -> subprocess.CompletedProcess[str]:
    return run_git(cwd, "commit", "-q", "--allow-empty", "-m", msg)


# --- the template --------------------------------------------------------------------------------


def test_repo_copy_of_the_template_is_identical_to_the_packaged_one() -> None:
    packaged = (ROOT / "gitliza" / "hooks" / "template.sh").read_bytes()
    assert (ROOT / "hooks" / "shim.sh").read_bytes() == packaged, (
        "hooks/shim.sh must be a copy of gitliza/hooks/template.sh: cp gitliza/hooks/template.sh hooks/shim.sh"
    )
    assert template_text().encode() == packaged


def test_template_is_posix_sh_with_each_placeholder_once() -> None:
    text = template_text()
    for name in ("HOOK", "INSTALL_PYTHON", "SKIP_ALLOWED"):
        assert text.count(f"{name}='__{name}__'") == 1
    rendered = render_shim("pre-push", "/opt/it's here/python")
    assert "__" not in rendered.split("# end templated")[0].split("# start templated")[1]
    assert "INSTALL_PYTHON='/opt/it'\\''s here/python'" in rendered
    for shell in ("sh", "dash", "bash"):
        if shutil.which(shell):
            r = subprocess.run([shell, "-n", "-c", rendered], capture_output=True, text=True)
            assert r.returncode == 0, (shell, r.stderr)


# --- client hooks, run by real git ---------------------------------------------------------------


def test_install_then_commit_runs_the_reference_transaction_shim(repo: Path, trace: Path) -> None:
    report = install(repo, python=PY)
    assert report.hooks_dir == repo / ".git" / "hooks"
    assert [(a.hook, a.action, a.legacy) for a in report.actions] == [(h, "installed", False) for h in CLIENT_HOOKS]
    for hook in CLIENT_HOOKS:
        assert os.access(repo / ".git" / "hooks" / hook, os.X_OK)
    # One hook fewer per commit: reference-transaction applies the commit rule itself.
    assert not (repo / ".git" / "hooks" / "pre-commit").exists()
    head = git(repo, "rev-parse", "HEAD")
    assert commit(repo).returncode == 0
    lines = traced(trace)
    new = git(repo, "rev-parse", "HEAD")
    update = f"{head} {new} HEAD\n{head} {new} refs/heads/main\n"
    assert lines == [f"reference-transaction prepared stdin={sha(update)}"]
    # "committed" cannot refuse anything, so the shim does not start Python for it.
    assert not any(line.startswith("reference-transaction committed") for line in lines)


def test_update_ref_runs_reference_transaction_with_stdin(repo: Path, trace: Path) -> None:
    install(repo, python=PY)
    head = git(repo, "rev-parse", "HEAD")
    git(repo, "update-ref", "refs/liza/x", "HEAD")
    update = f"{ZERO} {head} refs/liza/x\n"
    assert f"reference-transaction prepared stdin={sha(update)}" in traced(trace)


def test_merge_runs_pre_merge_commit(repo: Path, trace: Path) -> None:
    install(repo, python=PY)
    git(repo, "checkout", "-q", "-b", "feature")
    git(repo, "commit", "-q", "--allow-empty", "-m", "feature work")
    git(repo, "checkout", "-q", "main")
    git(repo, "merge", "-q", "--no-ff", "-m", "merge feature", "feature")
    assert f"pre-merge-commit stdin={EMPTY}" in traced(trace)


def test_push_runs_pre_push_with_args_and_stdin(repo: Path, bare: Path, trace: Path) -> None:
    install(repo, python=PY)
    git(repo, "remote", "add", "origin", str(bare))
    head = git(repo, "rev-parse", "HEAD")
    git(repo, "push", "-q", "origin", "main")
    pushed = f"refs/heads/main {head} refs/heads/main {ZERO}\n"
    assert f"pre-push origin {bare} stdin={sha(pushed)}" in traced(trace)


# --- server hooks --------------------------------------------------------------------------------


def test_server_install_runs_pre_receive_and_ignores_the_bypass(repo: Path, bare: Path, trace: Path) -> None:
    report = install(bare, server=True, python=PY)
    assert report.hooks_dir == bare / "hooks"
    assert [(a.hook, a.action) for a in report.actions] == [(h, "installed") for h in SERVER_HOOKS]
    clone = repo.parent / "clone"
    git(repo.parent, "clone", "-q", str(bare), str(clone))
    install(clone, python=PY)
    write_hook(clone / "f.txt", "x\n")
    git(clone, "add", "f.txt")
    git(clone, "commit", "-q", "-m", "first")
    head = git(clone, "rev-parse", "HEAD")

    # Over a local push the pusher's environment reaches the server's hooks: the bypass must not work
    # there, while it does skip the pusher's own (advisory) pre-push.
    r = run_git(clone, "push", "origin", "main", env={"LIZA_SKIP_HOOKS": "1"})
    assert r.returncode == 0, r.stderr
    assert "LIZA_SKIP_HOOKS=1" in r.stderr
    lines = traced(trace)
    received = f"{ZERO} {head} refs/heads/main\n"
    assert f"pre-receive stdin={sha(received)}" in lines
    assert not any(line.startswith("pre-push") for line in lines)


def test_server_and_client_installs_each_refuse_the_other_kind_of_repository(repo: Path, bare: Path) -> None:
    with pytest.raises(ValidationError, match="not a bare repository"):
        install(repo, server=True, python=PY)
    with pytest.raises(ValidationError, match="is a bare repository"):
        install(bare, python=PY)
    assert not (repo / ".git" / "hooks" / "pre-receive").exists()
    assert not any((bare / "hooks").glob("pre-*")) if (bare / "hooks").exists() else True


# --- chaining foreign hooks ----------------------------------------------------------------------


def test_foreign_hook_is_chained_and_runs_first(repo: Path, trace: Path, tmp_path: Path) -> None:
    mark = tmp_path / "foreign-ran"
    hooks = repo / ".git" / "hooks"
    original = write_hook(hooks / "reference-transaction",
                          f"#!/bin/sh\necho \"$*\" >> '{mark}'\ncat >> '{mark}'\nexit 0\n")
    report = install(repo, python=PY)
    assert ("reference-transaction", "installed", True) in [(a.hook, a.action, a.legacy) for a in report.actions]
    assert (hooks / f"reference-transaction{LEGACY_SUFFIX}").read_bytes() == original
    head = git(repo, "rev-parse", "HEAD")
    assert commit(repo).returncode == 0
    new = git(repo, "rev-parse", "HEAD")
    update = f"{head} {new} HEAD\n{head} {new} refs/heads/main\n"
    # The chained hook sees every state with its stdin; Python only "prepared", with the same stdin.
    assert mark.read_text() == f"prepared\n{update}committed\n{update}"
    assert traced(trace) == [f"reference-transaction prepared stdin={sha(update)}"]


def test_foreign_pre_commit_hook_is_left_alone(repo: Path, trace: Path) -> None:
    """pre-commit is not a gitliza hook any more: a foreign one stays where it is, and runs."""
    hooks = repo / ".git" / "hooks"
    original = write_hook(hooks / "pre-commit", "#!/bin/sh\necho 'foreign pre-commit ran' >&2\n")
    report = install(repo, python=PY)
    assert "pre-commit" not in [a.hook for a in report.actions]
    assert (hooks / "pre-commit").read_bytes() == original
    assert not (hooks / f"pre-commit{LEGACY_SUFFIX}").exists()
    assert "foreign pre-commit ran" in commit(repo).stderr
    assert uninstall(repo).actions and (hooks / "pre-commit").read_bytes() == original


def test_failing_foreign_hook_refuses_the_commit(repo: Path, trace: Path) -> None:
    write_hook(repo / ".git" / "hooks" / "reference-transaction",
               "#!/bin/sh\n[ \"$1\" = prepared ] || exit 0\necho 'foreign says no' >&2\nexit 1\n")
    install(repo, python=PY)
    before = git(repo, "rev-parse", "HEAD")
    r = commit(repo)
    assert r.returncode != 0
    assert "foreign says no" in r.stderr
    assert git(repo, "rev-parse", "HEAD") == before
    assert traced(trace) == []  # gitliza's check did not run after the refusal


def test_chained_hook_and_gitliza_read_the_same_stdin(repo: Path, bare: Path, trace: Path, tmp_path: Path) -> None:
    seen = tmp_path / "foreign-stdin"
    write_hook(repo / ".git" / "hooks" / "pre-push", f"#!/bin/sh\ncat > '{seen}'\n")
    install(repo, python=PY)
    git(repo, "remote", "add", "origin", str(bare))
    head = git(repo, "rev-parse", "HEAD")
    git(repo, "push", "-q", "origin", "main")
    expected = f"refs/heads/main {head} refs/heads/main {ZERO}\n"
    assert seen.read_text() == expected
    assert f"pre-push origin {bare} stdin={sha(expected)}" in traced(trace)
    assert not list(tmp_path.glob("gitliza-hook.*"))  # the stdin copy was not left behind


def test_uninstall_restores_foreign_hooks_byte_for_byte(repo: Path) -> None:
    hooks = repo / ".git" / "hooks"
    original = write_hook(hooks / "reference-transaction", b"#!/bin/sh\r\n# \xff not utf-8\r\nexit 0\r\n",
                          mode=0o750)
    target = repo / "scripts" / "push-hook"
    write_hook(target, "#!/bin/sh\nexit 0\n")
    (hooks / "pre-push").symlink_to(os.path.relpath(target, hooks))
    install(repo, python=PY)
    assert (hooks / "pre-push").is_symlink() is False  # replaced, not written through
    assert target.read_text() == "#!/bin/sh\nexit 0\n"

    report = uninstall(repo)
    assert sorted((a.hook, a.action) for a in report.actions) == sorted(
        [("reference-transaction", "restored"), ("pre-push", "restored"), ("pre-merge-commit", "removed")]
    )
    assert (hooks / "reference-transaction").read_bytes() == original
    assert stat.S_IMODE((hooks / "reference-transaction").stat().st_mode) == 0o750
    assert (hooks / "pre-push").is_symlink() and (hooks / "pre-push").resolve() == target.resolve()
    assert sorted(p.name for p in hooks.iterdir()) == ["pre-push", "reference-transaction"]
    assert uninstall(repo).actions == ()


def test_foreign_hook_next_to_an_existing_legacy_hook_is_refused_untouched(repo: Path) -> None:
    hooks = repo / ".git" / "hooks"
    write_hook(hooks / "pre-push", "#!/bin/sh\nexit 0\n")
    write_hook(hooks / f"pre-push{LEGACY_SUFFIX}", "#!/bin/sh\nexit 0\n")
    with pytest.raises(ValidationError, match="already exists"):
        install(repo, python=PY)
    assert sorted(p.name for p in hooks.iterdir()) == ["pre-push", f"pre-push{LEGACY_SUFFIX}"]


# --- upgrade and idempotence ---------------------------------------------------------------------


def test_older_shim_is_upgraded_and_keeps_its_chain(repo: Path, trace: Path) -> None:
    hooks = repo / ".git" / "hooks"
    current = f"# gitliza-hook-shim v{shim_version()} "
    old = render_shim("reference-transaction", "/old/venv/bin/python").replace(current, "# gitliza-hook-shim v0 ")
    write_hook(hooks / "reference-transaction", old)
    legacy = write_hook(hooks / f"reference-transaction{LEGACY_SUFFIX}", "#!/bin/sh\nexit 0\n")
    newer = render_shim("pre-push", "/new/venv/bin/python").replace(current, "# gitliza-hook-shim v999 ")
    write_hook(hooks / "pre-push", newer)

    actions = {a.hook: (a.action, a.legacy) for a in install(repo, python=PY).actions}
    assert actions["reference-transaction"] == ("upgraded", True)
    assert actions["pre-push"] == ("kept-newer", False)
    assert (hooks / "reference-transaction").read_text() == render_shim("reference-transaction", PY)
    assert (hooks / f"reference-transaction{LEGACY_SUFFIX}").read_bytes() == legacy
    assert (hooks / "pre-push").read_text() == newer  # never downgraded
    assert commit(repo).returncode == 0
    assert any(line.startswith("reference-transaction prepared ") for line in traced(trace))


def _v2_shim(hook: str, python: str) -> str:
    """A shim as gitliza with shim v2 installed it (tests/fixtures/hook-shim-v2.sh is that template)."""
    text = (ROOT / "tests" / "fixtures" / "hook-shim-v2.sh").read_text()
    values = {"HOOK": hook, "INSTALL_PYTHON": python, "SKIP_ALLOWED": "yes"}
    for name, value in values.items():
        text = text.replace(f"{name}='__{name}__'", f"{name}='{value}'")
    return text


def test_upgrade_from_v2_retires_the_pre_commit_shim(repo: Path, trace: Path) -> None:
    """v2 installed pre-commit too: the upgrade removes that shim and puts back the hook it chained;
    the other hooks are upgraded in place, chains kept."""
    hooks = repo / ".git" / "hooks"
    for hook in ("pre-commit", "pre-merge-commit", "reference-transaction", "pre-push"):
        write_hook(hooks / hook, _v2_shim(hook, "/old/venv/bin/python"))
    chained = write_hook(hooks / f"pre-commit{LEGACY_SUFFIX}", "#!/bin/sh\necho 'their pre-commit' >&2\n")
    assert {h.hook: h.version for h in hooks_status(repo).hooks if h.kind == "gitliza"} == {
        "pre-commit": 2, "pre-merge-commit": 2, "reference-transaction": 2, "pre-push": 2}
    report = install(repo, python=PY)
    assert [(a.hook, a.action, a.legacy) for a in report.actions] == [
        *((h, "upgraded", False) for h in CLIENT_HOOKS), ("pre-commit", "restored", True)]
    assert (hooks / "pre-commit").read_bytes() == chained
    assert not (hooks / f"pre-commit{LEGACY_SUFFIX}").exists()
    r = commit(repo)
    assert r.returncode == 0 and "their pre-commit" in r.stderr
    assert [line.split()[0] for line in traced(trace)] == ["reference-transaction"]
    # Without a chained hook the retired shim is just removed; a newer gitliza's is kept.
    (hooks / "pre-commit").unlink()
    write_hook(hooks / "pre-commit", _v2_shim("pre-commit", PY))
    assert [(a.hook, a.action) for a in install(repo, python=PY).actions][-1] == ("pre-commit", "removed")
    assert not (hooks / "pre-commit").exists()
    newer = _v2_shim("pre-commit", PY).replace("# gitliza-hook-shim v2 ", "# gitliza-hook-shim v999 ")
    write_hook(hooks / "pre-commit", newer)
    assert "pre-commit" not in [a.hook for a in install(repo, python=PY).actions]
    assert (hooks / "pre-commit").read_text() == newer


def test_uninstall_removes_v2_shims(repo: Path) -> None:
    hooks = repo / ".git" / "hooks"
    for hook in ("pre-commit", "reference-transaction"):
        write_hook(hooks / hook, _v2_shim(hook, PY))
    chained = write_hook(hooks / f"pre-commit{LEGACY_SUFFIX}", "#!/bin/sh\nexit 0\n")
    actions = sorted((a.hook, a.action) for a in uninstall(repo).actions)
    assert actions == [("pre-commit", "restored"), ("reference-transaction", "removed")]
    assert (hooks / "pre-commit").read_bytes() == chained
    assert not (hooks / "reference-transaction").exists()


def test_reinstall_is_idempotent(repo: Path) -> None:
    hooks = repo / ".git" / "hooks"
    install(repo, python=PY)
    before = {p.name: p.read_bytes() for p in hooks.iterdir()}
    again = install(repo, python=PY)
    assert [a.action for a in again.actions] == ["unchanged"] * len(CLIENT_HOOKS)
    assert not again.changed
    assert {p.name: p.read_bytes() for p in hooks.iterdir()} == before  # no shim chained to itself
    # The same version recording another interpreter (a moved venv) is rewritten.
    moved = install(repo, python="/elsewhere/bin/python")
    assert [a.action for a in moved.actions] == ["updated"] * len(CLIENT_HOOKS)
    assert all(h.python == "/elsewhere/bin/python" for h in hooks_status(repo).hooks if h.kind == "gitliza")


def test_status_reports_versions_interpreters_and_chains(repo: Path) -> None:
    hooks = repo / ".git" / "hooks"
    write_hook(hooks / "pre-push", "#!/bin/sh\nexit 0\n")
    before = {h.hook: h.kind for h in hooks_status(repo).hooks}
    assert before == {**{h: "missing" for h in CLIENT_HOOKS + SERVER_HOOKS}, "pre-push": "foreign"}
    install(repo, python=PY)
    status = hooks_status(repo)
    assert status.hooks_dir == hooks and not status.bare and status.current_version == shim_version()
    by_hook = {h.hook: h for h in status.hooks}
    assert all(by_hook[h].kind == "gitliza" and by_hook[h].version == shim_version() for h in CLIENT_HOOKS)
    assert by_hook["pre-push"].legacy and not by_hook["reference-transaction"].legacy
    assert by_hook["reference-transaction"].python == PY
    assert by_hook["pre-receive"].kind == "missing"


# --- where the hooks go --------------------------------------------------------------------------


@pytest.mark.parametrize("absolute", [False, True], ids=["relative", "absolute"])
def test_core_hooks_path_is_respected(repo: Path, trace: Path, tmp_path: Path, absolute: bool) -> None:
    target = tmp_path / "shared-hooks" if absolute else repo / ".githooks"
    git(repo, "config", "core.hooksPath", str(target) if absolute else ".githooks")
    (repo / "sub").mkdir()
    report = install(repo / "sub", python=PY)  # from a subdirectory: relative means from the top
    assert report.hooks_dir == target
    assert not (repo / ".git" / "hooks" / "reference-transaction").exists()
    assert commit(repo / "sub").returncode == 0
    assert any(line.startswith("reference-transaction prepared ") for line in traced(trace))


def test_linked_worktree_installs_into_the_common_hooks_dir(repo: Path, trace: Path) -> None:
    wt = repo.parent / "wt"
    git(repo, "worktree", "add", "-q", "-b", "feature", str(wt))
    report = install(wt, python=PY)
    assert report.hooks_dir == repo / ".git" / "hooks"
    assert commit(wt).returncode == 0
    assert any(line.startswith("reference-transaction prepared ") for line in traced(trace))


def test_hooks_path_dev_null_skips_client_hooks(repo: Path, trace: Path) -> None:
    install(repo, python=PY)
    assert run_git(repo, "-c", "core.hooksPath=/dev/null", "commit", "-q", "--allow-empty", "-m", "x").returncode == 0
    assert traced(trace) == []
    git(repo, "config", "core.hooksPath", "/dev/null")
    with pytest.raises(ValidationError, match="not a directory"):
        install(repo, python=PY)


def test_outside_a_repository_is_a_validation_error(tmp_path: Path) -> None:
    (tmp_path / "plain").mkdir()
    with pytest.raises(ValidationError, match="not inside a git repository"):
        install(tmp_path / "plain", python=PY)
    with pytest.raises(ValidationError, match="not a directory"):
        install(tmp_path / "missing", python=PY)


# --- the shim without gitliza, and the bypass ----------------------------------------------------


def test_missing_interpreter_fails_loudly_unless_bypassed(repo: Path, trace: Path, tmp_path: Path) -> None:
    # A `git-liza` first on PATH (an agent or a checkout chose PATH) must never stand in for the
    # recorded interpreter: the hook fails with the reinstall line, and the planted one never runs.
    planted = tmp_path / "planted-bin"
    marker = tmp_path / "shadow-ran"
    write_hook(planted / "git-liza", f"#!/bin/sh\necho SHADOW\ntouch {marker}\nexit 0\n")
    system = [os.path.dirname(shutil.which("git") or "/usr/bin"), "/usr/bin", "/bin"]
    path = os.pathsep.join(dict.fromkeys([str(planted), *system]))
    install(repo, python=str(tmp_path / "gone" / "python"))
    before = git(repo, "rev-parse", "HEAD")
    r = run_git(repo, "commit", "-q", "--allow-empty", "-m", "x", env={"PATH": path})
    assert r.returncode != 0
    assert "cannot run gitliza" in r.stderr and "LIZA_SKIP_HOOKS=1" in r.stderr
    ours = [line for line in r.stderr.splitlines() if line.startswith("gitliza:")]
    assert len(ours) == 1 and "hooks install" in ours[0], r.stderr
    assert "SHADOW" not in r.stdout + r.stderr and not marker.exists()
    assert git(repo, "rev-parse", "HEAD") == before
    r = run_git(repo, "commit", "-q", "--allow-empty", "-m", "x", env={"PATH": path, "LIZA_SKIP_HOOKS": "1"})
    assert r.returncode == 0, r.stderr
    assert "LIZA_SKIP_HOOKS=1" in r.stderr
    assert traced(trace) == []


# --- the dispatcher ------------------------------------------------------------------------------


def test_every_installed_hook_has_a_handler() -> None:
    assert set(CLIENT_HOOKS + SERVER_HOOKS) <= set(dispatch.HOOK_HANDLERS)


def test_python_m_gitliza_hook_impl(trace: Path) -> None:
    r = subprocess.run([PY, "-m", "gitliza", "hook-impl", "pre-push", "origin", "u rl"], input=b"a b c\n",
                       capture_output=True)
    assert r.returncode == 0, r.stderr
    assert traced(trace) == ["pre-push origin u rl stdin=" + sha(b"a b c\n")]
    unknown = subprocess.run([PY, "-m", "gitliza", "hook-impl", "post-nothing"], capture_output=True, text=True)
    assert unknown.returncode == 1
    assert len(unknown.stderr.strip().splitlines()) == 1 and "unknown hook 'post-nothing'" in unknown.stderr
    assert subprocess.run([PY, "-m", "gitliza", "hook-impl"], capture_output=True).returncode == 1


def test_main_without_the_cli_says_so(monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]) -> None:
    monkeypatch.setitem(sys.modules, "gitliza.cli.app", None)  # makes `import gitliza.cli.app` fail
    # An argument the fast path (gitliza/cli/fastpath.py, which needs no gitliza.cli.app) leaves to typer.
    monkeypatch.setattr(sys, "argv", ["gitliza", "status", "--no-such-option"])
    assert gitliza_main(["status", "--no-such-option"]) == EXIT_DEPENDENCY
    err = capsys.readouterr().err
    assert "gitliza.cli.app" in err and len(err.strip().splitlines()) == 1
