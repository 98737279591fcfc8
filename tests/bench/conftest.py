"""Benchmarks share one report, printed and written when the session ends."""

from __future__ import annotations

import importlib.util
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest


def _load(name: str, file: str) -> Any:
    spec = importlib.util.spec_from_file_location(name, Path(__file__).parent / file)
    assert spec
    assert spec.loader
    module = importlib.util.module_from_spec(spec)
    sys.modules[name] = module
    spec.loader.exec_module(module)
    return module


harness: Any = _load("bench_harness", "harness.py")
_load("bench_wrk", "wrk_load.py")


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
            terminalreporter.write_line(f"written to {harness.results_path()}")
