"""The escalation webhook's pure parts (core/reports/escalations.py): which reports go out, the human
events that are not alarms, how a cause is found, and an id that every machine computes alike."""
from __future__ import annotations

from gitliza.core.reports import escalations
from gitliza.core.reports.alarms import Alert, Level, Report

BLOCKED = Alert("BLOCKED", "t1", Level.WARNING, "BLOCKED: t1 \u2014 x")


def test_only_what_starts_or_gets_worse_goes_out() -> None:
    assert escalations.notified(Report("fired", BLOCKED, "T"))
    assert escalations.notified(Report("escalated", BLOCKED, "T"))
    assert not escalations.notified(Report("resolved", BLOCKED, "T"))


def test_the_id_is_the_cause_and_the_event_not_the_time_or_the_tip() -> None:
    a = escalations.delivery_id("c" * 40, Report("fired", BLOCKED, "2026-01-01T00:00:00Z"))
    assert a == escalations.delivery_id("c" * 40, Report("fired", BLOCKED, "2027-01-01T00:00:00Z"))
    assert a != escalations.delivery_id("d" * 40, Report("fired", BLOCKED, "T"))
    assert a != escalations.delivery_id("c" * 40, Report("escalated", BLOCKED, "T"))
    assert len(a) == 32 and all(ch in "0123456789abcdef" for ch in a)


def test_how_a_cause_is_found() -> None:
    msg = "block t1\n\nLiza-Op: block\nLiza-Actor: coder-1\nLiza-Task: t1\nLiza-Time: T\n"
    assert escalations.cause_matcher(BLOCKED) == ("t1", frozenset())
    assert escalations.matches(msg, "t1", frozenset())
    assert not escalations.matches(msg, "t10", frozenset())
    limit = Alert("APPROACHING_LIMIT", "t1:review", Level.WARNING, "x")
    assert escalations.task_of(limit) == "t1"
    ended = Alert("GOAL_ENDED", "g1", Level.WARNING, "x")
    task, ops = escalations.cause_matcher(ended)
    assert task is None and "complete-goal" in ops
    assert escalations.matches("x\n\nLiza-Op: complete-goal\nLiza-Task: \n", None, ops)
    assert escalations.cause_matcher(Alert("STALLED", "", Level.WARNING, "x")) == (None, frozenset())


def test_backoff_doubles_up_to_a_minute() -> None:
    assert [escalations.backoff(n) for n in (1, 2, 3, 4, 7, 8, 20)] == [1, 2, 4, 8, 60, 60, 60]


def test_links_go_to_the_task_page_or_the_board() -> None:
    assert escalations.link("http://h:1/", BLOCKED) == "http://h:1/task/t1"
    assert escalations.link("http://h:1", Alert("STALLED", "", Level.WARNING, "x")) == "http://h:1/"
    assert escalations.link(None, BLOCKED) is None
