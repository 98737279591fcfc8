"""NATS endpoints and subscriptions of the workspace-realizer: each endpoint decodes, calls the
application (or an orchestrator for host work), and answers with a contract view.

Also here: the gateway inbox (companies' issue prefixes), the controller inbox (which runs hold
each workspace, which company each agent belongs to), the supervisor request of the archive saga,
and the terminal reaper's periodic task.
"""

from __future__ import annotations

import asyncio
import os
from collections.abc import Awaitable, Callable
from dataclasses import replace
from typing import TYPE_CHECKING, Any

import msgspec

import contracts.workspace_subjects as subjects
from contracts.base import Accepted, Actor, ErrorReply, Ok, Principal
from contracts.execution_commands import (
    StopWorkspaceRuntimeServices,
    StopWorkspaceRuntimeServicesResult,
)
from contracts.gateway import CompanyCreated, CompanyHostAccessChanged
from workspace_realizer.adapters.agents_bus import BusAgentDirectory
from workspace_realizer.adapters.contained_bus import BusCommandRunner
from workspace_realizer.adapters.credentials_bus import BusCredentials, BusPullRequests
from workspace_realizer.context import Realizer
from workspace_realizer.endpoints.audit import register_audit
from workspace_realizer.endpoints.catalog import register_catalog
from workspace_realizer.endpoints.common import Endpoints
from workspace_realizer.endpoints.issues import register_issues
from workspace_realizer.endpoints.workspaces import register_workspaces
from workspace_realizer.host import default_ports
from workspace_realizer.reaper import run_reaper
from workspace_realizer.settings import SERVICE_NAME
from workspace_realizer.usecases.agents import AGENT_EVENTS

if TYPE_CHECKING:
    from eventsourcing.persistence import Tracking

    from servicekit import ServiceRuntime
    from workspace_realizer.application import WorkspaceRealizerApplication
    from workspace_realizer.host import HostPorts
    from workspace_realizer.settings import RealizerSettings

__all__ = [
    "StopServicesError",
    "bus_ports",
    "controller_inbox",
    "gateway_inbox",
    "make_register",
    "supervisor_stopper",
]

STOP_TIMEOUT = 60.0
"""Seconds the archive saga waits for the supervisor to stop a workspace's services."""


class StopServicesError(RuntimeError):
    """The supervisor did not confirm that the workspace's runtime services are stopped."""


def gateway_inbox(app: WorkspaceRealizerApplication, event: Any, tracking: Tracking) -> None:
    """The handler of the gateway's events: keep each company's issue prefix and host access."""
    if isinstance(event, CompanyCreated) and event.company_id:
        app.register_company(event.company_id, event.name, event.issue_prefix, tracking)
    elif isinstance(event, CompanyHostAccessChanged) and event.company_id:
        app.register_host_access(
            event.company_id, event.host_trusted, list(event.allowed_roots), tracking
        )


def controller_inbox(app: WorkspaceRealizerApplication, event: Any, tracking: Tracking) -> None:
    """The handler of the heartbeat-controller's events: ``run.workspace_leased`` makes the
    workspace ``active``; ``run.workspace_released`` and ``run.finished`` let it go ``idle`` (or
    ``in_review``) once no run holds it; ``agent.created`` and ``agent.deleted`` keep the copy of
    each agent's company (for ``assigneeAgentId``). Every other event only advances the inbox."""
    if isinstance(event, AGENT_EVENTS):
        app.note_agent_event(event, tracking)
    else:
        app.note_run_event(event, tracking)


def supervisor_stopper(runtime: ServiceRuntime) -> Callable[[str, str, int], Awaitable[int]]:
    """Ask the supervisor of this node to stop a workspace's runtime services (a real request:
    ``ws.cmd.runtime_service.stop_workspace.<node>``); return how many it stopped."""
    subject = subjects.stop_workspace_runtime_services(runtime.settings.node_id)

    async def stop(company_id: str, workspace_id: str, generation: int) -> int:
        principal = Principal(company_id=company_id, actor=Actor(type="system", id=SERVICE_NAME))
        request = StopWorkspaceRuntimeServices(
            principal=principal, workspace_id=workspace_id, lifecycle_generation=generation
        )
        reply = await runtime.bus.request(subject, request, timeout=STOP_TIMEOUT)
        if isinstance(reply, ErrorReply):
            raise StopServicesError(
                f"the runtime supervisor answered {reply.code}: {reply.message}"
            )
        if isinstance(reply, Accepted):
            raise StopServicesError(
                "the runtime supervisor is still stopping them; retry the archive"
            )
        assert isinstance(reply, Ok)
        result: StopWorkspaceRuntimeServicesResult = msgspec.convert(
            reply.result, StopWorkspaceRuntimeServicesResult
        )
        if result.failed:
            raise StopServicesError(f"still running: {', '.join(result.failed)}")
        stopped: int = result.stopped
        return stopped

    return stop


def bus_ports(runtime: ServiceRuntime) -> HostPorts:
    """The real host ports: the host's git adapter; commands run contained by this node's
    runtime-supervisor; git credentials and pull-request facts asked of git-credentials, all
    over ``runtime.bus``."""
    host = default_ports(runtime.settings.home)
    commands = BusCommandRunner(runtime.bus, runtime.settings.node_id, os.environ)
    return replace(
        host,
        commands=commands,
        credentials=BusCredentials(runtime.bus),
        pull_requests=BusPullRequests(runtime.bus),
    )


def make_register(
    settings: RealizerSettings, ports: HostPorts | None
) -> Callable[[ServiceRuntime], Awaitable[None]]:
    """The ``register`` hook of the realizer's ``ServiceSpec``.

    Args:
        settings: The realizer's settings.
        ports: The host ports (tests pass fakes); None builds the real ones (:func:`bus_ports`)
            once the runtime, and so its bus, exists.
    """

    async def register(runtime: ServiceRuntime) -> None:
        app: WorkspaceRealizerApplication = runtime.app  # type: ignore[assignment]
        realizer = Realizer(
            app=app,
            store=runtime.store,
            ports=ports if ports is not None else bus_ports(runtime),
            home=runtime.settings.home,
            stop_services=supervisor_stopper(runtime),
            node_id=runtime.settings.node_id,
            command_timeout=settings.command_timeout,
            reaper_cooldown=settings.reaper_cooldown,
            agents=BusAgentDirectory(runtime.bus),
        )
        endpoints = Endpoints(runtime, realizer)
        for group in (register_catalog, register_issues, register_workspaces, register_audit):
            await group(endpoints)
        stop = asyncio.Event()
        task = asyncio.create_task(
            run_reaper(realizer, interval=settings.reaper_interval, stop=stop)
        )

        async def stop_reaper() -> None:
            stop.set()
            await asyncio.wait({task}, timeout=2.0)
            task.cancel()

        runtime.exit_stack.push_async_callback(stop_reaper)

    return register
