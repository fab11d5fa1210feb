"""The board's config values: each key's type and bound, and `coerce_config`, the one check every
writer of config goes through (`init`, `config`, an imported board, a replayed op). The bounds are
also what per-task overrides are held to (ops/planning.py) and what an imported entity is checked
against (oplimits.py)."""
from __future__ import annotations

import dataclasses
import typing

from gitliza.core.ids import check_branch
from gitliza.core.model import Config
from gitliza.errors import ValidationError

ConfigValue = str | int | bool

_CONFIG_TYPES = typing.get_type_hints(Config)
# Upper bounds keep every derived timestamp representable and every limit meaningful.
CONFIG_MAX = {"lease_duration": 7 * 86400, "heartbeat_interval": 86400,
              "coder_poll_interval": 86400, "coder_max_wait": 7 * 86400,
              "max_coder_iterations": 1000, "max_review_cycles": 1000,
              "planner_max_wait": 7 * 86400, "reviewer_max_wait": 7 * 86400,
              "restart_delay": 3600, "crash_delay": 3600, "crash_delay_max": 86400,
              "max_no_progress_runs": 1000, "max_launches_per_minute": 600,
              "planner_poll_interval": 86400, "reviewer_poll_interval": 86400,
              "archive_after": 365 * 86400, "pool_idle_exit": 7 * 86400,
              "review_quorum": 9, "rca_after_rejections": 1000, "merge_batch": 100,
              "seal_every": 10**7, "attic_keep": 36500,
              "follow_interval": 3600, "wip_snapshot_interval": 86400,
              "forge_checks_timeout": 7 * 86400}
# Budgets in tokens (gitliza/core/agents/costs.py): at most a trillion, far beyond any real run.
CONFIG_MAX.update(budget_tokens_per_task=10**12, budget_tokens_per_goal=10**12)
# The sandbox's limits (gitliza/sandbox/seccomp.py): a million processes or a terabyte is no limit.
CONFIG_MAX.update(sandbox_pids_max=10**6, sandbox_memory_max_mb=10**6, sandbox_tmp_max_mb=10**6,
                  sandbox_checkout_max_mb=10**9, sandbox_checkout_max_files=10**9)
# Optional keys that `none` (or `off`) unsets.
UNSETTABLE = frozenset({"budget_tokens_per_task", "budget_tokens_per_goal", "budget_usd_per_goal",
                        "prices", "pool_idle_exit", "models", "quorum_rules",
                        "sandbox_pids_max", "sandbox_memory_max_mb",
                        "sandbox_tmp_max_mb", "sandbox_secret_env", "sandbox_host_ports",
                        "sandbox_checkout_max_mb", "sandbox_checkout_max_files"})
# Watcher thresholds (optional: unset means the seed's value, see gitliza/core/reports/alarms.py).
CONFIG_MAX.update({k: 30 * 86400 for k in _CONFIG_TYPES if k.startswith("alarm_")})


def coerce_config(key: str, value: ConfigValue | None) -> ConfigValue | None:
    """Check and convert one config value (from the CLI, a file or a replayed op)."""
    if key not in _CONFIG_TYPES:
        raise unknown_key(key, [f.name for f in dataclasses.fields(Config)])
    if key in UNSETTABLE and (value is None or str(value).strip().lower() in ("", "null", "none",
                                                                              "off")):
        return None
    if key in ("budget_usd_per_goal", "prices"):
        from gitliza.core.agents import costs  # only then: few commands set a budget
        return costs.canonical_usd(value, key) if key == "budget_usd_per_goal" else \
            costs.canonical_prices(str(value))
    if key in ("quorum_rules", "review_diversity"):
        from gitliza.core import quorum  # only then: few commands set the review rules
        return quorum.canonical_rules(value) if key == "quorum_rules" else \
            quorum.check_diversity(value)
    if key.startswith("forge"):
        from gitliza.core import forgerules  # only then: few commands set the forge
        if key in forgerules.KEYS and key != "forge_checks_timeout":
            return forgerules.coerce(key, value)
    if key == "seal_every" and str(value).strip().lower() in ("off", "0"):
        return 0  # never by itself (services/autoseal.py)
    if key in CONFIG_MAX:  # the integer settings (alarm thresholds included), each bounded
        try:
            n = int(value) if not isinstance(value, bool) else None  # type: ignore[arg-type]
        except (TypeError, ValueError):
            n = None
        if n is None or n <= 0 or n > CONFIG_MAX[key]:  # the key's rule, whole
            raise ValidationError(f"config {key} must be a positive integer, at most "
                                  f"{CONFIG_MAX[key]}, got {value!r}")
        return n
    if key == "models":
        from gitliza.core.agents.teammodels import canonical  # only then: few commands set it
        return canonical(None if value is None else str(value))
    if key == "sandbox_secret_env":
        return _variable_names(value)
    if key == "sandbox_host_ports":
        return _ports(value)
    if key == "escalation_webhook":
        return None if value in (None, "", "null", "none") else str(value)
    if key == "integration_base":
        return _commit_id(value)
    if key == "signatures":
        from gitliza.core.keyring.signers import check_policy_word  # only then: few commands need signers.py
        return check_policy_word(value)
    if value is None or str(value) == "":
        raise ValidationError(f"config {key} must not be empty")
    return check_branch(str(value)) if key == "integration_branch" else str(value)


def unknown_key(key: str, known: list[str]) -> ValidationError:
    """A mistyped key: git's "did you mean" when one is close, else the keys."""
    import difflib  # only then: a mistyped key is rare
    close = difflib.get_close_matches(key, known, n=3, cutoff=0.6)
    if close:
        return ValidationError(f"unknown config key {key!r}; did you mean "
                               f"{' or '.join(close)}?",
                               hint="`git liza config` lists every key and its value")
    return ValidationError(f"unknown config key {key!r}", hint=f"known keys: {', '.join(known)}")


def _variable_names(value: ConfigValue | None) -> str:
    """Environment variable names, by spaces or commas: kept one space apart."""
    names = str(value or "").replace(",", " ").split()
    bad = [n for n in names if not (n[0].isalpha() or n[0] == "_")
           or not all(c.isalnum() or c == "_" for c in n) or not n.isascii()]
    if not names or bad:
        raise ValidationError(f"config sandbox_secret_env must name environment variables, "
                              f"got {(bad or [str(value)])[0]!r}")
    return " ".join(names)


def _ports(value: ConfigValue | None) -> str:
    """TCP ports (1-65535), by spaces or commas: kept one space apart, in order."""
    words = str(value or "").replace(",", " ").split()
    bad = [w for w in words if not w.isdigit() or not 0 < int(w) < 65536]
    if not words or bad:
        raise ValidationError(f"config sandbox_host_ports must name TCP ports, "
                              f"got {(bad or [str(value)])[0]!r}", hint="e.g. 11434 5432")
    return " ".join(str(p) for p in sorted({int(w) for w in words}))


def _commit_id(value: ConfigValue | None) -> str:
    """A full commit id (40 or 64 hex digits), lower case: `integration_base` names a commit."""
    text = str(value or "").strip().lower()
    if len(text) not in (40, 64) or any(c not in "0123456789abcdef" for c in text):
        raise ValidationError(f"config integration_base must be a full commit id, got {value!r}",
                              hint="e.g. `git rev-parse integration`")
    return text
