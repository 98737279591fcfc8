"""Entry point: `python -m workspace_realizer`."""

import asyncio

from servicekit.lean_imports import leave_out_cli_modules

leave_out_cli_modules()

from workspace_realizer.app import main  # noqa: E402 (after the modules left out)

asyncio.run(main())
