"""Bus commands and queries of runtime services and jobs (owner: runtime-supervisor).

A target is an execution workspace (``workspaceId``) or a project workspace
(``projectWorkspaceId``): exactly one of them. The supervisor checks that it belongs to
``principal.companyId`` (another company's answers ``not_found``) and, for agent principals, the
runtime-control lease (reference §6.8: ``workspace_runtime_lease_conflict``, 409). Long work (a
start waiting for readiness, a job) answers ``accepted``; the operation's result is then the
reply's ``ok`` value.
"""

from __future__ import annotations

from datetime import datetime
from typing import Annotated, Literal

import msgspec

from contracts.base import Command, Query, Struct
from contracts.execution_views import RuntimeProvisioning, RuntimeServiceBrief, WorkspaceOperation
from contracts.workspace_config import ExecutionWorkspaceConfig, RuntimeConfig

__all__ = [
    "ControlRuntime",
    "EnsureRunServices",
    "GetRuntimeServiceLog",
    "GetRuntimeState",
    "LeaseReclaim",
    "ListRuntimeSummaries",
    "RealizerFacts",
    "RunEndedHere",
    "RunServices",
    "RuntimeAction",
    "RuntimeControlResult",
    "RuntimeLeaseOutcome",
    "RuntimeServiceLog",
    "RuntimeState",
    "RuntimeSummaries",
    "RuntimeSummary",
]

RuntimeAction = Literal["start", "stop", "restart", "run"]


class LeaseReclaim(Struct, frozen=True, kw_only=True):
    """Whom a reclaimed runtime-control lease was taken from (``ownerKey``) and why
    (``reason``: ``expired``, ``owner_issue_terminal``, ``owner_issue_missing``,
    ``owner_run_terminal`` or ``owner_run_missing``)."""

    owner_key: str
    reason: str


class RuntimeLeaseOutcome(Struct, frozen=True, kw_only=True):
    """What the runtime-control lease said (reference §6.8): ``bypassed`` for board and admin
    actors, ``claimed``, ``renewed`` or ``reclaimed`` (with whom from and why) for agents."""

    outcome: Literal["bypassed", "claimed", "renewed", "reclaimed"]
    owner_key: str | None = None
    reclaimed_from: LeaseReclaim | None = None
    expires_at: datetime | None = None


class RuntimeControlResult(Struct, frozen=True, kw_only=True):
    """The answer to :class:`ControlRuntime`: the operation recorded for the action and the
    target's runtime services and lazy provisioning after it (the gateway lays them over the
    workspace it read before the action)."""

    operation: WorkspaceOperation
    runtime_services: list[RuntimeServiceBrief] = msgspec.field(default_factory=list)
    lease: RuntimeLeaseOutcome | None = None
    runtime_provisioning: RuntimeProvisioning | None = None
    """None from a supervisor older than this field: the gateway then reads the workspace again."""


class RuntimeState(Struct, frozen=True, kw_only=True):
    """A workspace's runtime facts: its effective services (inherited ones included), the lazy
    provisioning state and the desired states per service index."""

    runtime_services: list[RuntimeServiceBrief] = msgspec.field(default_factory=list)
    runtime_provisioning: RuntimeProvisioning = msgspec.field(default_factory=RuntimeProvisioning)
    desired_state: Literal["running", "stopped", "manual"] | None = None
    service_states: dict[str, Literal["running", "stopped", "manual"]] = msgspec.field(
        default_factory=dict
    )


class RuntimeSummary(Struct, frozen=True, kw_only=True):
    """A workspace's services in short: ``total`` instances its runtime state shows (live ones
    and the last end of each service with none live) and the ``running`` ones among them."""

    workspace_id: str
    running: int
    total: int


class RuntimeSummaries(Struct, frozen=True, kw_only=True):
    """The answer to :class:`ListRuntimeSummaries`: one summary per known workspace asked for,
    in the order asked (unknown and other companies' workspaces are left out)."""

    items: list[RuntimeSummary] = msgspec.field(default_factory=list)


class RuntimeServiceLog(Struct, frozen=True, kw_only=True):
    """A slice of a service's log file: ``text`` from byte ``offset``, ``size`` of the file."""

    text: str
    offset: int
    length: int
    size: int


class RunServices(Struct, frozen=True, kw_only=True):
    """The answer to :class:`EnsureRunServices`: the run's services, each leased to the run."""

    runtime_services: list[RuntimeServiceBrief] = msgspec.field(default_factory=list)
    started: list[str] = msgspec.field(default_factory=list)
    reused: list[str] = msgspec.field(default_factory=list)


