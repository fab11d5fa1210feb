"""What each role's sandbox mounts (policy.py, pure) and which board calls each role may make
(rules.py). The rogue suite (test_rogue.py) checks the same against real escapes; these pin the
argv down so that a change to it is seen."""
from __future__ import annotations

from pathlib import Path

import pytest

from gitliza.core.states import Role
from gitliza.sandbox import policy, rules

MAIN = Path("/home/u/proj")
COMMON = MAIN / ".git"
WT = MAIN / ".worktrees/t1"
A = COMMON / "liza/sandboxes/coder-1"


def view(role: str, coder_git: policy.CoderGit | None = None) -> policy.View:
    return policy.View(
        role=role, cwd=WT if role != policy.PLANNER else MAIN, main=MAIN, common=COMMON,
        common_entries=("HEAD", "config", "hooks", "liza", "objects", "refs", "worktrees"),
        home=A / "home", tmp=A / "tmp", run=Path("/tmp/gitliza-broker-x"),
        hidden=(Path("/home/u"), Path("/tmp/pytest-home")), reexpose=(Path("/home/u/.venv"),),
        coder_git=coder_git)


def pairs(argv: list[str], flag: str) -> list[tuple[str, str]]:
    return [(argv[i + 1], argv[i + 2]) for i, a in enumerate(argv) if a == flag]


def writable(argv: list[str]) -> set[str]:
    return {dest for _src, dest in pairs(argv, "--bind")}


CG = policy.CoderGit(shadow=A / "git", admin=COMMON / "worktrees/t1", name="t1",
                     dotgit=A / "dotgit", commondir=A / "commondir", empty=A / "empty")


@pytest.mark.parametrize("role", [policy.PLANNER, policy.REVIEWER])
def test_planner_and_reviewer_write_nothing_of_the_repository(role: str) -> None:
    argv = policy.bwrap_argv("bwrap", view(role), ["agent"])
    # the FIFOs of its channel to the supervisor (fifos.py) in a directory of their own
    assert writable(argv) == {"/tmp", str(A / "home"), policy.BROKER_INSIDE + "-conn"}
    assert argv[-2:] == ["--", "agent"]


def test_a_coder_writes_its_worktree_and_its_own_git_dir_only() -> None:
    argv = policy.bwrap_argv("bwrap", view(policy.CODER, CG), ["agent"])
    s = A / "git"
    assert writable(argv) == {"/tmp", str(A / "home"), policy.BROKER_INSIDE + "-conn", str(WT),
                              str(s / "objects"),
                              str(s / "refs"), str(s / "logs"), str(s / "worktrees/t1")}
    ro = dict((dest, src) for src, dest in pairs(argv, "--ro-bind"))
    # What git must not be pointed elsewhere by, and the live board: read-only over the
    # writable ones (a later mount covers an earlier one).
    order = argv.index
    for dest in (s / "worktrees/t1/HEAD", s / "worktrees/t1/commondir",
                 s / "worktrees/t1/gitdir", s / "worktrees/t1/config.worktree",
                 s / "objects/info", s / "refs/liza", WT / ".git"):
        assert str(dest) in ro
        parent = max((w for w in writable(argv) if str(dest).startswith(w + "/")), key=len)
        assert order(str(dest)) > order(parent)
    assert ro[str(s / "refs/liza")] == str(COMMON / "refs/liza")
    assert ro[str(WT / ".git")] == str(A / "dotgit")


@pytest.mark.parametrize("role", [policy.PLANNER, policy.REVIEWER, policy.CODER])
def test_keys_home_and_other_processes_are_out_of_sight(role: str) -> None:
    argv = policy.bwrap_argv("bwrap", view(role, CG), ["agent"])
    mounted = {dest for _s, dest in pairs(argv, "--ro-bind") + pairs(argv, "--bind")}
    assert not [m for m in mounted if m.startswith(str(COMMON / "liza")) and
                not m.startswith(str(A))]
    assert str(COMMON / "liza") not in mounted
    assert ("--tmpfs", str(COMMON)) in zip(argv, argv[1:])
    assert ("--tmpfs", "/home/u") in zip(argv, argv[1:])
    assert "/tmp/pytest-home" not in argv  # under /tmp: hidden by the private /tmp already
    for flag in ("--unshare-pid", "--unshare-user", "--die-with-parent"):
        assert flag in argv
    assert argv[argv.index("--cap-drop") + 1] == "ALL"
    # The re-exposed interpreter comes after the home is hidden, read-only.
    assert argv.index("/home/u/.venv") > argv.index("/home/u")
    assert ("/tmp/gitliza-broker-x", policy.BROKER_INSIDE) in pairs(argv, "--ro-bind")
    assert ("--remount-ro", str(COMMON)) in zip(argv, argv[1:])


