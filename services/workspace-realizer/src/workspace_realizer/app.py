"""Composition root and lifecycle of the workspace-realizer: reads the settings, builds the host
ports, the orchestration context and the endpoint classes of the parts this process serves
(``CLIPYARD_REALIZER_PART``: both, the company-wide part or the host part; docs/scale-out.md and
docs/design/service-shape.md, the realizer's two parts), and hands them to ``servicekit``."""

from __future__ import annotations

import logging
import os
from collections.abc import Awaitable, Callable, Mapping
from dataclasses import replace
from typing import TYPE_CHECKING

from servicekit import ServiceRuntime, ServiceSpec, run_service
from servicekit.routes import mount
from workspace_realizer import __version__
from workspace_realizer.adapters.agents_bus import BusAgentDirectory
from workspace_realizer.adapters.contained_bus import BusCommandRunner
from workspace_realizer.adapters.credentials_bus import BusCredentials, BusPullRequests
from workspace_realizer.adapters.host import HostPorts, default_ports
from workspace_realizer.adapters.hostgit import HostGit
from workspace_realizer.adapters.moves_bus import BusMoves
from workspace_realizer.adapters.supervisor_bus import supervisor_stopper
from workspace_realizer.adapters.worktree_pool import WorktreePool
from workspace_realizer.application import WorkspaceRealizerApplication
from workspace_realizer.endpoints.host.audit import AuditEndpoints
from workspace_realizer.endpoints.host.drains import DrainEndpoints
from workspace_realizer.endpoints.host.project_sources import ProjectSourceEndpoints
from workspace_realizer.endpoints.host.workspace_reads import WorkspaceReadEndpoints
from workspace_realizer.endpoints.host.workspaces import WorkspaceEndpoints
from workspace_realizer.endpoints.issues import IssueEndpoints
from workspace_realizer.endpoints.project_workspaces import ProjectWorkspaceEndpoints
from workspace_realizer.endpoints.projects import ProjectEndpoints
from workspace_realizer.inbox import controller_inbox, gateway_inbox
from workspace_realizer.orchestration.clone import InProcessCheckouts
from workspace_realizer.orchestration.context import Realizer
from workspace_realizer.orchestration.host_lease import host_lease, take_host_lease
from workspace_realizer.orchestration.reaper import ReaperWork
from workspace_realizer.orchestration.recovery import (
    fail_interrupted_archives,
    fail_interrupted_steps,
)
from workspace_realizer.publishing import to_contract
from workspace_realizer.settings import SERVICE_NAME, RealizerSettings, load_realizer_settings

if TYPE_CHECKING:
    from servicekit.routes import BusEndpoints

__all__ = [
    "build_spec",
    "bus_ports",
    "company_endpoints",
    "host_endpoints",
    "main",
    "make_register",
    "recovering",
]

Register = Callable[[ServiceRuntime], Awaitable[None]]

log = logging.getLogger(__name__)


def recovering(register: Register, settings: RealizerSettings | None = None) -> Register:
    """Wrap a ``register`` hook: first fail the archives a previous process left ``closing``
    and the host steps it left ``running`` (none can be running yet in this one), then register the endpoints and the reaper.
    Only a process serving both parts does here (``settings``: None serves both); a host part
    beside company-wide replicas does under its node's lease (:func:`take_host_lease`)."""

    async def hook(runtime: ServiceRuntime) -> None:
        if settings is None or settings.part == "both":
            app: WorkspaceRealizerApplication = runtime.app  # type: ignore[assignment]
            await runtime.store(
                fail_interrupted_archives, app, SERVICE_NAME, runtime.settings.node_id
            )
            await runtime.store(fail_interrupted_steps, app, SERVICE_NAME, runtime.settings.node_id)
        await register(runtime)

    return hook


def bus_ports(runtime: ServiceRuntime, settings: RealizerSettings | None = None) -> HostPorts:
    """The real host ports: the host's git adapter (with the worktree pool ``settings`` ask
    for); commands run contained by this node's runtime-supervisor; git credentials and
    pull-request facts asked of git-credentials, all over ``runtime.bus``."""
    host = default_ports(
        runtime.settings.home,
        pool_size=settings.pool_size if settings else 0,
        pool_refresh=settings.pool_refresh if settings else 60.0,
        pool_min_free_bytes=(settings.pool_min_free_mb if settings else 0) * 2**20,
    )
    commands = BusCommandRunner(runtime.bus, runtime.settings.node_id, os.environ)
    return replace(
        host,
        commands=commands,
        credentials=BusCredentials(runtime.bus),
        pull_requests=BusPullRequests(runtime.bus),
    )


