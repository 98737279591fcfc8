"""``python -m api_gateway``: run the gateway."""

from __future__ import annotations

import asyncio

from api_gateway.app import main

asyncio.run(main())