def test_network_off_is_a_namespace_of_its_own() -> None:
    v = view(policy.REVIEWER)
    assert "--unshare-net" not in policy.bwrap_argv("bwrap", v, ["a"])
    off = policy.View(**{**v.__dict__, "network": False})
    assert "--unshare-net" in policy.bwrap_argv("bwrap", off, ["a"])


@pytest.mark.parametrize("role,word,ok", [
    (Role.CODER, "submit", True), (Role.CODER, "block", True), (Role.CODER, "handoff", True),
    (Role.CODER, "status", True), (Role.CODER, "verdict", False), (Role.CODER, "merge", False),
    (Role.CODER, "claim", False), (Role.CODER, "heartbeat", False),
    (Role.CODE_REVIEWER, "verdict", True), (Role.CODE_REVIEWER, "submit", False),
    (Role.CODE_REVIEWER, "merge", False), (Role.CODE_REVIEWER, "claim-review", False),
    (Role.PLANNER, "add", True), (Role.PLANNER, "finalize", True),
    (Role.PLANNER, "config", False), (Role.PLANNER, "pause", False),
    (Role.PLANNER, "resume", False), (Role.PLANNER, "abort", False),
    (Role.PLANNER, "register", False), (Role.PLANNER, "rekey", False),
    (Role.PLANNER, "agent", False), (Role.PLANNER, "validate", False),
])
def test_each_role_may_make_its_ops_and_nobody_the_supervisors_or_the_humans(
        role: Role, word: str, ok: bool) -> None:
    v = rules.check_command(role, "x-1", [word, "t1"])
    assert v.ok is ok
    if not ok:
        assert word in v.rule and "\n" not in v.rule


def test_another_agents_id_in_a_flag_is_refused() -> None:
    for argv in (["submit", "t1", "--agent", "coder-2"], ["submit", "t1", "--agent=coder-2"],
                 ["submit", "t1", "--agent"], ["status", "-a", "human"]):
        v = rules.check_command(Role.CODER, "coder-1", argv)
        assert not v.ok and "identity is bound by the supervisor" in v.rule, argv
    assert rules.check_command(Role.CODER, "coder-1", ["submit", "t1", "--agent", "coder-1"]).ok
    assert not rules.check_command(Role.CODER, "coder-1", []).ok
    assert not rules.check_tool(Role.PLANNER, "config").ok
    assert rules.check_tool(Role.PLANNER, "add").ok


def test_add_from_a_file_is_refused_to_an_agent() -> None:
    """Issue 35: `add --from FILE` would have the supervisor open the agent's path outside; only
    `--from -` passes (the content the agent's client read inside its view, broker.py)."""
    from gitliza.core.states import Role
    from gitliza.sandbox import rules
    for argv in (["add", "--from", "/root/.ssh/id_ed25519"], ["add", "--from=tasks.md"],
                 ["add", "--from", "-", "--from", "x"]):
        v = rules.check_command(Role.PLANNER, "planner-1", argv)
        assert not v.ok and "--from FILE" in v.rule
    assert rules.check_command(Role.PLANNER, "planner-1", ["add", "--from", "-"]).ok
    assert rules.check_command(Role.PLANNER, "planner-1", ["add", "t9", "--desc", "d"]).ok


def test_on_with_its_own_network_unshares_it_and_names_its_dns() -> None:
    """`on` with slirp4netns (usernet.py): a network namespace of its own, and a resolv.conf
    naming slirp's DNS forwarder over the host's (where its link leads)."""
    from dataclasses import replace
    ours, host = A / "resolv.conf", Path("/run/systemd/resolve/stub-resolv.conf")
    argv = policy.bwrap_argv("bwrap", replace(view(policy.CODER, CG), network=False,
                                              resolv=(ours, host)), ["agent"])
    assert "--unshare-net" in argv
    assert (str(ours), str(host)) in pairs(argv, "--ro-bind")
    assert "--unshare-net" not in policy.bwrap_argv("bwrap", view(policy.CODER, CG), ["agent"])


def test_the_attic_is_listed_in_a_sandbox_and_restored_by_git_checkout() -> None:
    """A takeover's prompt names a snapshot; `attic --restore` would make a worktree outside the
    sandbox's view, so it is refused with the way that works there (issue 48)."""
    for role in (Role.CODER, Role.CODE_REVIEWER, Role.PLANNER):
        assert rules.check_command(role, "x-1", ["attic", "t1"]).ok
    for argv in (["attic", "t1", "--restore", "abc123"], ["attic", "t1", "--restore=abc123"]):
        v = rules.check_command(Role.CODER, "coder-1", argv)
        assert not v.ok and "git checkout COMMIT -- ." in v.rule, argv
