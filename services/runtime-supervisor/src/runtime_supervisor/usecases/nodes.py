"""Use case of the worker-node registry: a supervisor registers its node when it starts."""

from __future__ import annotations

from typing import TYPE_CHECKING

import msgspec
from eventsourcing.application import AggregateNotFoundError

from runtime_supervisor.domain.errors import NotFoundError
from runtime_supervisor.domain.nodes import WorkerNode, node_uuid
from runtime_supervisor.domain.targets import OPEN_WORKSPACE_STATUSES
from runtime_supervisor.readmodels import SupervisorReadModels

if TYPE_CHECKING:
    from contracts.nodes import NodeCapacity

__all__ = ["NodeUseCases"]


class NodeUseCases(SupervisorReadModels):
    """Register a node's start; count what is placed on each node."""

    def placed_workspaces(self) -> dict[str, int]:
        """Node id -> the open execution workspaces and live project workspaces on it, as the
        copies say (the placement rule's load, docs/scale-out.md, "Worker nodes")."""
        counts: dict[str, int] = {}
        for ws in self.copies["workspace"].values():
            node = ws.get("node_id")
            if node and ws.get("status") in OPEN_WORKSPACE_STATUSES:
                counts[node] = counts.get(node, 0) + 1
        for pw in self.copies["project_workspace"].values():
            node = pw.get("node_id")
            if node and not pw.get("deleted", False):
                counts[node] = counts.get(node, 0) + 1
        return counts

    def register_node(
        self, node_id: str, *, instance: str, version: str, capacity: NodeCapacity
    ) -> WorkerNode:
        """Record that ``instance`` (this supervisor) started on node ``node_id``."""
        try:
            node: WorkerNode = self.repository.get(node_uuid(node_id))
        except AggregateNotFoundError:
            node = WorkerNode(node_id=node_id)
        node.start(
            instance=instance,
            release=version,
            at=self.now(),
            capacity=msgspec.to_builtins(capacity),
        )
        self.save(node)
        return self.nodes[node_id]

    def drain_node(self, node_id: str, reason: str | None, *, draining: bool = True) -> WorkerNode:
        """Record that ``node_id`` is draining (``draining`` False: no longer).

        Raises:
            NotFoundError: No such node is registered.
        """
        try:
            node: WorkerNode = self.repository.get(node_uuid(node_id))
        except AggregateNotFoundError:
            known = ", ".join(sorted(self.nodes)) or "none"
            raise NotFoundError(
                f"There is no worker node {node_id!r}; the registered ones are: {known}.",
                nodeId=node_id,
            ) from None
        if draining:
            node.drain(reason)
        else:
            node.undrain()
        self.save(node)
        return self.nodes[node_id]
