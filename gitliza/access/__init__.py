"""Access for agents and programs: the MCP server (`git liza mcp`), its tool table, the MCP
configuration handed to agent CLIs and the event stream (`git liza events`); the live board view
(`git liza top`) sits with the watcher in gitliza/governance/top.py. Everything here goes through
the same library API as the CLI, in process."""
