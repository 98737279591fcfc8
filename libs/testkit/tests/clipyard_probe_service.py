"""A minimal service for the testkit's own tests (run as ``python -m clipyard_probe_service``).

It follows the services' lifecycle: connect to ``CLIPYARD_NATS_URL``, serve a micro service named
``clipyard-probe`` (so ``$SRV.PING.clipyard-probe`` answers) with an echo endpoint, write
``<CLIPYARD_HOME>/probe.pid``, and on SIGTERM stop, drain and exit 0. Switches for failure cases:
``PROBE_CRASH_AT_START=1`` exits 3 at once, ``PROBE_IGNORE_SIGTERM=1`` ignores SIGTERM,
``PROBE_EXIT_CODE=<n>`` exits with ``n`` after SIGTERM.
"""

from __future__ import annotations

import asyncio
import os
import signal
import sys
from pathlib import Path

import nats
from nats.micro import add_service
from nats.micro.request import Request


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
    service = await add_service(nc, name="clipyard-probe", version="0.1.0")

    async def echo(request: Request) -> None:
        await request.respond(request.data)

    await service.add_endpoint(name="echo", subject="probe.echo", handler=echo)
    (Path(os.environ["CLIPYARD_HOME"]) / "probe.pid").write_text(str(os.getpid()))
    print("probe: ready", flush=True)
    await quit_event.wait()
    await service.stop()
    await nc.drain()
    print("probe: stopped", flush=True)
    return int(os.environ.get("PROBE_EXIT_CODE", "0"))


if __name__ == "__main__":
    sys.exit(asyncio.run(main()))
