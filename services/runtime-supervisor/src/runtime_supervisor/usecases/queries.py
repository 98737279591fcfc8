"""Queries of the orchestration and the endpoints: service instances, a target's runtime state,
and the supervisor's workspace operations, scoped to the asking company (``None``: everything)."""

from __future__ import annotations

from collections.abc import Iterable
from typing import TYPE_CHECKING, Any
from uuid import UUID

from contracts.execution_views import WorkspaceOperation, WorkspaceOperationDetail
from contracts.runtime_commands import RuntimeState, RuntimeSummaries, RuntimeSummary
from contracts.workspace_views import Page
from runtime_supervisor.domain import (
    InvalidInputError,
    NotFoundError,
    Provisioning,
    RuntimeService,
    RuntimeTarget,
    ServiceRecord,
    SupervisorOperation,
    parse_target_key,
    target_key,
)
from runtime_supervisor.domain.config.effective import effective_commands
from runtime_supervisor.domain.desired import seeded_states
from runtime_supervisor.domain.leases import ControlLease
from runtime_supervisor.usecases.lookups import Lookups, visible
from runtime_supervisor.usecases.views import (
    operation_detail,
    operation_row,
    provisioning_view,
    service_brief,
)
from servicekit.access import AccessDeniedError

if TYPE_CHECKING:
    from servicekit.access import Access

__all__ = ["Queries", "owner_label"]


