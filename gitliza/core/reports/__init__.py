"""What the board tells its readers, pure: the watcher's alarms, the escalation webhook's events,
the sprint metrics and the questions several callers ask of a board (queries)."""
