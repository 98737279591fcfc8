"""Shared by all the realizer's tests: this directory on the path (for ``realizer_git_helpers``)
and the realizer's home directory."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

TESTS_DIR = Path(__file__).parent
if str(TESTS_DIR) not in sys.path:
    sys.path.insert(0, str(TESTS_DIR))


@pytest.fixture
def home(tmp_path: Path) -> Path:
    """An empty ``home`` directory in the test's temporary directory."""
    path = tmp_path / "home"
    path.mkdir()
    return path
