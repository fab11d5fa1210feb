#!/usr/bin/env python3
"""Set-up and entry points that need nothing but Python 3.11+ and git.

    python3 dev.py example   # the main job: a team builds the hello-CLI demo (examples/team.py)
    python3 dev.py example walkthrough   # the scripted command-by-command walkthrough
    python3 dev.py example offline   # a real agent CLI (Claude Code; --cli codex|gemini|mistral)
                                     # against a scripted model server: no account, no API key
    python3 dev.py test      # run the whole test suite
    python3 dev.py test --newest   # the suite in a throw-away venv with every dependency at its newest
    python3 dev.py bench     # run the benchmarks (not part of the tests)
    python3 dev.py lock      # refresh requirements.lock from pyproject.toml (uv pip compile)

Each creates ./.venv on first use and installs exactly requirements.lock (every dependency,
direct and transitive, every extra, pinned with hashes), then gitliza itself (editable). When the
lock or pyproject.toml changes, the venv is made anew, so it never keeps a package the lock no
longer names. Extra arguments are passed on (to pytest for `test`).
"""
from __future__ import annotations

import hashlib
import os
import shutil
import subprocess
import sys
import tempfile
import tomllib
import venv
from pathlib import Path

ROOT = Path(__file__).resolve().parent
VENV = ROOT / ".venv"
LOCK = ROOT / "requirements.lock"
# The same pins without hashes, for `pip install -c constraints.txt gitliza` into an environment of
# one's own (pip turns a constraints file with hashes into hash-checking of everything, which a
# local directory or another package's sdist cannot pass).
CONSTRAINTS = ROOT / "constraints.txt"
PYPROJECT = ROOT / "pyproject.toml"
STAMP_NAME = ".gitliza-install-stamp"
# The lock is written by uv (`uv pip compile`, CONTRIBUTING.md says why); pinned so that two people
# refreshing the lock on the same day get the same file.
UV_VERSION = "0.13.9"
# The line of requirements.lock that says which pyproject.toml it was made from: a lock older than
# the dependencies it should pin is refused rather than silently installed.
DIGEST_PREFIX = "# gitliza-pyproject-deps-sha256: "


def _bin(env: Path) -> Path:
    return env / ("Scripts" if os.name == "nt" else "bin")


def _python(env: Path) -> Path:
    return _bin(env) / ("python.exe" if os.name == "nt" else "python")


def _project() -> dict[str, object]:
    with PYPROJECT.open("rb") as fh:
        return tomllib.load(fh)


def _extras() -> list[str]:
    project = _project()["project"]
    assert isinstance(project, dict)
    return sorted(project.get("optional-dependencies", {}))


def deps_digest() -> str:
    """What the lock must agree with: the build requirements, the dependencies and every extra
    (not the version, the description or the tool settings, which change no install)."""
    data = _project()
    project = data["project"]
    assert isinstance(project, dict)
    build = data.get("build-system", {})
    assert isinstance(build, dict)
    pinned = {
        "build": build.get("requires", []),
        "dependencies": project.get("dependencies", []),
        "optional": project.get("optional-dependencies", {}),
        "python": project.get("requires-python", ""),
    }
    return hashlib.sha256(repr(sorted(pinned.items())).encode()).hexdigest()


def _lock_digest() -> str | None:
    if not LOCK.exists():
        return None
    for line in LOCK.read_text().splitlines():
        if line.startswith(DIGEST_PREFIX):
            return line[len(DIGEST_PREFIX):].strip()
    return None


def _check_lock() -> None:
    if _lock_digest() != deps_digest():
        sys.exit("dev.py: requirements.lock does not match pyproject.toml's dependencies; "
                 "run `python3 dev.py lock` and commit both")


def _pip(py: Path, *args: str) -> None:
    subprocess.run([str(py), "-m", "pip", "--disable-pip-version-check", *args], check=True)


