"""The endpoints every service answers: ``audit``, ``replay_verify`` and ``operation``."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from contracts import subjects
from contracts.errors import ErrorCode
from contracts.service import (
    AuditTrail,
    GetAuditTrail,
    GetOperation,
    OperationView,
    ReplayReport,
    VerifyReplay,
)
from eventstore import audit_trail, build_application, verify_replay

if TYPE_CHECKING:
    from natsbus import RequestContext
    from servicekit.spec import ServiceRuntime

__all__ = ["NotFoundError", "register_common_endpoints"]


class NotFoundError(LookupError):
    """The thing asked for does not exist (or belongs to another company)."""

    code = ErrorCode.NOT_FOUND.value
    status = 404
    details: dict[str, Any]

    def __init__(self, message: str, **details: Any) -> None:
        super().__init__(message)
        self.details = details


async def register_common_endpoints(runtime: ServiceRuntime) -> None:
    """Add ``ws.qry.<token>.audit``, ``.replay_verify`` and ``.operation`` to the service."""
    token = runtime.spec.token

    async def audit(request: GetAuditTrail, ctx: RequestContext) -> AuditTrail:
        trail = await runtime.store(
            audit_trail, runtime.app, request.aggregate_id, request.limit, request.offset
        )
        if trail.total == 0:
            raise NotFoundError(
                f"{runtime.spec.name} holds no aggregate {request.aggregate_id}",
                aggregateId=request.aggregate_id,
            )
        return trail

    async def replay(request: VerifyReplay, ctx: RequestContext) -> ReplayReport:
        def rebuild_and_compare() -> ReplayReport:
            fresh = build_application(
                runtime.spec.application_class,
                service=token,
                settings=runtime.settings.store,
            )
            try:
                if runtime.settings.store.kind == "memory":
                    # An in-memory store lives in the live instance only: replay its recorder.
                    fresh.rebuild_read_models(source=runtime.app.recorder)
                return verify_replay(fresh, runtime.app)
            finally:
                fresh.close()

        return await runtime.store(rebuild_and_compare)

    async def operation(request: GetOperation, ctx: RequestContext) -> OperationView:
        view = await runtime.operations.get(request.operation_id)
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
    await service.add_endpoint(
        "operation", subjects.service_query(token, "operation"), operation, GetOperation
    )
