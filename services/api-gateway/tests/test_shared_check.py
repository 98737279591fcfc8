"""A check shared by its concurrent callers, its answer reused while fresh (pure asyncio)."""

from __future__ import annotations

import asyncio

import pytest

from api_gateway.http.shared_check import SharedCheck


class Check:
    """A check that counts its rounds and ends when told to."""

    def __init__(self) -> None:
        self.rounds = 0
        self.release = asyncio.Event()
        self.fail = False

    async def __call__(self) -> int:
        self.rounds += 1
        await self.release.wait()
        if self.fail:
            raise RuntimeError("the check failed")
        return self.rounds


async def test_callers_during_a_round_share_it_and_a_stale_answer_is_checked_again() -> None:
    now = [0.0]
    shared: SharedCheck[int] = SharedCheck(0.5, clock=lambda: now[0])
    check = Check()
    waiting = [asyncio.create_task(shared.get(check)) for _ in range(3)]
    await asyncio.sleep(0)
    check.release.set()
    assert await asyncio.gather(*waiting) == [1, 1, 1]
    now[0] = 0.49
    assert await shared.get(check) == 1
    now[0] = 0.5
    assert await shared.get(check) == 2


async def test_a_caller_that_gives_up_does_not_cancel_the_round_of_the_others() -> None:
    shared: SharedCheck[int] = SharedCheck(0.5)
    check = Check()
    impatient = asyncio.create_task(shared.get(check))
    patient = asyncio.create_task(shared.get(check))
    await asyncio.sleep(0)
    impatient.cancel()
    check.release.set()
    assert await patient == 1
    assert impatient.cancelled()


async def test_a_failed_round_fails_its_callers_and_the_next_caller_starts_a_new_one() -> None:
    shared: SharedCheck[int] = SharedCheck(0.5)
    check = Check()
    check.fail = True
    check.release.set()
    with pytest.raises(RuntimeError, match="the check failed"):
        await shared.get(check)
    check.fail = False
    assert await shared.get(check) == 2
