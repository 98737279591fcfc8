"""What every endpoint group shares: running a use case on the store's thread as the principal,
with the principal's cause stamped on what it saves, once the access model's kind-level rule
(ARCHITECTURE §5.1) allowed the principal's kind the endpoint's resource and action. That rule is
checked once a request (:meth:`Endpoints.allow`); an endpoint that runs several steps allows once
and runs each step with that access (:meth:`Endpoints.run`)."""

from __future__ import annotations

import contextlib
from collections.abc import Callable, Mapping
from typing import TYPE_CHECKING, Any, TypeVar

import msgspec

from eventstore import Cause, acting
from servicekit.access import Access, Action, Resource

if TYPE_CHECKING:
    from contracts.base import Principal
    from natsbus.service import Handler
    from servicekit import ServiceRuntime
    from workspace_realizer.application import WorkspaceRealizerApplication
    from workspace_realizer.context import Realizer

__all__ = ["Endpoints", "builtins", "cause_of", "changes"]

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


def changes(request: Any, fields: Mapping[str, str]) -> dict[str, Any]:
    """The fields of a patch that are set: ``{domain name: value}`` for each ``request`` attribute
    named in ``fields`` (``{attribute: domain name}``) that is not ``UNSET``."""
    found = {}
    for attribute, name in fields.items():
        value = getattr(request, attribute)
        if value is not msgspec.UNSET:
            found[name] = value
    return found


class Endpoints:
    """Helpers bound to one running realizer."""

    def __init__(self, runtime: ServiceRuntime, realizer: Realizer) -> None:
        self.runtime = runtime
        self.realizer = realizer
        self.app: WorkspaceRealizerApplication = realizer.app
        self.node = runtime.settings.node_id

    @staticmethod
    def allow(principal: Principal, resource: Resource, action: Action) -> Access:
        """The principal's access, once ``resource``/``action`` is allowed to its kind (403
        ``forbidden`` naming who may, otherwise): the kind-level rule, checked once a request."""
        access = Access.of(principal)
        access.reach(resource, action)
        return access

    async def run(self, access: Access, fn: Callable[[Access], T], cause: Cause | None = None) -> T:
        """Run ``fn(access)`` on the store's thread for an access :meth:`allow` gave, stamping
        ``cause`` (when given) on the events it saves."""
        with acting(cause) if cause is not None else contextlib.nullcontext():
            result: T = await self.runtime.store(fn, access)
        return result

    async def read(self, principal: Principal, resource: Resource, fn: Callable[[Access], T]) -> T:
        """:meth:`run` ``fn``, once reading ``resource`` is allowed to the principal's kind."""
        return await self.run(self.allow(principal, resource, Action.READ), fn)

    async def write(
        self, principal: Principal, resource: Resource, reason: str, fn: Callable[[Access], T]
    ) -> T:
        """:meth:`run` ``fn``, once writing ``resource`` is allowed to the principal's kind,
        stamping ``principal`` and ``reason`` on the events it saves."""
        access = self.allow(principal, resource, Action.WRITE)
        return await self.run(access, fn, cause_of(principal, reason))

    async def add(self, name: str, subject: str, handler: Handler[Any], request_type: Any) -> None:
        """Add one endpoint to the service."""
        await self.runtime.service.add_endpoint(name, subject, handler, request_type)
