"""The endpoints every service answers: ``audit``, ``replay_verify`` (also per instance) and
``operation``.

``audit`` and ``replay_verify`` show what the store holds, so only operators may ask: the admin
or Clipyard itself (the CLI asks as admin; ``Access.check_operator``, ARCHITECTURE §5.1); anyone
else gets ``forbidden`` (403). ``operation`` answers only what the principal may see
(:meth:`servicekit.operations.OperationRunner.get`): anything else is ``not_found`` (404). Neither shows
secret material (ARCHITECTURE §2; :mod:`eventstore.privacy`). The replay's rebuild runs on a thread
of its own, with its own store connection; only a copy of the live read models is taken on the store
thread, so the service keeps answering while it runs.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from contracts import subjects
from contracts.errors import DetailedError, ErrorCode
from contracts.service import (
    AuditTrail,
    GetAuditTrail,
    GetOperation,
    OperationView,
    ReplayReport,
    VerifyReplay,
)
from eventstore import StoreExecutor, audit_trail, build_application
from eventstore.replay import compare_read_models, replay_to, snapshot_read_models
from servicekit.access import Access
from servicekit.outbox import published_contract

if TYPE_CHECKING:
    from natsbus import RequestContext
    from servicekit.spec import ServiceRuntime

__all__ = ["NotFoundError", "register_common_endpoints"]


class NotFoundError(DetailedError, LookupError):
    """The thing asked for does not exist (or belongs to another company)."""

    code = ErrorCode.NOT_FOUND


async def register_common_endpoints(runtime: ServiceRuntime) -> None:
    """Add ``ws.qry.<token>.audit``, ``.replay_verify`` and ``.operation`` to the service."""
    token = runtime.spec.token
    # Rows are named by the public type of what the service publishes (the relay's mapping).
    public = published_contract(runtime.spec.name, runtime.spec.to_contract)

    async def audit(request: GetAuditTrail, ctx: RequestContext) -> AuditTrail:
        Access.of(request.principal).check_operator(f"the stored history of {runtime.spec.name}")
        trail = await runtime.store(
            audit_trail, runtime.app, request.aggregate_id, request.limit, request.offset, public
        )
        if trail.total == 0:
            raise NotFoundError(
                f"{runtime.spec.name} holds no aggregate {request.aggregate_id}",
                aggregateId=request.aggregate_id,
            )
        return trail

    async def replay(request: VerifyReplay, ctx: RequestContext) -> ReplayReport:
        Access.of(request.principal).check_operator(f"the replay of {runtime.spec.name}")
        # Built and rebuilt on a thread of its own (its own store connection): the store thread
        # only copies the live read models, so requests keep being served meanwhile. That thread
        # is a daemon, so a long rebuild never holds up the process's exit.
        worker = StoreExecutor(name=f"{runtime.spec.name}-replay")
        try:
            fresh = await worker.run(
                build_application,
                runtime.spec.application_class,
                service=token,
                settings=runtime.settings.store,
            )
            try:
                live = await runtime.store(snapshot_read_models, runtime.app)
                # An in-memory store lives in the live instance only: replay its recorder.
                memory = runtime.settings.store.kind == "memory"
                source = runtime.app.recorder if memory else None
                spent = await worker.run(replay_to, fresh, live.projected_upto, source)
                return await worker.run(compare_read_models, live, fresh, extra_ms=spent)
            finally:
                await worker.run(fresh.close)
        finally:
            worker.close(wait=False)

    async def operation(request: GetOperation, ctx: RequestContext) -> OperationView:
        view = await runtime.operations.get(request.operation_id, request.principal)
        if view is None:
            raise NotFoundError(
                f"{runtime.spec.name} has no operation {request.operation_id}",
                operationId=request.operation_id,
            )
        return view

    service = runtime.service
    await service.add_endpoint(
        "audit", subjects.service_query(token, "audit"), audit, GetAuditTrail
    )
    await service.add_endpoint(
        "replay_verify",
        subjects.service_query(token, "replay_verify"),
        replay,
        VerifyReplay,
        concurrency=1,
    )
    # The same, asked of this instance alone (``<subject>.<micro id>``): ``clipyard replay``
    # verifies every replica, whose read models each follow the shared store.
    await service.add_endpoint(
        "replay_verify_here",
        f"{subjects.service_query(token, 'replay_verify')}.{service.id}",
        replay,
        VerifyReplay,
        concurrency=1,
    )
    await service.add_endpoint(
        "operation", subjects.service_query(token, "operation"), operation, GetOperation
    )
