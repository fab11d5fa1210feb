"""The git hooks: the shim template installed into repositories, its installer, and what each
hook checks when the shim execs `git liza hook-impl`."""
