"""The team runtime: `git liza agent` supervisors (supervisor.py: the loop; work.py, sessions.py,
briefing.py, generation.py: its parts), the agent process (runner.py), lease heartbeats while it
runs (heartbeat.py), agent CLI launches (prepare.py, over gitliza/agentcli/) and `git liza team`
(launch.py)."""
