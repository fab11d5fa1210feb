"""The command line: the typer app (app/, one module per group of commands, the only folder that
imports typer), the fast path
that answers most commands without it (fastpath.py, fastbuild.py, classcache.py, caches.py),
output, completion, the man page, and the command functions (commands/)."""
