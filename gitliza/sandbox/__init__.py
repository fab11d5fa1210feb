"""The OS sandbox around every agent a supervisor starts (docs/security.md).

- policy.py (pure): what an agent of each role sees and may write, as the bubblewrap argv;
- rules.py (pure): which `git liza` commands and MCP tools an agent of each role may have its
  supervisor apply;
- bwrap.py: finding bubblewrap and checking that it can start here (else exit 5, naming the fix);
- gitview.py: the coder's own git directory (private objects and refs beside the shared ones) and
  bringing its commits onto the real task branch;
- box.py: one agent's sandbox for one launch (its private HOME and tmp, the view, the broker);
- broker.py: the supervisor's end of the channel an agent's `git liza` and MCP calls take;
- client.py: the agent's end (stdlib only: it runs inside the sandbox); fifos.py: the FIFOs the
  two ends speak over (an agent has no unix socket);
- seccomp.py: the filter every sandboxed process runs under (no unix socket, no TIOCSTI);
- treerun.py: the integration test of a merge, in a sandbox of its own;
- net.py: `--sandbox model`'s network: the allow-list (pure) and the supervisor's gate that
  connects an agent only to its model's hosts; netin.py: the forwarder inside (stdlib only).
"""
