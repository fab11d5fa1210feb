"""The application services between the command line (and the other front ends) and git: the
library API, the task lifecycle, sync, verify, materialize, and the smaller services."""
