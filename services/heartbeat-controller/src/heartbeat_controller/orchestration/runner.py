"""One task per claimed run: stages 2 to 6 of docs/design/heartbeat-runs.md "The run, stage by stage".

``claim_runnable`` already recorded stage 1's end (``RunStarted``, the lease of the issue's
current workspace, stage ``workspace_resolution``). The task then realizes the workspace and
ensures its services, acquires a slot and mints the run token, launches the adapter, waits for
its end (the inbox hands it over), and always cleans up: the slot released if one was granted,
then ``finish_run`` (workspace lease released, ``RunFinished`` last), which hands the workspace to
the next waiting run.

Cancel: before the launch the task stops at once: every wait before it (the realize, the
workspace lease, the services, each slot request and its backoff, the mint) is raced against the
cancel signal and abandoned; after it, ``KillAdapter`` and the end arrives ``killed``. The same
waits share one limit, ``prepare_timeout`` (``CLIPYARD_RUN_PREPARE_TIMEOUT``, 30 min): past it the
run ends ``failed`` with the error code of the stage it was stuck in and a message naming the
limit. The finish is retried until it is recorded. A task cancelled by a stop of the controller
does no cleanup: the next start's recovery does.

The clear run token lives only in local variables between the mint and ``LaunchAdapter``: it is
never logged, stored, or put in an exception or span.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Awaitable
from dataclasses import dataclass, field
from datetime import timedelta
from typing import TYPE_CHECKING, TypeVar

from contracts.execution_commands import RealizeWorkspace
from contracts.run_tokens import MintRunToken
from contracts.runtime_commands import EnsureRunServices, RealizerFacts, RunServices
from contracts.slots import AcquireSlot, SlotGrant
from eventstore.fence import StaleFenceError
from heartbeat_controller.domain.stage_detail import (
    LaunchDetail,
    SlotDetail,
    StageDetail,
    WorkspaceDetail,
)
from heartbeat_controller.orchestration.cleanup import cleanup
from heartbeat_controller.orchestration.collect import Outcome, collect_end
from heartbeat_controller.orchestration.launch import launch_command
from heartbeat_controller.orchestration.ports import PortError
from heartbeat_controller.orchestration.timers import slot_backoff, wait_event
from heartbeat_controller.orchestration.work import RunWork

if TYPE_CHECKING:
    from contracts.slots import AdapterLaunched
    from heartbeat_controller.orchestration.context import Orchestration

__all__ = ["RunCancelledError", "StageFailedError", "cleanup", "run_claim"]

log = logging.getLogger(__name__)
T = TypeVar("T")

_UNEXPECTED = {
    "workspace_resolution": "workspace_validation_failed",
    "slot_acquisition": "slot_unavailable",
    "adapter_launch": "adapter_launch_failed",
    "result_collection": "adapter_failed",
}
"""The error code of an unexpected failure, by the stage it happened in."""
_ENSURE_ATTEMPTS = 3


class StageFailedError(Exception):
    """A stage failed: the run ends with ``outcome``."""

    def __init__(self, outcome: Outcome) -> None:
        super().__init__(outcome.error or outcome.error_code or outcome.status)
        self.outcome = outcome


class RunCancelledError(Exception):
    """A cancel was requested: the run stops at this boundary."""


def _fail(code: str, message: str) -> StageFailedError:
    return StageFailedError(Outcome("failed", code, message))


@dataclass
class _Runner:
    orch: Orchestration
    work: RunWork
    _prepare_until: float = field(default=0.0, init=False)
    """Loop time by which the adapter must be launching (``prepare_timeout`` after the start)."""

    @property
    def run_id(self) -> str:
        return self.work.run_id

    async def run(self) -> None:
        loop = asyncio.get_running_loop()
        self._prepare_until = loop.time() + self.orch.settings.prepare_timeout
        try:
            outcome = await self._stages()
        except StageFailedError as failed:
            outcome = failed.outcome
        except RunCancelledError:
            outcome = Outcome("cancelled", "cancelled", "the run was cancelled")
        except StaleFenceError:
            # The lease moved on: the run is the new holder's now, which re-attached it. No
            # cleanup: releasing its slot would kill the adapter the new holder watches.
            log.warning("run %s left to the lease's new holder", self.run_id)
            return
        except Exception as error:  # a bug or an unexpected refusal: still clean up
            code = _UNEXPECTED.get(self.work.stage, "adapter_failed")
            log.error(
                "run %s failed unexpectedly in %s",
                self.run_id,
                self.work.stage,
                exc_info=error,
                extra={"run_id": self.run_id},
            )
            outcome = Outcome("failed", code, f"{type(error).__name__} in {self.work.stage}")
        await cleanup(self.orch, self.work, outcome)

    def _boundary(self) -> None:
        if self.work.channel.cancel.is_set():
            raise RunCancelledError

    def _too_long(self, waiting_for: str, code: str) -> StageFailedError:
        limit = self.orch.settings.prepare_timeout
        return _fail(
            code,
            f"the run was not ready to launch its adapter within {limit:g} s "
            f"(CLIPYARD_RUN_PREPARE_TIMEOUT): still waiting for {waiting_for}",
        )

    def _prepare_left(self) -> float:
        return max(self._prepare_until - asyncio.get_running_loop().time(), 0.0)

    async def _guarded(self, step: Awaitable[T], waiting_for: str, code: str) -> T:
        """``step`` raced against the run's cancel and the preparation limit, as the
        workspace lease is waited for: a cancel stops the run at once (``RunCancelledError``),
        the limit fails it with ``code``; either way ``step`` is abandoned (cancelled here)."""
        task = asyncio.ensure_future(step)
        cancel = asyncio.ensure_future(self.work.channel.cancel.wait())
        try:
            done, _ = await asyncio.wait(
                {task, cancel}, timeout=self._prepare_left(), return_when=asyncio.FIRST_COMPLETED
            )
        finally:
            cancel.cancel()
            if not task.done():
                task.cancel()
        if task in done:
            return task.result()
        self._boundary()
        raise self._too_long(waiting_for, code)

    async def _stage(self, stage: str, detail: StageDetail | None = None) -> None:
        self._boundary()
        await self.orch.store(self.orch.app.record_stage, self.run_id, stage, detail)
        self.work.stage = stage

    async def _stages(self) -> Outcome:
        w = self.work
        if w.issue_id is not None:
            await self._resolve_workspace()
        grant = await self._acquire_slot()
        await self._stage(
            "adapter_launch",
            SlotDetail(
                slot_id=grant.slot_id,
                slot_type=grant.type,
                contained=grant.contained,
                sandbox=grant.sandbox,
            ),
        )
        launched = await self._mint_and_launch(grant)
        await self.orch.store(self.orch.app.record_launch, self.run_id, launched)
        w.launched = True
        detail = LaunchDetail(
            pid=launched.pid, pgid=launched.pgid, deadline=launched.deadline.isoformat()
        )
        await self.orch.store(self.orch.app.record_stage, self.run_id, "result_collection", detail)
        w.stage = "result_collection"
        return await collect_end(self.orch, w, launched.deadline)

    async def _resolve_workspace(self) -> None:
        w, orch = self.work, self.orch
        self._boundary()
        assert w.issue_id is not None
        command = RealizeWorkspace(
            principal=w.principal,
            issue_id=w.issue_id,
            agent_id=w.agent_id,
            require_isolation=not w.trusted,
        )
        try:
            realized = await self._guarded(
                orch.ports.realizer.realize(command), "the workspace", "workspace_validation_failed"
            )
        except PortError as refused:
            if refused.code in ("low_trust_violation", "node_unreachable"):
                raise _fail(refused.code, refused.message) from None
            raise _fail("workspace_validation_failed", refused.message) from None
        workspace_id = realized.workspace.id
        w.node = realized.workspace.node_id
        self._boundary()
        # Listen before asking: the lease may be handed over as soon as the store answers.
        held = await orch.store(orch.app.lease_workspace, self.run_id, workspace_id)
        w.workspace_id = workspace_id
        if held == "waiting" and not w.channel.lease.is_set():
            await self._guarded(
                w.channel.lease.wait(),
                f"workspace {workspace_id}, held by another run",
                "workspace_validation_failed",
            )
        self._boundary()
        # The supervisor waits until its copies say what the realizer answered (its events may
        # still be on their way), so the run's services start from this configuration.
        facts = RealizerFacts(
            workspace_config=realized.workspace.config,
            lifecycle_generation=realized.workspace.lifecycle_generation,
        )
        ensure = EnsureRunServices(
            principal=w.principal,
            workspace_id=workspace_id,
            run_id=self.run_id,
            agent_id=w.agent_id,
            issue_id=w.issue_id,
            realizer_facts=facts,
        )
        services = await self._ensure_services(ensure)
        w.services = [s.id for s in services.runtime_services]
        w.realized_detail = WorkspaceDetail(
            workspace_id=workspace_id, created=realized.created, services=w.services
        )

    async def _ensure_services(self, command: EnsureRunServices) -> RunServices:
        """Ask the supervisor for the run's services; a ``service_unavailable`` (restarting, or
        its copies still behind the realizer) is asked again, twice, a second apart."""
        for attempt in range(_ENSURE_ATTEMPTS):
            ensure = self.orch.ports.supervisor.ensure_run_services(command, self.work.node)
            try:
                return await self._guarded(
                    ensure, "the workspace's runtime services", "runtime_services_failed"
                )
            except PortError as failed:
                if failed.code == "node_unreachable":
                    raise _fail("node_unreachable", failed.message) from None
                if failed.code != "service_unavailable" or attempt + 1 == _ENSURE_ATTEMPTS:
                    raise _fail("runtime_services_failed", failed.message) from None
            if await wait_event(self.work.channel.cancel, 1.0):
                raise RunCancelledError
            self._boundary()
        raise AssertionError("unreachable")

    async def _acquire_slot(self) -> SlotGrant:
        w, orch = self.work, self.orch
        await self._stage("slot_acquisition", w.realized_detail)
        command = AcquireSlot(
            principal=w.principal,
            run_id=self.run_id,
            agent_id=w.agent_id,
            adapter_type=w.adapter_type,
            trusted=w.trusted,
        )
        attempt = 0
        while True:
            self._boundary()
            try:
                grant = await self._guarded(
                    orch.ports.supervisor.acquire_slot(command, w.node),
                    "an adapter slot",
                    "slot_unavailable",
                )
                break
            except PortError as refused:
                if refused.code != "slot_unavailable":
                    raise _fail("slot_unavailable", refused.message) from None
            except (RunCancelledError, StageFailedError):
                w.slot_granted = True  # abandoned in flight: a slot may be granted; release it
                raise
            s = orch.settings
            delay = slot_backoff(min(attempt, 30), s.slot_retry_initial, s.slot_retry_max)
            attempt += 1
            if await wait_event(w.channel.cancel, min(delay, self._prepare_left())):
                raise RunCancelledError
            if self._prepare_left() <= 0:
                raise self._too_long("an adapter slot (the pool stayed full)", "slot_unavailable")
        await orch.store(orch.app.record_slot, self.run_id, grant)
        w.slot_granted = True
        return grant

    async def _mint_and_launch(self, grant: SlotGrant) -> AdapterLaunched:
        """Mint the token and launch; the token stays in this frame only."""
        w, orch = self.work, self.orch
        expires = orch.settings.clock() + timedelta(seconds=w.timeout_sec)
        mint = MintRunToken(
            principal=w.principal,
            run_id=self.run_id,
            agent_id=w.agent_id,
            issue_id=w.issue_id,
            workspace_id=w.workspace_id,
            expires_at=expires,
        )
        try:
            issued = await self._guarded(
                orch.ports.gateway.mint_run_token(mint), "the run token", "run_token_unavailable"
            )
        except PortError as refused:
            raise _fail("run_token_unavailable", refused.message) from None
        self._boundary()  # a cancel here drops the token; the gateway revokes it at the finish
        try:
            command = launch_command(w, grant, issued.token, api_url=orch.settings.api_url)
        finally:
            del issued
        try:
            return await orch.ports.supervisor.launch_adapter(command, w.node)
        except PortError as refused:
            raise _fail("adapter_launch_failed", refused.message) from None
        except Exception as error:  # never let the command (and its token) reach a traceback
            raise _fail("adapter_launch_failed", type(error).__name__) from None
        finally:
            del command


async def run_claim(orch: Orchestration, work: RunWork) -> None:
    """Drive one claimed run through stages 2-6 (the task's body)."""
    await _Runner(orch, work).run()