class RealizerFacts(Struct, frozen=True, kw_only=True):
    """What the caller has just read from the workspace-realizer, so that the supervisor acts on
    it (read-your-writes across services): it waits, up to 10 s and within the request's
    deadline, until its copies of the realizer's events have had these facts (a configuration
    they had, now or before; a generation at least this one), else answers
    ``service_unavailable`` (503, "retry in a moment"); an unknown workspace stays ``not_found``.
    A ``stop`` that names no configured command waits only for the workspace. A field left out
    is not compared; ``null`` means "none".
    """

    workspace_config: ExecutionWorkspaceConfig | msgspec.UnsetType | None = msgspec.UNSET
    """The execution workspace's ``config``."""
    project_runtime_config: RuntimeConfig | msgspec.UnsetType | None = msgspec.UNSET
    """The project workspace's ``runtimeConfig`` (the target's, or the one an execution workspace
    inherits from)."""
    lifecycle_generation: int | msgspec.UnsetType = msgspec.UNSET
    """The execution workspace's ``lifecycleGeneration`` (archives and reopens)."""
    node_id: str | msgspec.UnsetType = msgspec.UNSET
    """The worker node the execution workspace is on (a drain moved it there): the node's
    supervisor acts once its copy says so."""


class ControlRuntime(Command, tag="runtime_service.control.v1", frozen=True, kw_only=True):
    """Start, stop or restart runtime services, or run a job → ``RuntimeControlResult``.

    ``workspaceCommandId`` names a configured command; ``runtimeServiceId`` a running row;
    ``serviceIndex`` a service by its index among services. None of them: every service of the
    target (start, stop, restart), or an error for ``run`` (a job must be named). A job with
    start/stop/restart, or a service with run, answers ``unprocessable`` (422).
    """

    workspace_id: str | None = None
    project_workspace_id: str | None = None
    action: RuntimeAction
    workspace_command_id: str | None = None
    runtime_service_id: str | None = None
    service_index: int | None = None
    realizer_facts: RealizerFacts | None = None
    """What the caller read from the realizer just before (the gateway always sends it)."""


class GetRuntimeState(Query, tag="runtime_service.get_state.v1", frozen=True, kw_only=True):
    """A workspace's runtime facts → ``RuntimeState``; ``probeHealth`` re-probes every running
    service first (detail reads)."""

    workspace_id: str | None = None
    project_workspace_id: str | None = None
    probe_health: bool = False


class ListRuntimeSummaries(
    Query, tag="runtime_service.list_summaries.v1", frozen=True, kw_only=True
):
    """Running / total services of many execution workspaces → ``RuntimeSummaries`` (health as
    last probed, never re-probed; lists)."""

    workspace_ids: Annotated[list[str], msgspec.Meta(max_length=200)]


class GetRuntimeServiceLog(Query, tag="runtime_service.get_log.v1", frozen=True, kw_only=True):
    """A service's log → ``RuntimeServiceLog``: the last ``tail`` lines, or ``length`` bytes from
    ``offset`` (at most 256 KiB); neither: the last 64 KiB."""

    workspace_id: str | None = None
    project_workspace_id: str | None = None
    service_id: str
    tail: int | None = None
    offset: int | None = None
    length: int | None = None


class EnsureRunServices(
    Command, tag="runtime_service.ensure_for_run.v1", frozen=True, kw_only=True
):
    """Start (or reuse) every service of the workspace whose desired state is ``running``, each
    leased to the run → ``RunServices`` (reference §6.6; DECISIONS 7: never ``manual`` or
    ``stopped`` ones). A failure releases the leases taken so far."""

    workspace_id: str
    run_id: str
    agent_id: str | None = None
    issue_id: str | None = None
    realizer_facts: RealizerFacts | None = None
    """What the realizer answered the controller's realize with."""


class RunEndedHere(Command, tag="runtime_service.run_ended.v1", frozen=True, kw_only=True):
    """A run finished, told to the supervisor of the node that holds its slot or services it
    released (``ws.cmd.runtime_service.run_ended.<node>``) by the supervisor whose inbox heard of
    it: that node frees the slot (its adapter killed if it still runs) and stops or times the
    services no run holds any more. No answer is needed for safety: a node that misses it does
    the same when its supervisor starts (adoption, slot recovery)."""

    run_id: str
    released_service_ids: list[str] = msgspec.field(default_factory=list)
