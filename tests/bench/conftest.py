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


_REPORTS: list[Any] = []


@pytest.fixture(scope="session")
def bench_report() -> Iterator[Any]:
    """The session's report; every benchmark adds its comparison."""
    report = harness.Report()
    _REPORTS.append(report)
    yield report
    report.write()


def pytest_terminal_summary(terminalreporter: Any) -> None:
    """Print the ratios at the end of `just bench`, whatever pytest captured."""
    for report in _REPORTS:
        if report.comparisons:
            terminalreporter.write_sep("=", "benchmarks: Clipyard's path vs the physical limit")
            terminalreporter.write_line(report.render())
            terminalreporter.write_line(f"written to {harness.RESULTS / 'latest.json'}")
