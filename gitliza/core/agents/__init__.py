"""The agents and their supervision, pure: why a run ended and what a provider's fault does
(faults), what a run achieved (runs), the prompts, when a supervisor has work (wake), the circuit
breaker, the team's costs and budgets, how many supervisors a self-sizing team starts (sizing) and
each role's CLI and model (teammodels)."""
