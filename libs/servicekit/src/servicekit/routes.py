"""Bus endpoints as classes with a route table (docs/design/service-shape.md).

A service's endpoints for one aggregate are one class: each handler is a method that decodes
nothing itself (the bus decoded the request into its contract type), calls a use case and maps
the outcome; :meth:`BusEndpoints.routes` names each method's endpoint, subject and request type in
one table a reader scans at a glance. :func:`mount` adds the tables to the running service.
Because handlers are methods rather than closures inside a ``register_*`` function, each can be
read, and called by a test, on its own.
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from collections.abc import Sequence
    from types import UnionType

    from natsbus.service import BusService, Handler

__all__ = ["BusEndpoints", "Route", "mount"]


@dataclass(frozen=True, slots=True)
class Route:
    """One row of a route table: the endpoint ``name`` (as ``$SRV.INFO`` shows it), the
    ``subject`` it serves, the ``handler`` method, the contract type the request decodes into,
    and, where not the bus's default, how many requests it may handle at once."""

    name: str
    subject: str
    handler: Handler[Any]
    request_type: type[Any] | UnionType
    concurrency: int | None = None


class BusEndpoints(ABC):
    """The bus endpoints of one aggregate: handlers as methods and their route table."""

    @abstractmethod
    def routes(self) -> Sequence[Route]:
        """The endpoints this class serves, one :class:`Route` each."""


async def mount(service: BusService, *groups: BusEndpoints) -> None:
    """Add every route of ``groups`` to ``service``.

    Raises:
        ValueError: Two routes share an endpoint name (within a group or across them), or the
            service is stopping (:meth:`natsbus.service.BusService.add_endpoint`).
    """
    for group in groups:
        for route in group.routes():
            if route.concurrency is None:
                await service.add_endpoint(
                    route.name, route.subject, route.handler, route.request_type
                )
            else:
                await service.add_endpoint(
                    route.name,
                    route.subject,
                    route.handler,
                    route.request_type,
                    concurrency=route.concurrency,
                )
