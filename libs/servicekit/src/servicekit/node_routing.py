"""Host-bound work goes to the node that holds it (docs/scale-out.md, "Worker nodes").

A record bound to one host (an execution or project workspace, its services, jobs and files)
names its worker node. A host part (a workspace-realizer host part, a runtime-supervisor) that
receives a request for a record of another node never acts on it: it sends the request on to
that node's own subject and answers with that node's reply, unchanged (an ``accepted`` long
operation included). A caller that knows the node sends it there at once; one that does not
(a query on a subject any instance serves) costs one hop more.

A request already sent on by another node is never sent on again: if it still is not this
node's, the nodes disagree on where the record lives and the answer is ``wrong_node``, naming
the node this one believes holds it. A node that does not answer is ``node_unreachable`` (503),
naming it: nothing was done.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Mapping
from typing import TYPE_CHECKING, Any, Final

from contracts.base import Accepted, ErrorReply, Ok
from contracts.errors import DetailedError, ErrorCode
from natsbus.context import DEADLINE_HEADER
from natsbus.unanswered import NOT_DELIVERED

if TYPE_CHECKING:
    from natsbus import BusClient, RequestContext

__all__ = [
    "FORWARDED_HEADER",
    "NodeRouter",
    "NodeUnreachableError",
    "WrongNodeError",
]

FORWARDED_HEADER: Final = "Clipyard-Forwarded-By"
"""Set on a request one node sent on to another: the sender's node id."""
_NOT_COPIED: Final = frozenset({DEADLINE_HEADER.lower(), "traceparent", "tracestate"})
"""Headers the forwarded request gets afresh (its deadline, its own span)."""
_MIN_WAIT: Final = 0.5
RELAY_MARGIN: Final = 1.0
"""Seconds of the asker's time kept for the hop back."""


class WrongNodeError(DetailedError):
    """The record lives on another node than the one the request reached."""

    code = ErrorCode.WRONG_NODE


class NodeUnreachableError(DetailedError):
    """The node that holds the record does not answer."""

    code = ErrorCode.NODE_UNREACHABLE


class NodeRouter:
    """Sends a request on to the node that holds its record, when that is not this one."""

    def __init__(self, bus: BusClient, node: str) -> None:
        self.bus = bus
        self.node = node

    def is_here(self, node: str | None) -> bool:
        """A record of ``node`` is this node's (None: recorded before nodes, the only one)."""
        return node is None or node == self.node

    async def forward(
        self,
        node: str,
        subject_of: Callable[[str], str],
        message: Any,
        ctx: RequestContext,
        *,
        what: str,
    ) -> Ok | Accepted | ErrorReply:
        """Send ``message`` to ``subject_of(node)`` with what is left of the request's time and
        return the reply as it came.

        Args:
            node: The node that holds the record (not this one).
            subject_of: The endpoint's subject on a given node.
            message: The decoded request, sent again as it is.
            ctx: The request being served (its deadline and headers are carried on).
            what: The record, for messages (``execution workspace ab12``).

        Raises:
            WrongNodeError: The request was sent on to this node already.
            NodeUnreachableError: Nothing on ``node`` serves the subject, or the bus cannot send.
        """
        sender = _header(ctx.headers, FORWARDED_HEADER)
        if sender is not None:
            raise WrongNodeError(
                f"{what} is on node {node}, not on node {self.node}, which node {sender} sent "
                f"this request to: the nodes' records disagree; send it to node {node}.",
                nodeId=node,
            )
        headers = {
            key: value for key, value in ctx.headers.items() if key.lower() not in _NOT_COPIED
        }
        headers[FORWARDED_HEADER] = self.node
        # The node's answer must reach this node before the asker stops waiting: its reply
        # (an ``accepted`` one included) is due a margin before the asker's deadline.
        timeout = max(ctx.deadline - time.time() - RELAY_MARGIN, _MIN_WAIT)
        subject = subject_of(node)
        reply = await self.bus.request(subject, message, timeout=timeout, headers=headers)
        if _unanswered(reply, subject):
            raise NodeUnreachableError(
                f"{what} is on worker node {node}, which does not answer: nothing was done. "
                f"Retry when node {node} is back (clipyard nodes shows its state), or drain it.",
                nodeId=node,
            )
        return reply


def _unanswered(reply: Ok | Accepted | ErrorReply, subject: str) -> bool:
    """The request reached no handler on the node: the bus's own 503 for ``subject``, marked
    not delivered (nothing serves it). A 503 after it was delivered (a restart or a cut
    connection mid-request: it may have been done) and a handler's own 503 (its store is down)
    are that node's answer, passed on as they are."""
    return (
        isinstance(reply, ErrorReply)
        and reply.code == ErrorCode.SERVICE_UNAVAILABLE
        and (reply.details or {}).get("subject") == subject
        and (reply.details or {}).get(NOT_DELIVERED) is True
    )


def _header(headers: Mapping[str, str], name: str) -> str | None:
    lowered = name.lower()
    return next((value for key, value in headers.items() if key.lower() == lowered), None)
