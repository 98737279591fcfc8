"""Entry point: `python -m heartbeat_controller`."""

import asyncio

from servicekit.lean_imports import leave_out_cli_modules

leave_out_cli_modules()

from heartbeat_controller.app import main  # noqa: E402 (after the modules left out)

asyncio.run(main())
