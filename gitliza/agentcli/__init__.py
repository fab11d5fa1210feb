"""The agent CLIs: one module per CLI (claude.py, codex.py, gemini.py, vibe.py), each a `PROFILE`
(base.py) holding all gitliza knows of it: its launch words and permissions, its MCP
configuration, how its usage is read, what the sandbox copies into an agent's home and lets it
reach, where it keeps its transcript. registry.py finds them; launch.py turns a profile into a
launch. The team, the sandbox, the MCP configuration and the agent logs read them from here and
name no CLI themselves (docs/architecture.md; CONTRIBUTING.md "A new agent CLI")."""
from gitliza.agentcli.base import Context, Launch, Permissions, Profile, Prompt
from gitliza.agentcli.launch import PLAIN, parse_permissions, plan, with_model
from gitliza.agentcli.registry import (DEFAULT_CLI, choices, find, for_command, profile,
                                       profiles)

__all__ = ["Context", "DEFAULT_CLI", "Launch", "PLAIN", "Permissions", "Profile", "Prompt",
           "choices", "find", "for_command", "parse_permissions", "plan", "profile", "profiles",
           "with_model"]
