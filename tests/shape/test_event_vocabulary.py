"""Every event a service stores is shown with a type of the one vocabulary
(``contracts.event_types``): its public type when its service publishes it, else its derived type
(``eventstore.event_names``), which must be listed in ``RECORDED_EVENT_TYPES`` and must not pass
for a published type."""

from __future__ import annotations

import importlib
from collections.abc import Iterator
from typing import Any

import pytest
from eventsourcing.domain import CanMutateAggregate, _created_event_classes
from eventsourcing.utils import resolve_topic

from contracts.event_types import KNOWN_EVENT_TYPES, PUBLIC_EVENT_TYPES, RECORDED_EVENT_TYPES
from eventstore.event_names import recorded_type
from eventstore.rejections import InboxRejections
from servicekit.operations import Operation
from servicekit.publishing import ContractMap

SERVICES = (
    "api_gateway",
    "git_credentials",
    "heartbeat_controller",
    "runtime_supervisor",
    "workspace_realizer",
)
SHARED = ("eventstore", "servicekit")
"""Libraries whose aggregates every service stores (operations, inbox rejections, skips)."""
SHARED_PUBLISHED: frozenset[type[Any]] = frozenset(
    {
        Operation.Started,
        Operation.Progressed,
        Operation.Succeeded,
        Operation.Failed,
        InboxRejections.MessageRejected,
    }
)
"""Shared classes every service publishes (``servicekit.outbox.published_contract``)."""


def _subclasses(cls: type[Any]) -> Iterator[type[Any]]:
    for sub in cls.__subclasses__():
        yield sub
        yield from _subclasses(sub)


def _stored_classes(package: str) -> list[type[Any]]:
    """The event classes of ``package`` an aggregate may store: the class its topic names (not
    one ``@event`` replaced), not an ``Event`` base, not the copy a subclass makes of its
    parent's event (the parent's class is stored), and a created event only of an aggregate
    that is created (not of a base other aggregates extend)."""
    found = []
    for cls in set(_subclasses(CanMutateAggregate)):
        if not cls.__module__.startswith(f"{package}.") or "<locals>" in cls.__qualname__:
            continue
        name, outer = cls.__name__, cls.__qualname__.rpartition(".")[0]
        if name == "Event" or resolve_topic(f"{cls.__module__}:{cls.__qualname__}") is not cls:
            continue
        if any(b.__name__ == name and b.__qualname__ != cls.__qualname__ for b in cls.__bases__):
            continue
        aggregate = resolve_topic(f"{cls.__module__}:{outer}")
        created = _created_event_classes.get(aggregate, [])
        if (name == "Created" or cls in created) and (
            cls not in created or aggregate.__subclasses__()
        ):
            continue
        found.append(cls)
    return sorted(found, key=lambda c: f"{c.__module__}:{c.__qualname__}")


def _contract_map(package: str) -> ContractMap | None:
    to_contract = importlib.import_module(f"{package}.publishing").to_contract
    return to_contract if isinstance(to_contract, ContractMap) else None


@pytest.fixture(scope="module", autouse=True)
def _imported() -> None:
    for package in SERVICES:
        importlib.import_module(f"{package}.application")
        importlib.import_module(f"{package}.publishing")


@pytest.mark.parametrize("package", [*SERVICES, *SHARED])
def test_every_stored_event_has_a_type_of_the_vocabulary(package: str) -> None:
    mapping = _contract_map(package) if package in SERVICES else None
    missing, posing = [], []
    for cls in _stored_classes(package):
        if cls in SHARED_PUBLISHED or (mapping is not None and cls in mapping.mappers):
            continue  # shown with the type of its public event
        derived = recorded_type(cls)
        if derived not in KNOWN_EVENT_TYPES:
            missing.append(f"{cls.__module__}:{cls.__qualname__} -> {derived}")
        elif (mapping is not None or package in SHARED) and derived in PUBLIC_EVENT_TYPES:
            posing.append(f"{cls.__module__}:{cls.__qualname__} -> {derived}")
    assert missing == [], "add to contracts.event_types.RECORDED_EVENT_TYPES:\n" + "\n".join(
        missing
    )
    assert posing == [], "private events shown as a published type:\n" + "\n".join(posing)


def test_recorded_types_are_not_published_and_all_in_use() -> None:
    assert not RECORDED_EVENT_TYPES & PUBLIC_EVENT_TYPES
    in_use = {
        recorded_type(cls) for package in (*SERVICES, *SHARED) for cls in _stored_classes(package)
    }
    assert sorted(RECORDED_EVENT_TYPES - in_use) == []
