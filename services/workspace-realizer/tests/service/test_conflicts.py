"""A save that another replica's save of the same aggregate came before is run again: a
realization is not failed for a run's lease saved a moment earlier; a conflict that persists
still fails."""

from __future__ import annotations

from typing import Any

import pytest
from eventsourcing.persistence import IntegrityError

from workspace_realizer.orchestration.conflicts import CONFLICT_ATTEMPTS, saved_despite_conflicts


async def _store(fn: Any, *args: Any, **kwargs: Any) -> Any:
    return fn(*args, **kwargs)


async def test_a_save_that_lost_the_race_is_run_again_until_it_wins() -> None:
    tries: list[str] = []

    def record(workspace: str, *, rebuilt: bool) -> str:
        tries.append(workspace)
        if len(tries) < 3:
            raise IntegrityError("duplicate key value violates unique constraint")
        return f"{workspace} reused (rebuilt={rebuilt})"

    done = await saved_despite_conflicts(_store, record, "ws-1", rebuilt=False)

    assert done == "ws-1 reused (rebuilt=False)"
    assert tries == ["ws-1"] * 3


async def test_a_conflict_that_persists_still_fails() -> None:
    tries: list[int] = []

    def record() -> None:
        tries.append(1)
        raise IntegrityError("duplicate key value violates unique constraint")

    with pytest.raises(IntegrityError):
        await saved_despite_conflicts(_store, record)
    assert len(tries) == CONFLICT_ATTEMPTS
