"""The team runtime: `git liza agent` supervisors (supervisor.py), the agent process (runner.py),
lease heartbeats while it runs (heartbeat.py) and `git liza wait` (wait.py)."""
