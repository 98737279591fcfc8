"""Use case of the worker-node registry: a supervisor registers its node when it starts."""

from __future__ import annotations

from typing import TYPE_CHECKING

import msgspec
from eventsourcing.application import AggregateNotFoundError

from runtime_supervisor.domain.nodes import WorkerNode, node_uuid
from runtime_supervisor.readmodels import SupervisorReadModels

if TYPE_CHECKING:
    from contracts.nodes import NodeCapacity

__all__ = ["NodeUseCases"]


class NodeUseCases(SupervisorReadModels):
    """Register a node's start."""

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
