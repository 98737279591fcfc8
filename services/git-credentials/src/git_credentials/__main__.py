"""Entry point: `python -m git_credentials`."""

import asyncio

from git_credentials.app import main

asyncio.run(main())
