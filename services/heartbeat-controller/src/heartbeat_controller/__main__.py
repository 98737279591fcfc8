"""Entry point: `python -m heartbeat_controller`."""

import asyncio

from heartbeat_controller.app import main

asyncio.run(main())
