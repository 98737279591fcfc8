"""A minimal service for the testkit's own tests (run as ``python -m clipyard_probe_service``).

It follows the services' lifecycle: connect to ``CLIPYARD_NATS_URL``, set up a micro service named
``clipyard-probe`` with an echo endpoint, write ``<CLIPYARD_HOME>/probe.pid`` (atomically), and only
then answer ``$SRV.PING.clipyard-probe`` (so a probe found ready has all of these); on SIGTERM stop,
drain and exit 0. Switches for failure cases: ``PROBE_CRASH_AT_START=1`` exits 3 at once,
``PROBE_IGNORE_SIGTERM=1`` ignores SIGTERM, ``PROBE_EXIT_CODE=<n>`` exits with ``n`` after SIGTERM.
"""

from __future__ import annotations

import asyncio
import os
import signal
import sys
from pathlib import Path

import nats
from nats.micro.request import Request
from nats.micro.service import Service, ServiceConfig


async def main() -> int:
    if os.environ.get("PROBE_CRASH_AT_START") == "1":
        print("probe: crashing at start as asked", file=sys.stderr)
        return 3
    quit_event = asyncio.Event()
    loop = asyncio.get_running_loop()
    if os.environ.get("PROBE_IGNORE_SIGTERM") == "1":
        signal.signal(signal.SIGTERM, signal.SIG_IGN)
    else:
        loop.add_signal_handler(signal.SIGTERM, quit_event.set)
    nc = await nats.connect(
        os.environ["CLIPYARD_NATS_URL"],
        name="clipyard-probe",
        user=os.environ.get("CLIPYARD_NATS_USER") or None,
        password=os.environ.get("CLIPYARD_NATS_PASSWORD") or None,
    )
    # Everything a test checks once the probe is ready is in place before the ping is answered.
    service = Service(nc, ServiceConfig(name="clipyard-probe", version="0.1.0"))

    async def echo(request: Request) -> None:
        await request.respond(request.data)

    await service.add_endpoint(name="echo", subject="probe.echo", handler=echo)
    # Written whole or not at all (a readiness check may look for the file at any moment).
    pid_file = Path(os.environ["CLIPYARD_HOME"]) / "probe.pid"
    partial = pid_file.with_name(pid_file.name + ".partial")
    partial.write_text(str(os.getpid()))
    partial.replace(pid_file)
    print("probe: ready", flush=True)
    await service.start()  # answers $SRV.PING.clipyard-probe from now on
    await quit_event.wait()
    await service.stop()
    await nc.drain()
    print("probe: stopped", flush=True)
    return int(os.environ.get("PROBE_EXIT_CODE", "0"))


if __name__ == "__main__":
    sys.exit(asyncio.run(main()))