class Queries(Lookups):
    """The queries of the orchestration and the endpoints."""

    def service_record(self, scope_company_id: str | None, service_id: str) -> ServiceRecord:
        """One service instance, or ``NotFoundError`` (unknown or another company's)."""
        found = self.services.get(service_id)
        if found is None or not visible(found.company_id, scope_company_id):
            raise NotFoundError(
                f"There is no runtime service {service_id}.", runtimeServiceId=service_id
            )
        return found.record()

    def services_of(
        self,
        target: RuntimeTarget,
        *,
        include_inherited: bool = True,
        include_history: bool = False,
    ) -> list[ServiceRecord]:
        """The target's service instances, by service index then start.

        With ``include_inherited`` (reference §6.9), a project workspace and a shared workspace
        without its own config also see the ``project_workspace``-scoped instances started in
        the project workspace's checkout. Without ``include_history``, only the live instances
        and, for each configured service with none live, its latest ended one (its exit status
        and last output stay visible).
        """
        ids = list(self.services_by_target.get(target.key, []))
        if include_inherited and target.project_workspace_id and _shares_project_checkout(target):
            seen = set(ids)
            for sid in self.services_by_project_workspace.get(target.project_workspace_id, []):
                if sid not in seen and self._project_scoped_in_checkout(self.services[sid]):
                    ids.append(sid)
                    seen.add(sid)
        found = [self.services[sid] for sid in ids]
        if not include_history:
            found = _latest(found)
        order = sorted(
            found,
            key=lambda s: (s.service_index is None, s.service_index or 0, s.created_at),
        )
        return [s.record() for s in order]

    def _project_scoped_in_checkout(self, service: RuntimeService) -> bool:
        if service.scope_type != "project_workspace":
            return False
        if service.execution_workspace_id is None:
            return True
        ws = self.copy_of("workspace", service.execution_workspace_id)
        return ws is not None and ws.get("mode") == "shared_workspace"

    def live_services(self) -> list[ServiceRecord]:
        """Every ``starting`` or ``running`` instance of this node (adoption at start,
        stop-all)."""
        return [s.record() for s in self.services.values() if s.live and self.is_mine(s.node_id)]

    def port_owners(self) -> dict[int, ServiceRecord]:
        """Port → the live instance of this node that reserved it."""
        return {
            s.port: s.record()
            for s in self.services.values()
            if s.live and s.port and self.is_mine(s.node_id)
        }

    def reserved_ports(self) -> dict[int, str]:
        """Port → who holds it, named for an error (``execution workspace <id> (service web)``)."""
        return {port: owner_label(record) for port, record in self.port_owners().items()}

    def find_shared(self, reuse_key: str | None) -> ServiceRecord | None:
        """The most recently started healthy running instance with this reuse key (reference
        §6.4, §6.6), or None."""
        if not reuse_key:
            return None
        found = [
            s
            for s in self.services.values()
            if s.reuse_key == reuse_key
            and s.status == "running"
            and s.health_status == "healthy"
            and self.is_mine(s.node_id)
        ]
        return max(found, key=lambda s: s.created_at).record() if found else None

    # -- the target's runtime --------------------------------------------------------------

    def provisioning(self, target: RuntimeTarget) -> Provisioning | None:
        """The target's last runtime provisioning, if any."""
        runtime = self.runtimes.get(target.key)
        return runtime.provisioning_record() if runtime is not None else None

    def needs_provisioning(self, target: RuntimeTarget) -> bool:
        """A runtime provision command is configured and has not succeeded in the current
        checkout (DECISIONS 1)."""
        state = provisioning_view(target, self.provisioning(target)).state
        return bool(target.runtime_provision_command) and state != "provisioned"

    def control_lease(self, target: RuntimeTarget) -> ControlLease | None:
        """The target's runtime-control lease as recorded (the rule judges whether it is
        stale)."""
        runtime = self.runtimes.get(target.key)
        return runtime.lease_record() if runtime is not None else None

    def desired(self, target: RuntimeTarget) -> tuple[str | None, dict[str, str]]:
        """The target's recorded desired state and per-index states; an index with no recorded
        state has its service's configured ``desiredState`` (None, {}: neither)."""
        runtime = self.runtimes.get(target.key)
        desired, recorded = (
            (runtime.desired_state, dict(runtime.service_states)) if runtime else (None, {})
        )
        return desired, seeded_states(_configured_states(target), recorded)

    def desired_of(self, record: ServiceRecord) -> str | None:
        """The desired state of an instance's service index, in the target it was started for
        (recorded, else its configured ``desiredState``)."""
        if record.service_index is None:
            return None
        runtime = self.runtimes.get(record.target_key)
        recorded = runtime.service_states.get(str(record.service_index)) if runtime else None
        if recorded is not None:
            return recorded
        kind, target_id = parse_target_key(record.target_key)
        try:
            target = (
                self.target(None, workspace_id=target_id)
                if kind == "execution_workspace"
                else self.target(None, project_workspace_id=target_id)
            )
        except NotFoundError:
            return None
        return _configured_states(target).get(record.service_index)

    def runtime_state(self, target: RuntimeTarget) -> RuntimeState:
        """The target's runtime facts (``GetRuntimeState``; health as last probed)."""
        desired_state, service_states = self.desired(target)
        return RuntimeState(
            runtime_services=[
                service_brief(record, self.desired_of(record))
                for record in self.services_of(target)
            ],
            runtime_provisioning=provisioning_view(target, self.provisioning(target)),
            desired_state=desired_state,  # type: ignore[arg-type]
            service_states=service_states,  # type: ignore[arg-type]
        )

    def runtime_summaries(
        self, scope_company_id: str | None, workspace_ids: Iterable[str]
    ) -> RuntimeSummaries:
        """``ListRuntimeSummaries``: running / total of each execution workspace's services as
        :meth:`runtime_state` shows them (health as last probed), in the order asked; unknown
        and other companies' workspaces are left out."""
        items: list[RuntimeSummary] = []
        for workspace_id in dict.fromkeys(workspace_ids):
            try:
                target = self.target(scope_company_id, workspace_id=workspace_id)
            except NotFoundError:
                continue
            records = self.services_of(target)
            running = sum(1 for record in records if record.status == "running")
            items.append(
                RuntimeSummary(workspace_id=workspace_id, running=running, total=len(records))
            )
        return RuntimeSummaries(items=items)

    def event_sources(self, target: RuntimeTarget) -> list[UUID]:
        """The ids of the aggregates whose stored events are the target's runtime history (its
        runtime record, its service instances, its operations, what it reached or was kept
        from), for ``GetWorkspaceEvents``."""
        ids = [self.runtimes[target.key].id] if target.key in self.runtimes else []
        ids += [self.services[i].id for i in self.services_by_target.get(target.key, [])]
        ids += [self.operations[i].id for i in self.operations_by_target.get(target.key, [])]
        ids += [self.egress[i].id for i in self.egress_by_target.get(target.key, [])]
        return ids

    # -- operations ------------------------------------------------------------------------

    def list_operations(
        self,
        scope_company_id: str | None,
        workspace_id: str | None = None,
        project_workspace_id: str | None = None,
        limit: int = 50,
        offset: int = 0,
        *,
        access: Access | None = None,
    ) -> Page[WorkspaceOperation]:
        """The operations the supervisor recorded against a target, oldest first (a workspace
        the supervisor has no copy of may still have some; another company's is not found).
        For an agent key or run token (``access``), only its own (:meth:`owns_operation`)."""
        if (workspace_id is None) == (project_workspace_id is None):
            raise InvalidInputError(
                "Name exactly one of workspaceId and projectWorkspaceId.", field="workspaceId"
            )
        if workspace_id is not None:
            key, copy = (
                target_key("execution_workspace", workspace_id),
                self.copy_of("workspace", workspace_id),
            )
        else:
            assert project_workspace_id is not None
            key, copy = (
                target_key("project_workspace", project_workspace_id),
                self.copy_of("project_workspace", project_workspace_id),
            )
        if copy is not None and not visible(copy.company_id, scope_company_id):
            raise NotFoundError(
                "There is no such workspace.",
                workspaceId=workspace_id,
                projectWorkspaceId=project_workspace_id,
            )
        rows = [
            self.operations[i]
            for i in self.operations_by_target.get(key, [])
            if visible(self.operations[i].company_id, scope_company_id)
            and (access is None or self.owns_operation(access, self.operations[i]))
        ]
        return Page(
            items=[operation_row(o) for o in rows[offset : offset + limit]], total=len(rows)
        )

    def operation(self, scope_company_id: str | None, operation_id: str) -> SupervisorOperation:
        """A workspace operation the supervisor recorded, or ``NotFoundError``."""
        found = self.operations.get(operation_id)
        if found is None or not visible(found.company_id, scope_company_id):
            raise NotFoundError(
                f"There is no workspace operation {operation_id}.", operationId=operation_id
            )
        return found

    def operation_of(self, access: Access, operation_id: str) -> SupervisorOperation:
        """A workspace operation ``access`` may read: ``NotFoundError`` for another company's,
        ``AccessDeniedError`` (403) for an agent's on a workspace, issue or run not its own."""
        found = self.operation(access.scope(), operation_id)
        if not self.owns_operation(access, found):
            raise AccessDeniedError(
                "An agent can only read the workspace operations of its own issues, workspaces "
                "and runs (a project workspace's only through a shared workspace of its own on "
                f"its checkout); operation {operation_id} is not one of them.",
                operationId=operation_id,
            )
        return found

    def operation_view(
        self, scope_company_id: str | None, operation_id: str
    ) -> WorkspaceOperationDetail:
        """``GetWorkspaceOperation``: the row plus its excerpts."""
        return operation_detail(self.operation(scope_company_id, operation_id))


