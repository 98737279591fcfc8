"""What every endpoint group shares: running a use case on the store's thread as the principal,
with the principal's cause stamped on what it saves, once the access model's kind-level rule
(ARCHITECTURE §5.1) allowed the principal's kind the endpoint's resource and action. That rule is
checked once a request (:meth:`Endpoints.allow`); an endpoint that runs several steps allows once
and runs each step with that access (:meth:`Endpoints.run`)."""

from __future__ import annotations

import contextlib
from collections.abc import Awaitable, Callable
from typing import TYPE_CHECKING, Any, TypeVar

import msgspec

from eventstore import Cause, acting
from servicekit.access import Access, Action, Resource
from servicekit.node_routing import NodeRouter
from servicekit.routes import BusEndpoints
from workspace_realizer.usecases.placement import workspace_node

if TYPE_CHECKING:
    from contracts.base import Accepted, ErrorReply, Ok, Principal
    from natsbus import RequestContext
    from servicekit import ServiceRuntime
    from workspace_realizer.application import WorkspaceRealizerApplication

__all__ = ["Endpoints", "builtins", "cause_of"]

T = TypeVar("T")


def cause_of(principal: Principal, reason: str) -> Cause:
    """The cause of a change asked for by ``principal``."""
    return Cause(
        actor=principal.actor,
        run_id=principal.run_id,
        reason=reason,
        company_id=principal.company_id,
    )


def builtins(value: Any) -> Any:
    """A contract value as stored plain data (camelCase); None stays None."""
    return None if value is None else msgspec.to_builtins(value)


class Endpoints(BusEndpoints):
    """The base of the realizer's endpoint classes: helpers bound to one running realizer (its
    runtime, application and node)."""

    def __init__(self, runtime: ServiceRuntime) -> None:
        self.runtime = runtime
        self.app: WorkspaceRealizerApplication = runtime.app  # type: ignore[assignment]
        self.node: str = runtime.settings.node_id
        self.router = NodeRouter(runtime.bus, self.node)

    @staticmethod
    def allow(principal: Principal, resource: Resource, action: Action) -> Access:
        """The principal's access, once ``resource``/``action`` is allowed to its kind (403
        ``forbidden`` naming who may, otherwise): the kind-level rule, checked once a request."""
        access = Access.of(principal)
        access.reach(resource, action)
        return access

    async def run(self, access: Access, fn: Callable[[Access], T], cause: Cause | None = None) -> T:
        """Run ``fn(access)`` on the store's thread for an access :meth:`allow` gave, stamping
        ``cause`` (when given) on the events it saves. A ``not_found`` is answered only once this
        replica has read what the others saved (:meth:`ServiceRuntime.store_fresh`): a project
        created through one replica is found at once through another."""
        with acting(cause) if cause is not None else contextlib.nullcontext():
            result: T = await self.runtime.store_fresh(fn, access)
        return result

    async def read(self, principal: Principal, resource: Resource, fn: Callable[[Access], T]) -> T:
        """:meth:`run` ``fn``, once reading ``resource`` is allowed to the principal's kind."""
        return await self.run(self.allow(principal, resource, Action.READ), fn)

    async def write(
        self, principal: Principal, resource: Resource, reason: str, fn: Callable[[Access], T]
    ) -> T:
        """:meth:`run` ``fn``, once writing ``resource`` is allowed to the principal's kind,
        stamping ``principal`` and ``reason`` on the events it saves. ``fn`` decides on read
        models that first had what every replica (of either part) committed before the request
        came: its checks never miss a write a client was already answered."""
        access = self.allow(principal, resource, Action.WRITE)
        await self.runtime.follow()
        return await self.run(access, fn, cause_of(principal, reason))

    async def elsewhere(
        self,
        locate: Callable[[], str | None],
        subject_of: Callable[[str], str],
        message: Any,
        ctx: RequestContext,
        what: str,
    ) -> Ok | Accepted | ErrorReply | None:
        """The answer of the node that holds the record, when that is not this one
        (:mod:`servicekit.node_routing`); None when it is this node's, to be served here.

        ``locate`` runs on the store's thread once this replica read what every other one
        saved (a workspace realized on another node a moment ago is found on that node, never
        served here); it returns the record's node, or None to serve here (no such record:
        the handler answers that).
        """
        await self.runtime.follow()
        node = await self.runtime.store(locate)
        if self.router.is_here(node):
            return None
        assert node is not None
        return await self.router.forward(node, subject_of, message, ctx, what=what)

    async def on_workspace_node(
        self,
        access: Access,
        workspace_id: str,
        subject_of: Callable[[str], str],
        message: Any,
        ctx: RequestContext,
    ) -> Ok | Accepted | ErrorReply | None:
        """:meth:`elsewhere` for an execution workspace ``access`` may see: the answer of its
        node when that is not this one (None: serve here, also what the principal may not see,
        which is answered here as such)."""
        return await self.elsewhere(
            lambda: workspace_node(self.app, workspace_id, access),
            subject_of,
            message,
            ctx,
            f"execution workspace {workspace_id}",
        )

    async def long(
        self,
        access: Access,
        principal: Principal,
        kind: str,
        subject: str,
        ctx: RequestContext,
        work: Callable[[str], Awaitable[T]],
        visible: Callable[[Access], object] | None,
    ) -> T | Accepted:
        """Run ``work`` as a long operation ``kind`` of ``subject`` (its result when it ends
        before the request's deadline, else ``accepted``), stamping ``principal`` as its cause.
        """
        # ``access`` was allowed the endpoint's resource and action. ``visible`` refuses what
        # the principal may not see before any operation is recorded: a request for another
        # company's issue or workspace writes nothing (404); None when the caller checked.
        await self.runtime.follow()  # as :meth:`write`: the work plans on current read models
        if visible is not None:
            await self.run(access, visible)
        with acting(cause_of(principal, kind)):
            return await self.runtime.operations.run(
                kind,
                work,
                ctx=ctx,
                principal=principal,
                company_id=principal.company_id,
                subject_id=subject,
            )
