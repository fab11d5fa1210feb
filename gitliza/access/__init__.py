"""Access for agents and programs: the MCP server (`git liza mcp`), its tool table, the MCP
configuration handed to agent CLIs, the event stream (`git liza events`) and the live board view
(`git liza top`). Everything here goes through the same library API as the CLI, in process."""
