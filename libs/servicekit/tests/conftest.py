"""The servicekit tests' own helper modules (``service_under_test``) on the import path."""

from __future__ import annotations

import sys
from pathlib import Path

TESTS_DIR = Path(__file__).parent
if str(TESTS_DIR) not in sys.path:
    sys.path.insert(0, str(TESTS_DIR))
