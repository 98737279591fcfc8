"""``/api/nodes``: the worker nodes (the admin key), as the runtime-supervisors know them."""

from __future__ import annotations

from litestar import Controller, get
from litestar.di import NamedDependency

from api_gateway.controllers.common import error_responses
from api_gateway.controllers.realizer import fetch
from api_gateway.http.dependencies import Gateway
from api_gateway.http.security import access, admin_only
from contracts.base import Principal
from contracts.nodes import NODE_LIST, ListNodes, NodeView
from servicekit.access import Action, Resource

__all__ = ["NodeController"]


class NodeController(Controller):
    """Worker nodes: the hosts that hold workspaces and their processes."""

    path = "/api/nodes"
    tags = ["nodes"]

    @get(
        "/",
        operation_id="listNodes",
        opt=access(Resource.NODE, Action.READ),
        guards=[admin_only],
        responses=error_responses("forbidden"),
    )
    async def list_nodes(
        self, gateway: NamedDependency[Gateway], principal: NamedDependency[Principal]
    ) -> list[NodeView]:
        """Every registered worker node, by id (admin key): ``state`` (``ready`` while its
        supervisor answers, or answered within 15 s; else ``unreachable``), ``parts`` (which of
        its processes answer now: ``supervisor``, ``realizer``), its supervisor ``instance``,
        ``version``, ``startedAt``, ``lastSeenAt`` and ``capacity`` (slots, port range, CPUs,
        memory, free disk).

        Errors: 401 ``unauthenticated``; 403 ``forbidden`` (not the admin key); 503 (no
        runtime-supervisor answers); 504.
        """
        query = ListNodes(principal=principal)
        return await fetch(
            gateway, NODE_LIST, query, list[NodeView], timeout=gateway.settings.query_timeout
        )
