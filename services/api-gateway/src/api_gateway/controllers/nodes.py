"""``/api/nodes``: the worker nodes (the admin key), as the runtime-supervisors know them, and
draining one (docs/scale-out.md, "Draining a node")."""

from __future__ import annotations

from litestar import Controller, get, post
from litestar.di import NamedDependency
from litestar.params import FromPath, JSONBody

from api_gateway.controllers.common import error_responses
from api_gateway.controllers.placement import node_unanswered, registered
from api_gateway.controllers.realizer import fetch
from api_gateway.http.dependencies import Gateway
from api_gateway.http.errors import BusReplyError
from api_gateway.http.security import access, admin_only
from contracts.base import Principal
from contracts.drains import (
    NODE_UNDRAIN,
    DrainNode,
    DrainNodeBody,
    DrainReport,
    UndrainNode,
    drain_node,
)
from contracts.nodes import NODE_LIST, ListNodes, NodeView
from servicekit.access import Action, Resource

__all__ = ["DRAIN_TIMEOUT", "NodeController"]

DRAIN_TIMEOUT = 3600.0
"""Seconds a drain request waits for its pass (each project workspace is cloned on another
node, each worktree rebuilt there)."""


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

    @post(
        "/{node:str}/drain",
        operation_id="drainNode",
        opt=access(Resource.NODE, Action.CONTROL),
        guards=[admin_only],
        status_code=200,
        responses=error_responses("forbidden", "not_found", "node_unreachable"),
    )
    async def drain(
        self,
        node: FromPath[str],
        gateway: NamedDependency[Gateway],
        principal: NamedDependency[Principal],
        data: JSONBody[DrainNodeBody | None] = None,
    ) -> DrainReport:
        """Drain a worker node (admin key): it takes no new project workspace (``state:
        draining``), and its idle repo-only workspaces move to the least-loaded other ready
        node: each worktree's work (commits, changes, untracked files) is saved in a rescue ref
        pushed to the project's remote (``refs/clipyard/moves/<workspaceId>``), the project
        workspace is cloned on the other node, each worktree rebuilt there on its branch with
        its files, and its running services started there. Workspaces a run holds are listed
        in ``waiting`` and move when their runs end. The report says what ``moved``, what did
        not (``notMoved``, with a ``reason`` and a message saying what to do) and how many
        workspaces are still ``remaining`` on the node. Drain again at any time: it moves what
        it can then.

        Errors: 401; 403 (not the admin key); 404 (no such node, naming the registered ones);
        503 ``node_unreachable`` (its workspace-realizer does not answer); 504.
        """
        await _registered(gateway, principal, node)
        reason = data.reason if data is not None else None
        command = DrainNode(principal=principal, node_id=node, reason=reason)
        subject = drain_node(node)
        try:
            return await fetch(gateway, subject, command, DrainReport, timeout=DRAIN_TIMEOUT)
        except BusReplyError as exc:
            raise node_unanswered(exc, subject, node) from None

    @post(
        "/{node:str}/undrain",
        operation_id="undrainNode",
        opt=access(Resource.NODE, Action.CONTROL),
        guards=[admin_only],
        status_code=200,
        responses=error_responses("forbidden", "not_found"),
    )
    async def undrain(
        self,
        node: FromPath[str],
        gateway: NamedDependency[Gateway],
        principal: NamedDependency[Principal],
    ) -> NodeView:
        """Take a drained node back (admin key): new project workspaces may be placed on it
        again, and the workspaces waiting for their runs stay. What moved away stays where it
        is. Answers the node as ``GET /api/nodes`` shows it.

        Errors: 401; 403 (not the admin key); 404 (no such node); 503; 504.
        """
        await _registered(gateway, principal, node)
        command = UndrainNode(principal=principal, node_id=node)
        return await fetch(
            gateway, NODE_UNDRAIN, command, NodeView, timeout=gateway.settings.query_timeout
        )


async def _registered(gateway: Gateway, principal: Principal, node: str) -> None:
    """Refuse a node the registry does not know (404, naming the registered ones)."""
    nodes = await fetch(
        gateway,
        NODE_LIST,
        ListNodes(principal=principal, parts=False),
        list[NodeView],
        timeout=gateway.settings.query_timeout,
    )
    registered(nodes, node)
