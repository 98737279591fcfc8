# mypy: disable-error-code="attr-defined"
# (event classes made by eventsourcing's @event, and their fields, are invisible to mypy)
"""A small pair of services used by the event-store tests.

- :class:`GatewayApp` (service token ``gateway``) owns companies: ``Company.Created`` is public
  (``company.created.v1``), ``Company.Renamed`` is private; ``Company.Ticked`` is published as
  ``operation.started.v1`` (lots of small public events).
- :class:`MirrorApp` (service token ``realizer``) keeps a copy of every company it hears about
  through its inbox, counting the ticks.

Run as a module to append events from another process (the crash tests kill it)::

    python -m eventstore_sample append --kind sqlite --home DIR --count N [--nats URL]
"""

from __future__ import annotations

import argparse
import asyncio
import sys
import time
from pathlib import Path
from typing import Any
from uuid import NAMESPACE_URL, UUID, uuid5

import nats
from eventsourcing.application import AggregateNotFoundError
from eventsourcing.domain import event
from eventsourcing.persistence import Tracking

from contracts.base import Actor
from contracts.gateway import CompanyCreated
from contracts.service import OperationStarted
from eventstore import (
    Cause,
    ClipyardAggregate,
    OutboxRelay,
    ServiceApplication,
    StoreExecutor,
    StoreSettings,
    acting,
    build_application,
)

SAMPLE_NS = uuid5(NAMESPACE_URL, "https://clipyard.invalid/eventstore-tests")
ADMIN = Actor(type="admin", id="admin-1")


class Company(ClipyardAggregate):
    """A company of the sample gateway."""

    @staticmethod
    def create_id(issue_prefix: str) -> UUID:
        return uuid5(SAMPLE_NS, f"company:{issue_prefix}")

    @event("Created")
    def __init__(self, name: str, issue_prefix: str) -> None:
        self.name = name
        self.issue_prefix = issue_prefix
        self.ticks = 0

    @event("Renamed")
    def rename(self, name: str) -> None:
        self.name = name

    @event("Ticked")
    def tick(self) -> None:
        self.ticks += 1


class GatewayApp(ServiceApplication):
    """The sample publisher: companies and a read model of them."""

    def init_read_models(self) -> None:
        self.companies: dict[str, dict[str, Any]] = {}

    def project(self, domain_event: Any) -> None:
        key = str(domain_event.originator_id)
        if isinstance(domain_event, Company.Created):
            self.companies[key] = {
                "name": domain_event.name,
                "prefix": domain_event.issue_prefix,
                "ticks": 0,
            }
        elif isinstance(domain_event, Company.Renamed):
            self.companies[key]["name"] = domain_event.name
        elif isinstance(domain_event, Company.Ticked):
            self.companies[key]["ticks"] += 1

    def read_models(self) -> dict[str, Any]:
        return {"companies": self.companies}

    def create_company(self, name: str, issue_prefix: str) -> UUID:
        company = Company(name=name, issue_prefix=issue_prefix)
        self.save(company)
        return company.id

    def rename(self, company_id: UUID, name: str) -> None:
        company: Company = self.repository.get(company_id)
        company.rename(name)
        self.save(company)

    def tick(self, company_id: UUID, times: int = 1) -> None:
        company: Company = self.repository.get(company_id)
        for _ in range(times):
            company.tick()
        self.save(company)


def gateway_contract(domain_event: Any) -> Any:
    """The sample gateway's ``to_contract``: Created and Ticked are public, Renamed is private."""
    envelope: dict[str, Any] = {
        "event_id": str(
            uuid5(SAMPLE_NS, f"{domain_event.originator_id}:{domain_event.originator_version}")
        ),
        "aggregate_id": str(domain_event.originator_id),
        "aggregate_version": domain_event.originator_version,
        "company_id": str(domain_event.originator_id),
        "occurred_at": domain_event.timestamp,
        "actor": Actor(**domain_event.actor)
        if domain_event.actor
        else Actor(type="system", id="gw"),
        "run_id": domain_event.run_id,
        "reason": domain_event.reason,
    }
    if isinstance(domain_event, Company.Created):
        return CompanyCreated(
            aggregate="company",
            name=domain_event.name,
            issue_prefix=domain_event.issue_prefix,
            **envelope,
        )
    if isinstance(domain_event, Company.Ticked):
        return OperationStarted(aggregate="operation", kind="tick", **envelope)
    return None