def owner_label(record: ServiceRecord) -> str:
    """Who holds a port, for errors: the target and the service's name."""
    kind, _, target_id = record.target_key.partition(":")
    return f"{kind.replace('_', ' ')} {target_id} (service {record.service_name})"


def _configured_states(target: RuntimeTarget) -> dict[int, str | None]:
    """Service index → its configured initial ``desiredState`` (those that set one)."""
    effective = effective_commands(target.own_runtime, target.project_runtime)
    return {
        c.service_index: c.desired_state
        for c in effective.services
        if c.service_index is not None and c.desired_state is not None
    }


def _shares_project_checkout(target: RuntimeTarget) -> bool:
    return target.kind == "project_workspace" or (
        target.mode == "shared_workspace" and target.own_runtime is None
    )


def _latest(services: Iterable[RuntimeService]) -> list[RuntimeService]:
    """Live instances, plus the latest ended one of each service that has none live."""
    services = list(services)
    live_ids = {_identity(s) for s in services if s.live}
    latest: dict[Any, RuntimeService] = {}
    for s in services:
        if s.live:
            continue
        ident = _identity(s)
        if ident not in live_ids and (
            ident not in latest or s.created_at >= latest[ident].created_at
        ):
            latest[ident] = s
    kept = {id(s) for s in latest.values()}
    return [s for s in services if s.live or id(s) in kept]


def _identity(service: RuntimeService) -> Any:
    if service.workspace_command_id:
        return ("command", service.workspace_command_id)
    if service.service_index is not None:
        return ("index", service.service_index)
    return ("name", service.service_name)
