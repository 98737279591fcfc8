"""Who sees an operation (ARCHITECTURE §5.1): the admin and Clipyard itself all, a board its
company's, an agent key those its agent started, a run token those its run started; who started
it is the cause stamped on its ``Started`` event, so a store read again answers the same."""

from __future__ import annotations

import dataclasses
import uuid
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest

from contracts.base import Actor, Principal
from eventstore import (
    ENVELOPE_FIELDS,
    Cause,
    ServiceApplication,
    StoreExecutor,
    StoreSettings,
    acting,
    build_application,
)
from natsbus import RequestContext
from servicekit.operations import Operation, OperationRunner

C1, C2 = "c-1", "c-2"
BOARD = Principal(company_id=C1, actor=Actor(type="board", id="key-1"))
SESSION = Principal(company_id=C1, actor=Actor(type="board", id="user-1"), via_session=True)
OTHER_BOARD = Principal(company_id=C2, actor=Actor(type="board", id="key-2"))
ADMIN = Principal(company_id=None, actor=Actor(type="admin", id="admin"))
SYSTEM = Principal(company_id=None, actor=Actor(type="system", id="cli"))
AGENT_KEY = Principal(company_id=C1, actor=Actor(type="agent", id="agent-a"))
OTHER_AGENT_KEY = Principal(company_id=C1, actor=Actor(type="agent", id="agent-b"))
RUN_TOKEN = Principal(
    company_id=C1, actor=Actor(type="agent", id="agent-a"), run_id="run-1", issue_id="issue-1",
    run_bound=True,
)  # fmt: skip
SIBLING_TOKEN = Principal(
    company_id=C1, actor=Actor(type="agent", id="agent-a"), run_id="run-2", issue_id="issue-2",
    run_bound=True,
)  # fmt: skip
FOR_RUN = Principal(
    company_id=C1, actor=Actor(type="system", id="heartbeat-controller"), run_id="run-1"
)
"""The controller acting for run-1 (it realizes the run's workspace, ensures its services)."""


class Store(ServiceApplication):
    """No read models: operations are loaded from the store."""


@pytest.fixture
def executor() -> Iterator[StoreExecutor]:
    found = StoreExecutor(name="test-operations")
    yield found
    found.close()


@pytest.fixture
def apps() -> Iterator[list[Store]]:
    opened: list[Store] = []
    yield opened
    for app in opened:
        app.close()


@pytest.fixture
def runner_of(
    tmp_path: Path, executor: StoreExecutor, apps: list[Store]
) -> Callable[[], OperationRunner]:
    """A runner on the test's store, opened afresh (read from the store) on each call."""

    def runner() -> OperationRunner:
        settings = StoreSettings(kind="sqlite", home=tmp_path)
        apps.append(build_application(Store, service="realizer", settings=settings))
        return OperationRunner(apps[-1], executor, service="test-operations")

    return runner


async def _start(runner: OperationRunner, principal: Principal, kind: str = "realize") -> str:
    """Run quick work as ``principal``; the operation's id."""
    started: list[str] = []

    async def work(operation_id: str) -> dict[str, bool]:
        started.append(operation_id)
        return {"done": True}

    assert await runner.run(
        kind, work, ctx=RequestContext(subject="test"), principal=principal, company_id=C1
    ) == {"done": True}
    return started[0]


async def _seen(runner: OperationRunner, principal: Principal, ids: dict[str, str]) -> set[str]:
    """The names of the operations ``principal`` may see."""
    return {name for name, op in ids.items() if await runner.get(op, principal) is not None}


async def test_an_operation_is_seen_by_who_may_see_it_also_after_a_restart(
    runner_of: Callable[[], OperationRunner],
) -> None:
    runner = runner_of()
    ids = {
        "board": await _start(runner, BOARD),
        "agent_key": await _start(runner, AGENT_KEY),
        "run_token": await _start(runner, RUN_TOKEN),
        "for_run": await _start(runner, FOR_RUN),
    }
    expected = {
        BOARD: set(ids),
        SESSION: set(ids),
        ADMIN: set(ids),
        SYSTEM: set(ids),
        OTHER_BOARD: set(),
        # An agent key: what its agent started, with the key or with one of its run tokens.
        AGENT_KEY: {"agent_key", "run_token"},
        OTHER_AGENT_KEY: set(),
        # A run token: what its run started (itself, or Clipyard for the run).
        RUN_TOKEN: {"run_token", "for_run"},
        SIBLING_TOKEN: set(),
    }
    for principal, seen in expected.items():
        assert await _seen(runner, principal, ids) == seen, principal
    # Read again from the store (a restart): the same answers, from the stored events.
    again = runner_of()
    for principal, seen in expected.items():
        assert await _seen(again, principal, ids) == seen, principal
    # What is not the principal's answers as an unknown id does.
    assert await again.get(ids["board"], AGENT_KEY) is None
    assert await again.get("not-an-id", BOARD) is None


async def test_the_started_event_records_the_starter_without_new_fields(
    runner_of: Callable[[], OperationRunner], executor: StoreExecutor
) -> None:
    runner = runner_of()
    with acting(Cause(actor=BOARD.actor, reason="realize issue ACME-1", company_id=C1)):
        op = await _start(runner, RUN_TOKEN)
    [started, *_] = await executor.run(lambda: list(runner.app.events.get(uuid.UUID(op))))
    assert isinstance(started, Operation.Started)
    # The cause is the principal's (its actor and run), with the caller's reason.
    assert (started.actor, started.run_id, started.reason) == (
        {"type": "agent", "id": "agent-a"}, "run-1", "realize issue ACME-1",
    )  # fmt: skip
    # The event's own data is what it was, plus the instance running it, with a default: older
    # stores (no instance) replay unchanged.
    fields = {field.name: field for field in dataclasses.fields(Operation.Started)}
    assert set(fields) - ENVELOPE_FIELDS == {"kind", "company_id", "subject_id", "instance"}
    assert fields["instance"].default is None


async def test_an_operation_whose_started_event_names_no_actor_is_the_boards_only(
    runner_of: Callable[[], OperationRunner], executor: StoreExecutor
) -> None:
    runner = runner_of()

    def stored_without_cause() -> str:
        operation = Operation(kind="realize", company_id=C1, subject_id=None)
        runner.app.save(operation)
        return str(operation.id)

    op = await executor.run(stored_without_cause)
    assert await runner.get(op, BOARD) is not None
    assert await runner.get(op, AGENT_KEY) is None
    assert await runner.get(op, RUN_TOKEN) is None
