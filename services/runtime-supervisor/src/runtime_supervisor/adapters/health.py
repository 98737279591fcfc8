"""Health probes of running instances, on detail reads (reference §3.2 "health refresh"): the
process is still the recorded one, and its port (if any) accepts a connection on loopback."""

from __future__ import annotations

import asyncio
import contextlib
from typing import TYPE_CHECKING

from runtime_supervisor.adapters.process import alive
from runtime_supervisor.domain.environment import SERVICE_HOST

if TYPE_CHECKING:
    from runtime_supervisor.domain import ServiceRecord
    from runtime_supervisor.orchestration.context import Supervisor

__all__ = ["PROBE_TIMEOUT", "probe", "probe_running"]

PROBE_TIMEOUT = 1.0


async def probe(record: ServiceRecord) -> str:
    """``healthy`` or ``unhealthy``: one look at the process and its port."""
    known = record.pid is not None and record.pgid is not None and record.process_start_time
    if known and not alive(record.pid, record.process_start_time, record.pgid):  # type: ignore[arg-type]
        return "unhealthy"
    if record.port is None:
        return "healthy"
    try:
        _reader, writer = await asyncio.wait_for(
            asyncio.open_connection(SERVICE_HOST, record.port), PROBE_TIMEOUT
        )
    except (OSError, TimeoutError):
        return "unhealthy"
    writer.close()
    with contextlib.suppress(OSError):
        await writer.wait_closed()
    return "healthy"


async def probe_running(sup: Supervisor, records: list[ServiceRecord]) -> None:
    """Probe every ``running`` instance once, in parallel, and record each verdict."""
    running = [r for r in records if r.status == "running"]
    verdicts = await asyncio.gather(*(probe(r) for r in running))
    for record, verdict in zip(running, verdicts, strict=True):
        if verdict != record.health_status:
            await sup.store(sup.app.set_health, record.id, verdict)
