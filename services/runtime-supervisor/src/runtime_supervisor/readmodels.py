"""The supervisor's read models: a current copy of every aggregate it owns, kept by projecting
each stored event onto it with the aggregate's own logic, plus the indexes the queries need.

Rebuilt from the notification log at start and kept current after each save
(``ServiceApplication``); queries read these copies on the store thread, use cases load
aggregates from the repository.
"""

from __future__ import annotations

from typing import Any
from uuid import UUID

import msgspec

from eventstore import ServiceApplication, aggregate_state
from runtime_supervisor.domain import (
    COPY_KINDS,
    AdapterSlot,
    CopyKind,
    EgressSeen,
    RuntimeService,
    SupervisorOperation,
    UpstreamCopy,
    WorkspaceRuntime,
)
from runtime_supervisor.domain.configs_seen import CONFIG_FIELDS, config_fingerprint
from runtime_supervisor.domain.nodes import WorkerNode

__all__ = ["SupervisorReadModels"]

_OWN_EVENTS = (
    UpstreamCopy.Event,
    RuntimeService.Event,
    WorkspaceRuntime.Event,
    SupervisorOperation.Event,
    AdapterSlot.Event,
    EgressSeen.Event,
    WorkerNode.Event,
)


class SupervisorReadModels(ServiceApplication):
    """Projection of every supervisor aggregate, and the indexes the queries need."""

    copies: dict[CopyKind, dict[str, UpstreamCopy]]
    """Kind -> upstream id -> the copy."""
    services: dict[str, RuntimeService]
    runtimes: dict[str, WorkspaceRuntime]
    """Target key -> the target's runtime record."""
    operations: dict[str, SupervisorOperation]
    services_by_target: dict[str, list[str]]
    """Target key -> ids of the service instances started for it, oldest first."""
    services_by_project_workspace: dict[str, list[str]]
    """Project workspace id -> ids of the instances started for it or for one of its execution
    workspaces (inheritance, reference §6.9)."""
    services_by_run: dict[str, set[str]]
    """Run id -> ids of the instances the run holds a lease on."""
    operations_by_target: dict[str, list[str]]
    slots: dict[str, AdapterSlot]
    """Slot id -> the adapter slot (every grant ever made)."""
    slots_by_run: dict[str, str]
    """Run id -> the id of its latest slot."""
    configs_seen: dict[tuple[CopyKind, str], set[bytes]]
    """(kind, upstream id) -> fingerprints of every configuration the copy has had
    (``domain.configs_seen``)."""
    issues_by_workspace: dict[str, set[str]]
    """Execution workspace id -> the issues whose current workspace it is (as the copies say)."""
    egress: dict[str, EgressSeen]
    """Id -> what one namespace reached or was kept from in one period."""
    egress_by_target: dict[str, list[str]]
    """Target key -> ids of its egress records, oldest first."""
    copies_seen: int
    """How many copy events were applied (it moves whenever a copy does)."""
    nodes: dict[str, WorkerNode]
    """Node id -> the worker node as its supervisor last registered it."""
    node_id: str | None = None
    """The worker node this supervisor serves (set at wiring): the sweeps, port reservations,
    reuse and slot positions cover its records only. None (a replay, the audit tools): all."""
    _objects: dict[UUID, Any]
    _leases: dict[str, frozenset[str]]
    _issue_workspace: dict[str, str]

    first_node: str | None
    """The node registered first: records from before worker nodes (no node) are its own."""

    def is_mine(self, node_id: str | None) -> bool:
        """A record of ``node_id`` belongs to this supervisor's node. A record without one was
        made before worker nodes, on the only node there was: the first registered (any node,
        while none is)."""
        if self.node_id is None:
            return True
        if node_id is None:
            return self.first_node in (None, self.node_id)
        return node_id == self.node_id

    def init_read_models(self) -> None:
        """Empty read models (before every rebuild)."""
        self.copies = {kind: {} for kind in COPY_KINDS}
        self.services = {}
        self.runtimes = {}
        self.operations = {}
        self.services_by_target = {}
        self.services_by_project_workspace = {}
        self.services_by_run = {}
        self.operations_by_target = {}
        self.slots = {}
        self.slots_by_run = {}
        self.configs_seen = {}
        self.issues_by_workspace = {}
        self.egress = {}
        self.egress_by_target = {}
        self.copies_seen = 0
        self.nodes = {}
        self.first_node = None
        self._objects = {}
        self._leases = {}
        self._issue_workspace = {}

    def project(self, domain_event: Any) -> None:
        """Apply one stored event to the copy of its aggregate, then index it."""
        if not isinstance(domain_event, _OWN_EVENTS):
            return
        current = self._objects.get(domain_event.originator_id)
        aggregate = domain_event.mutate(current)
        self._objects[domain_event.originator_id] = aggregate
        self._index(aggregate, created=current is None)

    def _index(self, aggregate: Any, *, created: bool) -> None:
        key = str(aggregate.id)
        if isinstance(aggregate, UpstreamCopy):
            self.copies[aggregate.kind][aggregate.key] = aggregate
            self.copies_seen += 1
            self._note_config(aggregate)
            if aggregate.kind == "issue":
                self._index_issue(aggregate)
        elif isinstance(aggregate, RuntimeService):
            self.services[key] = aggregate
            if created:
                self.services_by_target.setdefault(aggregate.target_key, []).append(key)
                if aggregate.project_workspace_id:
                    ids = self.services_by_project_workspace.setdefault(
                        aggregate.project_workspace_id, []
                    )
                    ids.append(key)
            self._index_leases(key, frozenset(aggregate.lease_run_ids))
        elif isinstance(aggregate, WorkspaceRuntime):
            self.runtimes[aggregate.target_key] = aggregate
        elif isinstance(aggregate, SupervisorOperation):
            self.operations[key] = aggregate
            if created:
                self.operations_by_target.setdefault(aggregate.target_key, []).append(key)
        elif isinstance(aggregate, AdapterSlot):
            self.slots[key] = aggregate
            self.slots_by_run[aggregate.run_id] = key
        elif isinstance(aggregate, WorkerNode):
            self.nodes[aggregate.node_id] = aggregate
            if self.first_node is None:  # projected in the order the store holds them
                self.first_node = aggregate.node_id
        elif isinstance(aggregate, EgressSeen):
            self.egress[key] = aggregate
            if created and aggregate.target_key:
                self.egress_by_target.setdefault(aggregate.target_key, []).append(key)

    def _note_config(self, copy: UpstreamCopy) -> None:
        if copy.kind not in CONFIG_FIELDS:
            return
        name, kind = CONFIG_FIELDS[copy.kind]
        try:
            fingerprint = config_fingerprint(copy.get(name), kind)
        except msgspec.ValidationError:  # not a configuration this build reads: never matched
            return
        self.configs_seen.setdefault((copy.kind, copy.key), set()).add(fingerprint)

    def _index_issue(self, issue: UpstreamCopy) -> None:
        """Keep ``issues_by_workspace`` at the issue's current workspace."""
        workspace = issue.get("execution_workspace_id")
        before = self._issue_workspace.get(issue.key)
        if before == workspace:
            return
        if before is not None:
            linked = self.issues_by_workspace.get(before, set())
            linked.discard(issue.key)
            if not linked:
                self.issues_by_workspace.pop(before, None)
            del self._issue_workspace[issue.key]
        if workspace:
            self.issues_by_workspace.setdefault(workspace, set()).add(issue.key)
            self._issue_workspace[issue.key] = workspace

    def _index_leases(self, key: str, leases: frozenset[str]) -> None:
        before = self._leases.get(key, frozenset())
        for run_id in before - leases:
            held = self.services_by_run.get(run_id, set())
            held.discard(key)
            if not held:
                self.services_by_run.pop(run_id, None)
        for run_id in leases - before:
            self.services_by_run.setdefault(run_id, set()).add(key)
        self._leases[key] = leases

    def read_models(self) -> dict[str, object]:
        """The read models as plain data, for replay verification."""
        return {
            "copies": {
                kind: {key: aggregate_state(copy) for key, copy in models.items()}
                for kind, models in self.copies.items()
            },
            "services": {key: aggregate_state(s) for key, s in self.services.items()},
            "runtimes": {key: aggregate_state(r) for key, r in self.runtimes.items()},
            "operations": {key: aggregate_state(o) for key, o in self.operations.items()},
            "services_by_target": {k: list(v) for k, v in self.services_by_target.items()},
            "services_by_project_workspace": {
                k: list(v) for k, v in self.services_by_project_workspace.items()
            },
            "services_by_run": {k: sorted(v) for k, v in self.services_by_run.items()},
            "operations_by_target": {k: list(v) for k, v in self.operations_by_target.items()},
            "slots": {key: aggregate_state(s) for key, s in self.slots.items()},
            "slots_by_run": dict(self.slots_by_run),
            "egress": {key: aggregate_state(e) for key, e in self.egress.items()},
            "egress_by_target": {k: list(v) for k, v in self.egress_by_target.items()},
            "issues_by_workspace": {k: sorted(v) for k, v in self.issues_by_workspace.items()},
            "nodes": {key: aggregate_state(n) for key, n in self.nodes.items()},
            "configs_seen": {
                f"{kind}:{key}": sorted(seen.decode() for seen in fingerprints)
                for (kind, key), fingerprints in self.configs_seen.items()
            },
        }

    def copy_of(self, kind: CopyKind, key: str | None) -> UpstreamCopy | None:
        """The copy of an upstream record, if its events arrived."""
        return self.copies[kind].get(key) if key else None