class CompanyCopy(ClipyardAggregate):
    """The mirror's copy of an upstream company."""

    @staticmethod
    def create_id(company_id: str) -> UUID:
        return uuid5(SAMPLE_NS, f"copy:{company_id}")

    @event("Copied")
    def __init__(self, company_id: str, name: str, issue_prefix: str) -> None:
        self.company_id = company_id
        self.name = name
        self.issue_prefix = issue_prefix
        self.ticks = 0

    @event("TickSeen")
    def see_tick(self) -> None:
        self.ticks += 1


class MirrorApp(ServiceApplication):
    """The sample consumer: copies companies, counts ticks."""

    def init_read_models(self) -> None:
        self.copies: dict[str, dict[str, Any]] = {}
        self._company_of: dict[UUID, str] = {}

    def project(self, domain_event: Any) -> None:
        if isinstance(domain_event, CompanyCopy.Copied):
            self._company_of[domain_event.originator_id] = domain_event.company_id
            self.copies[domain_event.company_id] = {"prefix": domain_event.issue_prefix, "ticks": 0}
        elif isinstance(domain_event, CompanyCopy.TickSeen):
            self.copies[self._company_of[domain_event.originator_id]]["ticks"] += 1

    def read_models(self) -> dict[str, Any]:
        return {"copies": self.copies}

    def handle(self, upstream_event: Any, tracking: Tracking) -> None:
        """The inbox handler: one save with the tracking, whatever the event."""
        if isinstance(upstream_event, CompanyCreated):
            copy = CompanyCopy(
                company_id=upstream_event.aggregate_id,
                name=upstream_event.name,
                issue_prefix=upstream_event.issue_prefix,
            )
            self.save_with_tracking(copy, tracking=tracking)
        elif isinstance(upstream_event, OperationStarted):
            try:
                found: CompanyCopy = self.repository.get(
                    CompanyCopy.create_id(upstream_event.aggregate_id)
                )
            except AggregateNotFoundError:
                return  # nothing to count on; the inbox records the position
            found.see_tick()
            self.save_with_tracking(found, tracking=tracking)


async def _append(args: argparse.Namespace) -> None:
    settings = StoreSettings(kind=args.kind, home=Path(args.home), postgres_dsn=args.dsn)
    app = build_application(GatewayApp, service="gateway", settings=settings)
    with acting(Cause(actor=ADMIN, reason="crash test")):
        company_id = app.create_company("Acme", args.prefix)
        app.tick(company_id, args.count - 1)
    print(f"saved {app.last_notification_id()}", flush=True)
    if args.nats:
        nc = await nats.connect(args.nats)
        executor = StoreExecutor()
        relay = OutboxRelay(
            app,
            nc.jetstream(),
            service="gateway",
            to_contract=gateway_contract,
            executor=executor,
            batch_size=args.batch,
        )
        await relay.start()
        print("relaying", flush=True)
    await asyncio.Event().wait()  # until killed


def main(argv: list[str] | None = None) -> None:
    """Append events from a separate process (then wait to be killed)."""
    parser = argparse.ArgumentParser(prog="eventstore_sample")
    parser.add_argument("command", choices=["append"])
    parser.add_argument("--kind", default="sqlite")
    parser.add_argument("--home", required=True)
    parser.add_argument("--dsn", default=None)
    parser.add_argument("--prefix", default="ACME")
    parser.add_argument("--count", type=int, default=10)
    parser.add_argument("--nats", default=None)
    parser.add_argument("--batch", type=int, default=100)
    args = parser.parse_args(argv)
    started = time.monotonic()
    try:
        asyncio.run(_append(args))
    finally:
        print(f"ran {time.monotonic() - started:.1f}s", file=sys.stderr)


if __name__ == "__main__":
    # Run the importable module's main(), so stored topics name ``eventstore_sample``.
    import eventstore_sample

    eventstore_sample.main()
