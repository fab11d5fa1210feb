"""Prism and GitHub's OpenAPI description at pinned versions, installed with npm outside the clone.

Standard library only: `.ci/run` runs `python3 -m tests.forge.tools` before the venv exists to
install them best effort, like the agent CLIs (tests/agentcli/clis.py). What is installed is
exactly `tests/forge/npm/package.json` and its `package-lock.json` (`npm ci`: every transitive
package pinned with its integrity hash), so two machines run the same Prism on the same
description:
- `@stoplight/prism-cli` (the `prism` executable: `prism mock` and `prism proxy`),
- `@octokit/openapi` (GitHub's published OpenAPI 3.0 descriptions; we use
  `generated/api.github.com.json`, the one for github.com, with `$ref`s: Prism resolves them
  itself and starts from it in ~10 s on this machine, against ~13 s from the 73 MB
  dereferenced `api.github.com.deref.json`),
- `@octokit/graphql-schema` and `graphql` (GitHub's published GraphQL schema, and graphql-js to
  check the bridge's one GraphQL request against it: tests/forge/graphql_check.cjs).

The cache is `~/.cache/gitliza-forge-tools/forge-tools-<digest of the lock>/`
(`$GITLIZA_FORGE_TOOLS_CACHE` overrides): a new lock is a new directory, an install is finished
when `.complete` is there, and a lock file keeps parallel pytest-xdist workers (and CI) from
installing twice.
"""
from __future__ import annotations

import fcntl
import hashlib
import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

CACHE = Path(os.environ.get("GITLIZA_FORGE_TOOLS_CACHE") or
             Path(os.path.expanduser("~")) / ".cache" / "gitliza-forge-tools")
NPM_DIR = Path(__file__).resolve().parent / "npm"
INSTALL_TIMEOUT = 900
DESCRIPTION = "node_modules/@octokit/openapi/generated/api.github.com.json"
GRAPHQL_SCHEMA = "node_modules/@octokit/graphql-schema/schema.graphql"
WHY_MISSING = "Prism and GitHub's API descriptions are not installed " \
              "(python3 -m tests.forge.tools; CI installs them)"


def versions() -> dict[str, str]:
    """The pinned npm packages: name -> version (from tests/forge/npm/package.json)."""
    deps: dict[str, str] = json.loads((NPM_DIR / "package.json").read_text())["dependencies"]
    return dict(deps)


def home() -> Path:
    digest = hashlib.sha256((NPM_DIR / "package.json").read_bytes()
                            + (NPM_DIR / "package-lock.json").read_bytes()).hexdigest()[:12]
    return CACHE / f"forge-tools-{digest}"


def _installed(root: Path) -> bool:
    return ((root / ".complete").is_file() and (root / "node_modules/.bin/prism").exists()
            and (root / DESCRIPTION).is_file() and (root / GRAPHQL_SCHEMA).is_file())


def prism_bin() -> Path | None:
    """The installed `prism` executable, or None."""
    root = home()
    return root / "node_modules/.bin/prism" if _installed(root) else None


def github_description() -> Path | None:
    """GitHub's OpenAPI description of api.github.com (the installed file), or None."""
    root = home()
    return root / DESCRIPTION if _installed(root) else None


def npm_root() -> Path | None:
    """The installed npm prefix (node_modules/ inside), or None."""
    root = home()
    return root if _installed(root) else None


def install() -> str | None:
    """Install the pinned packages unless they are there: None when ready, else why not (one
    line). Idempotent, and locked across processes."""
    root = home()
    if _installed(root):
        return None
    CACHE.mkdir(parents=True, exist_ok=True)
    with open(CACHE / ".lock", "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        if _installed(root):  # another worker finished it while we waited
            return None
        if shutil.which("npm") is None or shutil.which("node") is None:
            return "Prism needs node and npm, which are not installed"
        shutil.rmtree(root, ignore_errors=True)
        root.mkdir(parents=True)
        for name in ("package.json", "package-lock.json"):
            shutil.copyfile(NPM_DIR / name, root / name)
        argv = ["npm", "ci", "--prefix", str(root), "--no-audit", "--no-fund",
                "--loglevel=error"]
        try:
            r = subprocess.run(argv, capture_output=True, text=True, timeout=INSTALL_TIMEOUT)
        except subprocess.TimeoutExpired:
            return f"installing Prism and @octokit/openapi took over {INSTALL_TIMEOUT}s"
        if r.returncode != 0 or not (root / "node_modules/.bin/prism").exists():
            err = (r.stderr.strip() or r.stdout.strip()).splitlines()
            return ("cannot install Prism and @octokit/openapi from npm (registry "
                    f"unreachable?): {err[-1] if err else r.returncode}")
        for path in (DESCRIPTION, GRAPHQL_SCHEMA):
            if not (root / path).is_file():
                return f"the npm packages have no {path} any more"
        (root / ".complete").write_text(json.dumps(versions()) + "\n")
    return None


def main() -> int:
    """Install (best effort): one line."""
    why = install()
    pinned = ", ".join(f"{k} {v}" for k, v in versions().items())
    print(f"forge test tools ({pinned}): " + ("ready" if why is None else why), flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