def _create(env: Path) -> Path:
    if sys.version_info < (3, 11):
        sys.exit(f"gitliza needs Python 3.11+, this is {sys.version.split()[0]}")
    if env.exists():
        shutil.rmtree(env)
    print(f"dev.py: creating {env}", flush=True)
    venv.EnvBuilder(with_pip=True).create(env)
    return _python(env)


def ensure_locked_venv() -> Path:
    """./.venv with exactly requirements.lock and gitliza (editable); made anew when either the
    lock or pyproject.toml changed since the last install."""
    _check_lock()
    py = _python(VENV)
    stamp = VENV / STAMP_NAME
    want = hashlib.sha256(PYPROJECT.read_bytes() + LOCK.read_bytes()
                          + sys.version.encode()).hexdigest()
    if py.exists() and stamp.exists() and stamp.read_text() == want:
        return py
    py = _create(VENV)
    print("dev.py: installing requirements.lock (pinned, hash-checked) and gitliza", flush=True)
    _pip(py, "install", "-q", "--require-hashes", "--no-deps", "-r", str(LOCK))
    # The build backend (setuptools) comes from the lock too, so nothing unpinned is fetched.
    # editable_mode=compat: a .pth that puts the clone on sys.path. setuptools' default editable
    # install is an import hook loaded by every interpreter start in the venv (~25 ms and typing,
    # inspect and pathlib imported before the first line runs), which a user's `pip install .`
    # does not pay: the CLI figures would measure the hook, not gitliza.
    _pip(py, "install", "-q", "--no-deps", "--no-build-isolation",
         "--config-settings", "editable_mode=compat", "-e", str(ROOT))
    stamp.write_text(want)
    return py


def newest_venv(where: Path) -> Path:
    """A throw-away venv with gitliza and every extra at the newest releases the ranges allow."""
    py = _create(where)
    print("dev.py: installing the newest releases of every dependency (no lock)", flush=True)
    _pip(py, "install", "-q", "--upgrade", "pip")
    _pip(py, "install", "-q", "--upgrade", "--upgrade-strategy", "eager",
         "-e", f"{ROOT}[{','.join(_extras())}]")
    _report_drift(py)
    return py


def _locked_pins() -> dict[str, str]:
    pins: dict[str, str] = {}
    for line in LOCK.read_text().splitlines():
        if line and not line[0].isspace() and not line.startswith("#") and "==" in line:
            name, _, rest = line.partition("==")
            pins.setdefault(_canon(name), rest.split()[0].rstrip(";"))
    return pins


def _canon(name: str) -> str:
    return name.strip().lower().replace("_", "-").replace(".", "-")


def _report_drift(py: Path) -> None:
    out = subprocess.run([str(py), "-m", "pip", "list", "--format=freeze"], check=True,
                         capture_output=True, text=True).stdout
    pins = _locked_pins()
    moved = []
    for line in out.splitlines():
        name, _, version = line.partition("==")
        locked = pins.get(_canon(name))
        if locked is not None and version and version != locked:
            moved.append(f"{name} {locked} -> {version}")
    print("dev.py: differs from the lock: " + (", ".join(moved) if moved else "nothing"),
          flush=True)


