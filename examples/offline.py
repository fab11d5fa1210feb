#!/usr/bin/env python3
"""The main job with a real agent CLI and no API key: `examples/team.py --cli NAME` against the
scripted model server the test suite uses (tests/agentcli/), on 127.0.0.1.

    python3 examples/offline.py                   # Claude Code (default)
    python3 examples/offline.py --cli codex       # or gemini, mistral
    python3 examples/offline.py --keep            # keep the team's repository to look around

It installs the pinned CLI (npm, or a Python 3.12+ for mistral) into ~/.cache/gitliza-agent-clis
once, starts the scripted model server, gives the CLI a private HOME configured for it (every
request goes to 127.0.0.1: the proxy variables point there too), and runs the hello-CLI demo: a
planner, two coders and a reviewer, each a `git liza agent ROLE --cli NAME` supervisor running the
real CLI, whose model turns are scripted. A newcomer sees a real agent CLI take a task to MERGED
without an account. Exit 5 when the CLI cannot be installed here (the reason is printed).
"""
from __future__ import annotations

import argparse
import os
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))  # the scripted server and the CLI installer live in tests/agentcli

from tests.agentcli import clis  # noqa: E402
from tests.agentcli.modelserver import Server  # noqa: E402


def main(argv: list[str]) -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--cli", default="claude", choices=sorted(clis.CLIS))
    p.add_argument("--keep", action="store_true", help="keep the team's repository")
    args = p.parse_args(argv)
    cli = clis.CLIS[args.cli]
    print(f"# installing {cli.package} {cli.version} (once) into {cli.home}", flush=True)
    why = clis.install(cli)
    if why is not None:
        print(f"cannot run {args.cli} offline here: {why}", file=sys.stderr)
        return 5
    # Not under /tmp: Gemini CLI ignores settings below a world-writable directory.
    runs = clis.CACHE.parent / "gitliza-offline-runs"
    runs.mkdir(mode=0o700, parents=True, exist_ok=True)
    home = Path(tempfile.mkdtemp(prefix="home-", dir=runs))
    try:
        with Server(log_file=home / "model-requests.jsonl") as server:
            clis.configure_home(home, server.url)
            # The CLIs' commits need an identity; the demo's own, in the private HOME.
            (home / ".gitconfig").write_text(
                "[user]\n\tname = gitliza demo\n\temail = demo@liza.invalid\n")
            env = clis.environment(dict(os.environ), home, server.url,
                                   [cli.bin, Path(sys.executable).parent])
            env["TMPDIR"] = str(runs)
            print(f"# scripted model server on {server.url}; the team runs {args.cli}",
                  flush=True)
            # The hint team.py prints names the command that runs this again, not team.py's own.
            again = f"python3 dev.py example offline --cli {args.cli} --keep"
            team = [sys.executable, str(ROOT / "examples" / "team.py"), "--cli", args.cli,
                    "--again", again]
            return subprocess.run(team + (["--keep"] if args.keep else []), env=env).returncode
    finally:
        shutil.rmtree(home, ignore_errors=True)


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
