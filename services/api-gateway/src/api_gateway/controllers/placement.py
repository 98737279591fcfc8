"""Where a new project workspace goes (docs/scale-out.md, "Worker nodes").

A project workspace belongs to the worker node whose host holds its checkout, for life: its
worktrees, services, jobs and agents run there. The request names it (``nodeId``), or:

- one node is ready (or none is registered: a stack from before worker nodes): that one;
- several are, and the workspace has a local ``cwd``: refused (422), naming them (a path means
  something on one host only, and the gateway cannot tell which);
- several are, and it is repo-only: the ready node with the fewest workspaces placed on it
  (then by id), where it is cloned.

A node named that is not registered is 404, naming the registered ones; a node named that is
registered but does not answer is 503 ``node_unreachable``. Everything later about the workspace (its execution
workspaces, their services and files) goes to that node: the services send a request on to the
node of its record (:mod:`servicekit.node_routing`).
"""

from __future__ import annotations

from typing import Final

from api_gateway.controllers.realizer import fetch, node_of
from api_gateway.domain import InvalidInputError, NotFoundError
from api_gateway.http.dependencies import Gateway
from api_gateway.http.errors import BusReplyError
from contracts.base import Actor, Principal
from contracts.errors import ErrorCode
from contracts.nodes import NODE_LIST, ListNodes, NodeView
from natsbus.errors import error_reply
from natsbus.unanswered import NOT_DELIVERED

__all__ = ["choose_node", "node_unanswered", "place_project_workspace", "registered"]

_SYSTEM: Final = Principal(company_id=None, actor=Actor(type="system", id="api-gateway"))


def choose_node(nodes: list[NodeView], requested: str | None, has_cwd: bool, default: str) -> str:
    """The rule of the module's docstring over the registered ``nodes``.

    Raises:
        NotFoundError: ``requested`` is not registered (404, naming the registered ones).
        InvalidInputError: Several nodes could hold a ``cwd`` and none was named (422).
        BusReplyError: ``requested`` is registered but unreachable (``node_unreachable``).
    """
    ready = [node for node in nodes if node.state == "ready"]
    listed = ", ".join(node.id for node in nodes) or "none"
    if requested is not None:
        found = registered(nodes, requested)
        if found.state != "ready":
            raise _unreachable(found)
        return requested
    if not nodes:  # a stack whose supervisor registered no node yet
        return default
    if len(ready) == 1:
        return ready[0].id
    if not ready:
        raise _unreachable(nodes[0]) if len(nodes) == 1 else _none_ready(listed)
    if has_cwd:
        names = ", ".join(node.id for node in ready)
        raise InvalidInputError(
            f"Several worker nodes are ready ({names}) and cwd is a path on one host: give "
            "nodeId, the node whose host has that checkout.",
            field="nodeId",
            nodes=[node.id for node in ready],
        )
    return min(ready, key=lambda node: (node.workspaces, node.id)).id


def registered(nodes: list[NodeView], node: str) -> NodeView:
    """The registered node ``node``.

    Raises:
        NotFoundError: It is not registered (404, naming the registered ones).
    """
    found = next((known for known in nodes if known.id == node), None)
    if found is None:
        listed = ", ".join(known.id for known in nodes) or "none"
        raise NotFoundError(
            f"There is no worker node {node!r}; the registered ones are: {listed} "
            "(clipyard nodes lists them).",
            nodeId=node,
        )
    return found


async def place_project_workspace(gateway: Gateway, requested: str | None, has_cwd: bool) -> str:
    """The node a new project workspace is created on (see :func:`choose_node`). When no
    runtime-supervisor answers for the registry, the node named, else the gateway's own: the
    realizer host part asked answers for itself (or is not there, 503)."""
    try:
        nodes = await fetch(
            gateway,
            NODE_LIST,
            ListNodes(principal=_SYSTEM, parts=False),
            list[NodeView],
            timeout=gateway.settings.query_timeout,
        )
    except BusReplyError as exc:
        if exc.reply.code not in (ErrorCode.SERVICE_UNAVAILABLE, ErrorCode.TIMEOUT):
            raise
        return requested or node_of(gateway)
    return choose_node(nodes, requested, has_cwd, node_of(gateway))


def _unreachable(node: NodeView) -> BusReplyError:
    message = (
        f"Worker node {node.id} does not answer (state {node.state}): nothing was created. "
        "Retry when it is back (clipyard nodes), or name another node."
    )
    return BusReplyError(
        error_reply(ErrorCode.NODE_UNREACHABLE, message, details={"nodeId": node.id})
    )


def _none_ready(listed: str) -> BusReplyError:
    message = (
        f"No worker node answers (registered: {listed}): nothing was created. Start a node's "
        "runtime-supervisor and workspace-realizer, then retry."
    )
    return BusReplyError(error_reply(ErrorCode.NODE_UNREACHABLE, message))


def node_unanswered(exc: BusReplyError, subject: str, node: str) -> BusReplyError:
    """``exc`` as ``node_unreachable`` when it is the bus's own 503 for ``subject``, not
    delivered (nothing on ``node`` serves it: its host part or supervisor is down); else ``exc``
    itself."""
    reply = exc.reply
    unanswered = reply.code == ErrorCode.SERVICE_UNAVAILABLE and reply.details.get("subject")
    if unanswered != subject or reply.details.get(NOT_DELIVERED) is not True:
        return exc  # delivered (it may have been done), or the handler's own answer
    message = (
        f"Worker node {node}, which holds this, does not answer: nothing was done. Retry when "
        "it is back (clipyard nodes shows its state), or drain it."
    )
    return BusReplyError(error_reply(ErrorCode.NODE_UNREACHABLE, message, details={"nodeId": node}))