def refresh_lock() -> int:
    """Rewrite requirements.lock with uv: every dependency of every extra at its newest allowed
    release, for every platform and Python 3.11+ (--universal), with the hashes of every file."""
    tools = Path(os.environ.get("XDG_CACHE_HOME", Path.home() / ".cache")) / "gitliza-dev" / \
        f"uv-{UV_VERSION}"
    uv = _bin(tools) / "uv"
    if not uv.exists():
        py = _create(tools)
        _pip(py, "install", "-q", f"uv=={UV_VERSION}")
    data = _project()
    build = data.get("build-system", {})
    assert isinstance(build, dict)
    with tempfile.TemporaryDirectory() as tmp:
        build_in = Path(tmp) / "build-requirements.in"
        build_in.write_text("\n".join(build.get("requires", [])) + "\n")
        out = Path(tmp) / "requirements.lock"
        subprocess.run([str(uv), "pip", "compile", "--quiet", "--universal",
                        "--python-version", "3.11", "--all-extras", "--generate-hashes",
                        "--no-header", "--no-annotate",
                        "-o", str(out), str(PYPROJECT), str(build_in)],
                       check=True, cwd=ROOT)
        body = out.read_text()
    LOCK.write_text(
        "# requirements.lock: every dependency of gitliza, direct and transitive, every extra and\n"
        "# the build backend, pinned with hashes. Made by `python3 dev.py lock`\n"
        f"# (uv {UV_VERSION}: uv pip compile --universal --all-extras --generate-hashes);\n"
        "# do not edit by hand. Install the tested set with:\n"
        "#   pip install --require-hashes --no-deps -r requirements.lock && pip install --no-deps .\n"
        f"{DIGEST_PREFIX}{deps_digest()}\n" + body)
    CONSTRAINTS.write_text(
        "# constraints.txt: the versions of requirements.lock without the hashes, made with it by\n"
        "# `python3 dev.py lock`. The tested set in an environment of your own:\n"
        "#   pip install -c constraints.txt gitliza   (or `.` from a clone)\n"
        + "".join(_pin_line(line) for line in body.splitlines(keepends=True)))
    pins = len(_locked_pins())
    print(f"dev.py: wrote {LOCK.name}: {pins} packages, {LOCK.stat().st_size:,} bytes; "
          f"{CONSTRAINTS.name}")
    return 0


def _pin_line(line: str) -> str:
    """A lock line without its hashes: `name==1.0 ; marker \\` -> `name==1.0 ; marker`."""
    if not line or line[0].isspace() or line.startswith("#"):
        return ""
    return line.split(" \\")[0].split(" --hash")[0].rstrip() + "\n"


def _install_man(py: Path, env: Path) -> None:
    """Regenerate man/git-liza.1 from the CLI and put it in the venv's share/man/man1, where
    `git help liza` (and so `git liza --help`) finds it with the venv's bin on PATH."""
    subprocess.run([str(py), "-m", "gitliza.cli.manpage", str(ROOT / "man" / "git-liza.1"),
                    str(env / "share" / "man" / "man1" / "git-liza.1")], cwd=ROOT, check=False)


def _run(py: Path, env_dir: Path, cmd: str, rest: list[str]) -> int:
    env = dict(os.environ, PATH=f"{_bin(env_dir)}{os.pathsep}{os.environ.get('PATH', '')}")
    if cmd == "example":
        name = rest.pop(0) if rest and not rest[0].startswith("-") else "team"
        args = [str(py), str(ROOT / "examples" / f"{name}.py"), *rest]
    elif cmd == "test":
        args = [str(py), "-m", "pytest", "-n", "auto", *rest]
    else:
        args = [str(py), str(ROOT / "benchmarks" / "run.py"), *rest]
    return subprocess.run(args, cwd=ROOT, env=env).returncode


def main(argv: list[str]) -> int:
    if not argv or argv[0] not in {"example", "test", "bench", "lock"}:
        print(__doc__)
        return 1
    cmd, rest = argv[0], argv[1:]
    if cmd == "lock":
        return refresh_lock()
    if cmd == "test" and "--newest" in rest:
        rest.remove("--newest")
        where = Path(tempfile.mkdtemp(prefix="gitliza-newest-"))
        # mkdtemp makes it 0700; the suite runs `git liza` from this venv as another user too
        # (tests/faults/test_messages.py: permissions hold for uid 65534, not for root), who must
        # be able to enter it, as it enters ./.venv.
        where.chmod(0o755)
        try:
            py = newest_venv(where / "venv")
            return _run(py, where / "venv", cmd, rest)
        finally:
            shutil.rmtree(where, ignore_errors=True)
    py = ensure_locked_venv()
    _install_man(py, VENV)
    return _run(py, VENV, cmd, rest)


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
