"""Entry point: `python -m git_credentials`."""

import asyncio

from servicekit.lean_imports import leave_out_cli_modules

leave_out_cli_modules()

from git_credentials.app import main  # noqa: E402 (after the modules left out)

asyncio.run(main())
