"""The human's side of the protocol: watching (alarms), the circuit breaker (analyze), checkpoints
and sprint summaries. The decisions are pure core code (core/reports/alarms.py, core/agents/circuit.py,
core/reports/metrics.py); these modules read git and the `.liza/` files around them and write reports."""
