"""Fixtures of the telemetry unit tests: the global provider with an in-memory exporter."""

from __future__ import annotations

from collections.abc import Iterator

import pytest
from opentelemetry.sdk.trace.export import SimpleSpanProcessor
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter

from telemetry import add_span_processor, configure_telemetry


@pytest.fixture(scope="session")
def _session_exporter() -> InMemorySpanExporter:
    configure_telemetry("telemetry-tests")
    exporter = InMemorySpanExporter()
    add_span_processor(SimpleSpanProcessor(exporter))
    return exporter


@pytest.fixture
def exporter(_session_exporter: InMemorySpanExporter) -> Iterator[InMemorySpanExporter]:
    """The in-memory exporter of the global provider, empty at the start of each test."""
    _session_exporter.clear()
    yield _session_exporter
    _session_exporter.clear()
