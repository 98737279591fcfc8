"""When `clipyard up` restarts a process that exited: backoff, its reset, the crash loop."""

from __future__ import annotations

from clipyard_cli.restarts import ExitStreak, RestartPolicy


def test_the_wait_doubles_from_half_a_second_to_the_cap() -> None:
    policy = RestartPolicy()
    assert [policy.delay(n) for n in range(1, 8)] == [0.5, 1.0, 2.0, 4.0, 8.0, 10.0, 10.0]


def test_five_quick_exits_in_a_row_are_a_crash_loop_retried_at_the_cap() -> None:
    streak = ExitStreak()
    waits = [streak.exited(at=float(t), uptime=1.0) for t in range(0, 50, 10)]
    assert waits[:4] == [0.5, 1.0, 2.0, 4.0]
    assert streak.crash_loop
    assert waits[4] == 10.0
    assert streak.exited(at=60.0, uptime=1.0) == 10.0
    assert streak.count == 6


def test_exits_spread_over_more_than_a_minute_are_no_crash_loop_but_wait_the_cap() -> None:
    streak = ExitStreak()
    for t in range(0, 100, 20):
        wait = streak.exited(at=float(t), uptime=15.0)
    assert not streak.crash_loop
    assert wait == 8.0
    assert streak.exited(at=100.0, uptime=15.0) == 10.0


def test_a_run_that_lasted_starts_a_new_streak() -> None:
    streak = ExitStreak(RestartPolicy(stable_after=30.0))
    for t in range(5):
        streak.exited(at=float(t), uptime=0.1)
    assert streak.crash_loop
    assert streak.exited(at=100.0, uptime=30.0) == 0.5
    assert streak.count == 1
    assert not streak.crash_loop


def test_staying_up_forgets_the_streak_once() -> None:
    streak = ExitStreak(RestartPolicy(stable_after=30.0))
    streak.exited(at=0.0, uptime=1.0)
    assert not streak.stayed_up(10.0)
    assert streak.stayed_up(30.0)
    assert streak.count == 0
    assert not streak.stayed_up(31.0)
