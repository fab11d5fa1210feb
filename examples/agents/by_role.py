#!/usr/bin/env python3
"""One agent program for every member of `git liza team -- python3 by_role.py`: the supervisor
sets LIZA_ROLE, and this runs the scripted agent of that role (planner, coder, code-reviewer).

Then it reports the run's usage as a `-- COMMAND` agent does (`git liza usage report`, docs/
usage.md): a scripted agent calls no model, so it counts what a model would have read and written,
a token per four characters of its prompt (input) and of its output (output), as model `scripted`
(the example's price table prices it)."""
from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

SCRIPTS = {"planner": "planner.py", "coder": "coder.py", "code-reviewer": "reviewer.py"}

if __name__ == "__main__":
    role = os.environ.get("LIZA_ROLE", "")
    if role not in SCRIPTS:
        sys.exit(f"by_role.py: LIZA_ROLE {role!r} is not one of {', '.join(SCRIPTS)}")
    script = Path(__file__).resolve().parent / SCRIPTS[role]
    r = subprocess.run([sys.executable, str(script), *sys.argv[1:]], stdout=subprocess.PIPE,
                       text=True)
    sys.stdout.write(r.stdout)
    sys.stdout.flush()
    read = len(Path(os.environ["LIZA_PROMPT_FILE"]).read_text())
    subprocess.run(["git", "liza", "usage", "report", "--input", str(read // 4 + 1), "--output",
                    str(len(r.stdout) // 4 + 1), "--model", "scripted"], check=False,
                   stdout=subprocess.DEVNULL)
    sys.exit(r.returncode)
