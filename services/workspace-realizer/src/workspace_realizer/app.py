"""Composition root and lifecycle of the workspace-realizer."""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Mapping

from servicekit import ServiceRuntime, ServiceSpec, run_service
from workspace_realizer import __version__
from workspace_realizer.application import WorkspaceRealizerApplication
from workspace_realizer.handlers import (
    controller_inbox,
    gateway_inbox,
    make_register,
)
from workspace_realizer.host import HostPorts
from workspace_realizer.publishing import to_contract
from workspace_realizer.recovery import fail_interrupted_archives
from workspace_realizer.settings import SERVICE_NAME, RealizerSettings, load_realizer_settings

__all__ = ["build_spec", "main", "recovering"]

Register = Callable[[ServiceRuntime], Awaitable[None]]


def recovering(register: Register) -> Register:
    """Wrap a ``register`` hook: first fail the archives a previous process left ``closing``
    (no archive can be running yet in this one), then register the endpoints and the reaper."""

    async def hook(runtime: ServiceRuntime) -> None:
        app: WorkspaceRealizerApplication = runtime.app  # type: ignore[assignment]
        await runtime.store(fail_interrupted_archives, app, SERVICE_NAME)
        await register(runtime)

    return hook


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
        register=recovering(make_register(settings, ports)),
        upstreams={"gateway": gateway_inbox, "controller": controller_inbox},
        description=__doc__ or SERVICE_NAME,
    )


async def main(env: Mapping[str, str] | None = None) -> None:
    """Run the workspace-realizer until SIGTERM or SIGINT."""
    settings = load_realizer_settings(env)
    await run_service(build_spec(settings), settings.service)
