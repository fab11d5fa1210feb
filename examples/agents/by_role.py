#!/usr/bin/env python3
"""One agent program for every member of `git liza team -- python3 by_role.py`: the supervisor
sets LIZA_ROLE, and this runs the scripted agent of that role (planner, coder, code-reviewer)."""
from __future__ import annotations

import os
import sys
from pathlib import Path

SCRIPTS = {"planner": "planner.py", "coder": "coder.py", "code-reviewer": "reviewer.py"}

if __name__ == "__main__":
    role = os.environ.get("LIZA_ROLE", "")
    if role not in SCRIPTS:
        sys.exit(f"by_role.py: LIZA_ROLE {role!r} is not one of {', '.join(SCRIPTS)}")
    script = Path(__file__).resolve().parent / SCRIPTS[role]
    os.execv(sys.executable, [sys.executable, str(script), *sys.argv[1:]])
