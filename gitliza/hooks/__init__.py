"""The git hooks: the shim template installed into repositories (template.sh), its installer
(install.py), and what each hook checks when the shim execs `git liza hook-impl`: dispatch.py (hook
name -> handler), client.py (the client hooks), server.py (pre-receive), judge.py (the rules both
apply to ref updates), repo.py (what every handler starts from), pushers.py (pushers bound to agent
ids on a server)."""
