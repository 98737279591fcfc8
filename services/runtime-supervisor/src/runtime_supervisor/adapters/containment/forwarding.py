"""Shared services of a project workspace forwarded into its workspaces' network namespaces
(docs/design/isolation.md): an agent reaches its project's dev server on loopback. A failed
forward is logged; the launch goes on without it."""

from __future__ import annotations

import asyncio
import logging
from typing import TYPE_CHECKING

from runtime_supervisor.adapters.containment.netns import NETNS_DIR, namespace_name
from runtime_supervisor.adapters.containment.relays import ensure_forward

if TYPE_CHECKING:
    from pathlib import Path

    from runtime_supervisor.orchestration.context import Supervisor

__all__ = ["forward_new_shared", "forward_shared"]

log = logging.getLogger(__name__)


async def forward_shared(sup: Supervisor, project_workspace_id: str, netns: Path) -> None:
    """Forward the live shared services of a project workspace into namespace ``netns``
    (a failed forward is logged: the launch goes on without it)."""
    launcher = sup.launcher
    if launcher is None:
        return
    ports: list[int] = await sup.store(_shared_ports, sup, project_workspace_id)
    if not ports:
        return

    def forward() -> None:
        source = launcher.namespace(project_workspace_id)
        if source == netns:
            return
        for port in ports:
            try:
                ensure_forward(sup.settings.home, netns.name, netns, port, source)
            except OSError as exc:
                log.error("shared port %d not forwarded into %s: %s", port, netns.name, exc)

    await asyncio.to_thread(forward)


async def forward_new_shared(sup: Supervisor, project_workspace_id: str, port: int) -> None:
    """A shared service started on ``port``: forward it into the namespace of every workspace
    of its project workspace that has one already (later ones get it at their next launch)."""
    launcher = sup.launcher
    if launcher is None or launcher.identities is None:
        return
    keys: list[str] = await sup.store(_workspaces_of, sup, project_workspace_id)
    stack = launcher.identities.stack

    def forward() -> None:
        source = launcher.namespace(project_workspace_id)
        for key in keys:
            path = NETNS_DIR / namespace_name(stack, key)
            if path.exists() and path != source:
                try:
                    ensure_forward(sup.settings.home, path.name, path, port, source)
                except OSError as exc:
                    log.error("shared port %d not forwarded into %s: %s", port, path.name, exc)

    await asyncio.to_thread(forward)


def _workspaces_of(sup: Supervisor, project_workspace_id: str) -> list[str]:
    return [
        key
        for key, copy in sup.app.copies["workspace"].items()
        if copy.fields.get("project_workspace_id") == project_workspace_id
    ]


def _shared_ports(sup: Supervisor, project_workspace_id: str) -> list[int]:
    return sorted(
        r.port
        for r in sup.app.live_services()
        if r.scope_type == "project_workspace"
        and r.scope_id == project_workspace_id
        and r.port is not None
    )
