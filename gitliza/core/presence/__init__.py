"""Who is alive and where, pure: the renewals of refs/liza/live/* and the leases they give
(renewals), lease expiry by the observer's own clock (leasemarks), whether a supervisor runs
(supervision), the machines (hosts) and which work a machine's agents may take (placement)."""
