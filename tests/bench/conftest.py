"""Benchmarks share one report, printed and written when the session ends."""

from __future__ import annotations

import importlib.util
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

_spec = importlib.util.spec_from_file_location(
    "bench_harness", Path(__file__).parent / "harness.py"
)
assert _spec
assert _spec.loader
harness: Any = importlib.util.module_from_spec(_spec)
sys.modules["bench_harness"] = harness
_spec.loader.exec_module(harness)


@pytest.fixture(scope="session")
def bench_report() -> Iterator[Any]:
    """The session's report; every benchmark adds its comparison."""
    report = harness.Report()
    yield report
    path = report.write()
    sys.stdout.write("\n\n" + report.render() + f"\n\nwritten to {path}\n")
