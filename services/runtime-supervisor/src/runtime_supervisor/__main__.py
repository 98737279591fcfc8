"""Entry point: `python -m runtime_supervisor`."""

import asyncio

from runtime_supervisor.app import main

asyncio.run(main())
