"""Endpoints of runtime control and reads: ``ControlRuntime`` (long: answered in time or
``accepted``), ``EnsureRunServices`` (long), ``GetRuntimeState`` (health re-probed on request),
``ListRuntimeSummaries`` (many workspaces at once, never probed) and ``GetRuntimeServiceLog``.

Each endpoint asks the access model once, at its entry, for the kind-level rule (ARCHITECTURE
§5.1): control and ``EnsureRunServices`` are runtime services' *control*, the reads their *read*
(the admin key has neither; Clipyard itself has both). An agent key or run token reads the runtime
(state, service logs) of its own workspaces only: another company's is not found (404), another
workspace of its company refused (403), once the copies have had a moment to catch up with what
made it its own (``freshness.owned``); summaries leave out what is not its own
(``Lookups.owns_workspace``). It controls runtime services only while a run of its own holds the
workspace (``control.holding_run``): refused at once when the copies know its run and it does not
hold the workspace; a run they have not heard of yet is waited for."""

from __future__ import annotations

import asyncio
from functools import partial
from pathlib import Path
from typing import TYPE_CHECKING

from contracts.errors import DetailedError
from contracts.runtime_commands import (
    ControlRuntime,
    EnsureRunServices,
    GetRuntimeServiceLog,
    GetRuntimeState,
    ListRuntimeSummaries,
    RealizerFacts,
    RunServices,
    RuntimeControlResult,
    RuntimeServiceLog,
    RuntimeState,
    RuntimeSummaries,
)
from contracts.runtime_subjects import (
    RUNTIME_LOG,
    RUNTIME_STATE,
    RUNTIME_SUMMARIES,
    ensure_run_services,
    runtime_control,
)
from contracts.subjects import on_node
from runtime_supervisor.adapters.health import probe_running
from runtime_supervisor.adapters.process import LogSlice, read_range, tail_bytes, tail_lines
from runtime_supervisor.adapters.process.logs import MAX_READ
from runtime_supervisor.domain import InvalidInputError, NotFoundError, RuntimeTarget, ServiceRecord
from runtime_supervisor.endpoints.common import SupervisorEndpoints
from runtime_supervisor.orchestration.control import (
    early_holding_run,
    execute,
    holding_run,
    prepare,
)
from runtime_supervisor.orchestration.freshness import OWN_WAIT, fresh_target, owned, wait_for
from runtime_supervisor.orchestration.runs import ensure_run_services as ensure_for_run
from servicekit.access import Access, Action, Resource
from servicekit.node_routing import NodeUnreachableError
from servicekit.routes import Route

if TYPE_CHECKING:
    from collections.abc import Sequence

    from contracts.base import Accepted, ErrorReply, Ok
    from natsbus import RequestContext
    from runtime_supervisor.application import RuntimeSupervisorApplication

__all__ = ["RuntimeEndpoints", "read_log"]


def read_log(path: Path, tail: int | None, offset: int | None, length: int | None) -> LogSlice:
    """A slice of a service's log: ``tail`` lines, a byte range, else its last 64 KiB."""
    try:
        if tail is not None:
            if offset is not None or length is not None:
                raise ValueError("give tail (lines) or offset/length (bytes), not both")
            return tail_lines(path, tail)
        if offset is not None or length is not None:
            return read_range(path, offset or 0, length if length is not None else MAX_READ)
        return tail_bytes(path)
    except ValueError as exc:
        raise InvalidInputError(
            f"Cannot read that part of the log: {exc}.", field="range"
        ) from None


def _service_of(
    app: RuntimeSupervisorApplication, target: RuntimeTarget, service_id: str
) -> ServiceRecord:
    """On the store's thread: the instance ``service_id`` of ``target`` (its history too)."""
    for record in app.services_of(target, include_history=True):
        if record.id == service_id:
            return record
    raise NotFoundError(
        f"There is no runtime service {service_id} in this workspace.",
        runtimeServiceId=service_id,
    )


def _target_node(
    app: RuntimeSupervisorApplication,
    scope: str | None,
    workspace_id: str | None,
    project_workspace_id: str | None,
) -> str | None:
    """On the store's thread: the node of the target named (None: not known here; the checks
    that follow answer that)."""
    try:
        return app.target(scope, workspace_id, project_workspace_id).node_id
    except DetailedError:
        return None


def _label(workspace_id: str | None, project_workspace_id: str | None) -> str:
    if workspace_id is not None:
        return f"execution workspace {workspace_id}"
    return f"project workspace {project_workspace_id}"


