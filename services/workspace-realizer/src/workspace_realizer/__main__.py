"""Entry point: `python -m workspace_realizer`."""

import asyncio

from workspace_realizer.app import main

asyncio.run(main())