def company_endpoints(runtime: ServiceRuntime) -> list[BusEndpoints]:
    """The company-wide part's endpoint classes (projects, project workspaces but for their
    creation and change, issues): the store and the bus, nothing of the host."""
    return [
        ProjectEndpoints(runtime),
        ProjectWorkspaceEndpoints(runtime),
        IssueEndpoints(runtime, BusAgentDirectory(runtime.bus)),
    ]


def host_endpoints(runtime: ServiceRuntime, realizer: Realizer) -> list[BusEndpoints]:
    """The host part's endpoint classes: project workspaces' creation and change (paths checked
    and repositories cloned on this node), execution workspaces and their operations."""
    return [
        ProjectSourceEndpoints(runtime, InProcessCheckouts(realizer)),
        WorkspaceEndpoints(runtime, realizer),
        WorkspaceReadEndpoints(runtime, realizer),
        DrainEndpoints(runtime, realizer),
        AuditEndpoints(runtime),
    ]


def make_register(settings: RealizerSettings, ports: HostPorts | None) -> Register:
    """The ``register`` hook of the realizer's ``ServiceSpec``: the endpoints of the parts
    ``settings.part`` names, and the reaper where the host part runs.

    Args:
        settings: The realizer's settings.
        ports: The host ports (tests pass fakes); None builds the real ones (:func:`bus_ports`)
            once the runtime, and so its bus, exists.
    """

    async def register(runtime: ServiceRuntime) -> None:
        groups = company_endpoints(runtime) if settings.serves_company else []
        if not settings.serves_host:
            await mount(runtime.service, *groups)
            return
        app: WorkspaceRealizerApplication = runtime.app  # type: ignore[assignment]
        realizer = Realizer(
            app=app,
            store=runtime.store,
            ports=ports if ports is not None else bus_ports(runtime, settings),
            home=runtime.settings.home,
            stop_services=supervisor_stopper(runtime),
            moves=BusMoves(runtime),
            node_id=runtime.settings.node_id,
            command_timeout=settings.command_timeout,
            reaper_cooldown=settings.reaper_cooldown,
            agents=BusAgentDirectory(runtime.bus),
        )
        reaper = ReaperWork(realizer, interval=settings.reaper_interval)
        if settings.serves_company:
            # One process serves both parts: the reaper runs under the service's lease.
            runtime.leadership.add("reaper", reaper)
        else:
            # A host part beside company-wide replicas: its node's lease first, then serve.
            leadership = host_lease(runtime)
            leadership.add("reaper", reaper)
            await take_host_lease(runtime, leadership)
        await _start_pool(runtime, realizer)
        await mount(runtime.service, *groups, *host_endpoints(runtime, realizer))

    return register


async def _start_pool(runtime: ServiceRuntime, realizer: Realizer) -> None:
    """Remove the pooled worktrees a previous host part left (it died), once this one holds the
    host's lease; remove this one's when the service stops."""
    git = realizer.ports.git
    if not isinstance(git, HostGit):
        return
    # With the pool off now, what one left while it was on is still removed.
    pool = git.pool or WorktreePool(
        git.git, home=runtime.settings.home, size=0, refresh=0, min_free_bytes=0
    )
    left = await pool.clean_leftovers()
    if left:
        log.info("removed %d pooled worktrees a previous realizer left", left)
    if git.pool is not None:
        runtime.exit_stack.push_async_callback(git.pool.close)


def build_spec(
    settings: RealizerSettings | None = None, ports: HostPorts | None = None
) -> ServiceSpec:
    """The workspace-realizer as ``run_service`` runs it; tests rebuild it with other parts
    (fake host ports, other settings). Without ``ports``, the register hook builds the real ones
    (the host's git and shell, git-credentials over the runtime's bus)."""
    settings = settings or load_realizer_settings()
    return ServiceSpec(
        token="realizer",
        name=SERVICE_NAME,
        version=__version__,
        application_class=WorkspaceRealizerApplication,
        to_contract=to_contract,
        register=recovering(make_register(settings, ports), settings),
        upstreams={"gateway": gateway_inbox, "controller": controller_inbox},
        description=__doc__ or SERVICE_NAME,
        metadata={"part": settings.part},
    )


async def main(env: Mapping[str, str] | None = None) -> None:
    """Run the workspace-realizer until SIGTERM or SIGINT."""
    settings = load_realizer_settings(env)
    await run_service(build_spec(settings), settings.service)
