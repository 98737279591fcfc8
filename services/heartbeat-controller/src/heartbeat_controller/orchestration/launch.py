"""The ``LaunchAdapter`` of a run: its slot, its adapter's config, and the environment (a
``process`` adapter) or the context (an ``http`` adapter) that carry the run token. The command
holds the clear token: it goes to the supervisor and nowhere else."""

from __future__ import annotations

from typing import TYPE_CHECKING

from contracts.agents import HttpAdapterConfig
from contracts.slots import LaunchAdapter
from heartbeat_controller.orchestration.env import RunIdentity, adapter_context, adapter_env

if TYPE_CHECKING:
    from contracts.slots import SlotGrant
    from heartbeat_controller.orchestration.work import RunWork

__all__ = ["launch_command"]


def launch_command(work: RunWork, grant: SlotGrant, token: str, *, api_url: str) -> LaunchAdapter:
    """The command launching ``work``'s adapter in ``grant``'s slot with the run ``token``."""
    identity = RunIdentity(
        api_url=api_url,
        run_id=work.run_id,
        agent_id=work.agent_id,
        company_id=work.company_id,
        issue_id=work.issue_id,
        workspace_id=work.workspace_id,
        wake_reason=work.wake_reason,
        payload=work.payload,
    )
    config = work.config
    if isinstance(config, HttpAdapterConfig):  # adapterType http
        return LaunchAdapter(
            principal=work.principal,
            slot_id=grant.slot_id,
            run_id=work.run_id,
            agent_id=work.agent_id,
            issue_id=work.issue_id,
            workspace_id=work.workspace_id,
            adapter_type=work.adapter_type,
            timeout_sec=work.timeout_sec,
            trusted=work.trusted,
            url=config.url,
            headers=dict(config.headers),
            context=dict(adapter_context(identity, token)),
        )
    if config is None:
        raise ValueError(f"run {work.run_id} has no adapter config to launch with")
    return LaunchAdapter(
        principal=work.principal,
        slot_id=grant.slot_id,
        run_id=work.run_id,
        agent_id=work.agent_id,
        issue_id=work.issue_id,
        workspace_id=work.workspace_id,
        adapter_type=work.adapter_type,
        timeout_sec=work.timeout_sec,
        trusted=work.trusted,
        command=list(config.command),
        limits=config.limits,
        egress_allowlist=list(config.egress_allowlist),
        env=adapter_env(identity, token, config.env),
    )
