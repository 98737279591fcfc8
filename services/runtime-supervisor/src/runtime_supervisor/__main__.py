"""Entry point: `python -m runtime_supervisor`."""

import asyncio

from servicekit.lean_imports import leave_out_cli_modules

leave_out_cli_modules()

from runtime_supervisor.app import main  # noqa: E402 (after the modules left out)

asyncio.run(main())
