"""``python -m clipyard_cli``: the same as the ``clipyard`` command."""

from __future__ import annotations

import sys

from clipyard_cli.main import main

sys.exit(main())
