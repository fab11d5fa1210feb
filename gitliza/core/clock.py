"""Timestamps as the spec writes them: ISO 8601 UTC with `Z`, second precision.

The core never reads the clock: every op carries its time. Timestamps in this format sort
lexicographically in time order, so comparisons are plain string comparisons.
"""
from __future__ import annotations

import re
import time as _time

from gitliza.core.encoding.lazyre import lazy
from gitliza.errors import ValidationError

_ISO = lazy(r"^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}Z$")


def check_ts(value: str, what: str = "timestamp") -> str:
    if not isinstance(value, str) or not _ISO.match(value):
        raise ValidationError(f"{what} {value!r} is not ISO 8601 UTC (YYYY-MM-DDTHH:MM:SSZ)")
    return value


def to_epoch(ts: str) -> int:
    check_ts(ts)  # strptime is ~30 us; slicing a checked string is ~2 us (on the write path)
    days = _days_from_civil(int(ts[0:4]), int(ts[5:7]), int(ts[8:10]))
    return days * 86400 + int(ts[11:13]) * 3600 + int(ts[14:16]) * 60 + int(ts[17:19])


def _days_from_civil(y: int, m: int, d: int) -> int:
    """Days since 1970-01-01 of a proleptic Gregorian date (what calendar.timegm computes; the
    calendar module costs ~1 ms of every CLI start to import, for this one function)."""
    y -= m <= 2
    era = y // 400
    yoe = y - era * 400
    doy = (153 * (m + (-3 if m > 2 else 9)) + 2) // 5 + d - 1
    return era * 146097 + yoe * 365 + yoe // 4 - yoe // 100 + doy - 719468


def from_epoch(seconds: float) -> str:
    return _time.strftime("%Y-%m-%dT%H:%M:%SZ", _time.gmtime(int(seconds)))


def plus(ts: str, seconds: int) -> str:
    return from_epoch(to_epoch(ts) + seconds)


_AGO = lazy(r"^(\d+)\s*([smhdw])$")
_UNIT = {"s": 1, "m": 60, "h": 3600, "d": 86400, "w": 7 * 86400}


def bound(value: str, now: str, what: str) -> str:
    """A time bound given on the command line (`log --since/--until`): a timestamp, a date
    (YYYY-MM-DD: its midnight UTC), or an age before `now` (90s, 30m, 2h, 3d, 1w)."""
    v = value.strip()
    ago = _AGO.match(v)
    if ago:
        return from_epoch(to_epoch(now) - int(ago.group(1)) * _UNIT[ago.group(2)])
    if re.match(r"^\d{4}-\d{2}-\d{2}$", v):
        v += "T00:00:00Z"
    try:
        if from_epoch(to_epoch(check_ts(v))) == v:  # not a date that does not exist (02-30)
            return v
    except (ValidationError, ValueError):
        pass
    raise ValidationError(f"{what} {value!r} is neither a time (YYYY-MM-DDTHH:MM:SSZ or "
                          "YYYY-MM-DD) nor an age (30m, 2h, 3d, 1w)")