class RuntimeEndpoints(SupervisorEndpoints):
    """The runtime control and read endpoints."""

    def routes(self) -> Sequence[Route]:
        node = self.node
        return (
            Route("runtime_control", runtime_control(node), self.control, ControlRuntime),
            Route(
                "runtime_ensure_for_run", ensure_run_services(node), self.ensure, EnsureRunServices
            ),
            Route("runtime_state", RUNTIME_STATE, self.state, GetRuntimeState),
            Route("runtime_state_here", on_node(RUNTIME_STATE, node), self.state, GetRuntimeState),
            Route("runtime_summaries", RUNTIME_SUMMARIES, self.summaries, ListRuntimeSummaries),
            Route("runtime_log", RUNTIME_LOG, self.log, GetRuntimeServiceLog),
            Route("runtime_log_here", on_node(RUNTIME_LOG, node), self.log, GetRuntimeServiceLog),
        )

    async def control(
        self, c: ControlRuntime, ctx: RequestContext
    ) -> RuntimeControlResult | Accepted | Ok | ErrorReply:
        sup, app = self.sup, self.app
        access = Access.of(c.principal)
        access.reach(Resource.RUNTIME_SERVICE, Action.CONTROL)
        scope = access.scope()
        where = {"workspace_id": c.workspace_id, "project_workspace_id": c.project_workspace_id}
        with self.acting(c.principal, f"runtime {c.action}"):
            known = None
            if access.is_agent:  # a known contradiction is refused at once, before any wait
                known = await sup.store(lambda: early_holding_run(app, c.principal, **where))
            # The caller read the workspace a moment ago: act on what it read. A stop of what runs
            # (everything, or a row) needs no configuration: it waits only for the workspace.
            if c.realizer_facts is not None:
                named = c.workspace_command_id is not None or c.service_index is not None
                facts = c.realizer_facts if c.action != "stop" or named else RealizerFacts()
                await fresh_target(sup, scope, facts=facts, wait=wait_for(ctx), **where)
            if access.is_agent and known is None:  # its run not heard of yet: wait for it
                await owned(
                    sup,
                    lambda: holding_run(app, c.principal, **where),
                    wait=wait_for(ctx, OWN_WAIT),
                )
            node = await sup.store(_target_node, app, scope, **where)
            moved = await self.on_its_node(node, runtime_control, c, ctx, _label(**where))
            if moved is not None:  # its processes run on another node: nothing is recorded here
                return moved
            plan = await prepare(sup, c)  # every refusal before any long work is recorded
            return await self.runtime.operations.run(
                f"runtime_{plan.selection.action}",
                lambda operation_id: execute(sup, plan, operation_id),
                ctx=ctx,
                principal=c.principal,
                company_id=plan.target.company_id,
                subject_id=plan.target.id,
            )

    async def ensure(
        self, c: EnsureRunServices, ctx: RequestContext
    ) -> RunServices | Accepted | Ok | ErrorReply:
        access = Access.of(c.principal)
        access.reach(Resource.RUNTIME_SERVICE, Action.CONTROL)
        with self.acting(c.principal, "run services", run_id=c.run_id):
            # Asked right after the realizer's answer: its workspace may not be copied here yet.
            target = await fresh_target(
                self.sup,
                access.scope(),
                workspace_id=c.workspace_id,
                facts=c.realizer_facts,
                wait=wait_for(ctx),
            )
            moved = await self.on_its_node(
                target.node_id, ensure_run_services, c, ctx, target.label
            )
            if moved is not None:
                return moved
            return await self.runtime.operations.run(
                "ensure_run_services",
                lambda operation_id: ensure_for_run(self.sup, c, operation_id),
                ctx=ctx,
                principal=c.principal,
                company_id=target.company_id,
                subject_id=c.workspace_id,
            )

    async def _readable(
        self, q: GetRuntimeState | GetRuntimeServiceLog, ctx: RequestContext, action: str
    ) -> RuntimeTarget:
        """The target ``q`` names, if the principal may read it: runtime services' *read*, the
        company (404), then, for an agent, a workspace of its own (403 once the copies had
        their moment to catch up, ``freshness.owned``)."""
        app = self.app
        access = Access.of(q.principal)
        access.reach(Resource.RUNTIME_SERVICE, Action.READ)
        scope = access.scope()

        def look() -> RuntimeTarget:
            target = app.target(scope, q.workspace_id, q.project_workspace_id)
            app.check_target(access, target, action)
            return target

        if not access.is_agent:  # a workspace another node's realizer made a moment ago
            found: RuntimeTarget = await self.runtime.store_fresh(look)
            return found
        return await owned(self.sup, look, wait=wait_for(ctx, OWN_WAIT))

    async def state(
        self, q: GetRuntimeState, ctx: RequestContext
    ) -> RuntimeState | Ok | Accepted | ErrorReply:
        target = await self._readable(q, ctx, "read")
        if q.probe_health:  # probed where its processes run; as recorded when it does not answer
            here = partial(on_node, RUNTIME_STATE)
            try:
                moved = await self.on_its_node(target.node_id, here, q, ctx, target.label)
            except NodeUnreachableError:
                recorded: RuntimeState = await self.sup.store(self.app.runtime_state, target)
                return recorded
            if moved is not None:
                return moved
            records = await self.sup.store(self.app.services_of, target)
            with self.acting(q.principal, "health probe"):
                await probe_running(self.sup, records)
        found: RuntimeState = await self.sup.store(self.app.runtime_state, target)
        return found

    async def summaries(self, q: ListRuntimeSummaries, ctx: RequestContext) -> RuntimeSummaries:
        app = self.app
        access = Access.of(q.principal)
        access.reach(Resource.RUNTIME_SERVICE, Action.READ)
        scope = access.scope()

        def own() -> RuntimeSummaries:
            mine = [w for w in q.workspace_ids if app.owns_workspace(access, w)]
            return app.runtime_summaries(scope, mine)

        found: RuntimeSummaries = await self.sup.store(own)
        return found

    async def log(
        self, q: GetRuntimeServiceLog, ctx: RequestContext
    ) -> RuntimeServiceLog | Ok | Accepted | ErrorReply:
        target = await self._readable(q, ctx, "read the logs of")
        here = partial(on_node, RUNTIME_LOG)
        moved = await self.on_its_node(target.node_id, here, q, ctx, target.label)
        if moved is not None:  # its log file is on that node
            return moved
        record: ServiceRecord = await self.sup.store(_service_of, self.app, target, q.service_id)
        if not record.run_dir:
            return RuntimeServiceLog(text="", offset=0, length=0, size=0)
        path = Path(record.run_dir) / "output.log"
        found = await asyncio.to_thread(read_log, path, q.tail, q.offset, q.length)
        return RuntimeServiceLog(
            text=found.text, offset=found.offset, length=found.length, size=found.size
        )
