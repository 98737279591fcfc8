"""``python -m api_gateway``: run the gateway on uvloop (the loop uvicorn itself prefers: its
HTTP parsing and socket work cost less there than on the standard loop)."""

from __future__ import annotations

import asyncio

import uvloop

from servicekit.lean_imports import leave_out_cli_modules

leave_out_cli_modules()

from api_gateway.app import main  # noqa: E402 (after the modules left out)

with asyncio.Runner(loop_factory=uvloop.new_event_loop) as runner:
    runner.run(main())
