"""Composition root and lifecycle of the runtime-supervisor."""

from __future__ import annotations

from collections.abc import Mapping

from runtime_supervisor import __version__
from runtime_supervisor.application import RuntimeSupervisorApplication
from runtime_supervisor.handlers import make_register
from runtime_supervisor.inbox import (
    RunFinishedHandOver,
    controller_inbox,
    gateway_inbox,
    realizer_inbox,
)
from runtime_supervisor.publishing import to_contract
from runtime_supervisor.settings import (
    SERVICE_NAME,
    SupervisorSettings,
    load_supervisor_settings,
)
from servicekit import ServiceSpec, run_service

__all__ = ["build_spec", "main"]


def build_spec(settings: SupervisorSettings | None = None) -> ServiceSpec:
    """The runtime-supervisor as ``run_service`` runs it; tests rebuild it with other settings."""
    settings = settings or load_supervisor_settings()
    run_finished = RunFinishedHandOver("the runtime-supervisor's orchestration")
    return ServiceSpec(
        token="supervisor",
        name=SERVICE_NAME,
        version=__version__,
        application_class=RuntimeSupervisorApplication,
        to_contract=to_contract,
        register=make_register(settings, run_finished),
        upstreams={
            "realizer": realizer_inbox,
            "controller": controller_inbox(run_finished),
            "gateway": gateway_inbox,
        },
        description=__doc__ or SERVICE_NAME,
    )


async def main(env: Mapping[str, str] | None = None) -> None:
    """Run the runtime-supervisor until SIGTERM or SIGINT."""
    settings = load_supervisor_settings(env)
    await run_service(build_spec(settings), settings.service)
