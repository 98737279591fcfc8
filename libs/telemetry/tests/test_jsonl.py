"""The JSONL span exporter on a private provider: one object per span, appended (behind the
redacting wrapper, as ``configure_telemetry`` wires it)."""

from __future__ import annotations

import json
from pathlib import Path

from opentelemetry.sdk.resources import Resource
from opentelemetry.sdk.trace import TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor, SpanExportResult
from opentelemetry.trace import Status, StatusCode

from telemetry.jsonl import JsonlSpanExporter
from telemetry.redacting import RedactingSpanExporter
from telemetry.rotation import Rotation, backup_path, kept_files


def _provider(path: Path) -> tuple[TracerProvider, JsonlSpanExporter]:
    exporter = JsonlSpanExporter(path)
    provider = TracerProvider(
        resource=Resource.create({"service.name": "jsonl"}), shutdown_on_exit=False
    )
    provider.add_span_processor(SimpleSpanProcessor(RedactingSpanExporter(exporter)))
    return provider, exporter


def test_spans_are_appended_with_status_events_and_redacted_attributes(tmp_path: Path) -> None:
    path = tmp_path / "deep" / "spans.jsonl"
    provider, _ = _provider(path)
    tracer = provider.get_tracer("t")
    with (
        tracer.start_as_current_span("outer"),
        tracer.start_as_current_span(
            "inner", attributes={"url": "https://a:b@h/p?q=1", "n": [1, 2]}
        ) as span,
    ):
        span.add_event("step", {"token": "t0k"})
        span.set_status(
            Status(StatusCode.ERROR, "clone of https://x-access-token:ghp_SECRET@github.com/o/r")
        )
    provider.shutdown()
    inner, outer = (json.loads(line) for line in path.read_text().splitlines())
    assert inner["parent_span_id"] == outer["span_id"]
    assert inner["service"] == "jsonl"
    assert inner["kind"] == "INTERNAL"
    assert inner["attributes"] == {"url": "https://***@h/p?***", "n": [1, 2]}
    assert inner["events"][0]["name"] == "step"
    assert inner["events"][0]["attributes"] == {"token": "***"}
    assert inner["status"] == {
        "code": "ERROR",
        "description": "clone of https://***@github.com/o/r",
    }
    assert "ghp_SECRET" not in path.read_text()
    assert inner["duration_ms"] >= 0


def test_a_second_exporter_appends_to_the_same_file(tmp_path: Path) -> None:
    path = tmp_path / "spans.jsonl"
    for name in ("first", "second"):
        provider, _ = _provider(path)
        with provider.get_tracer("t").start_as_current_span(name):
            pass
        provider.shutdown()
    assert [json.loads(line)["name"] for line in path.read_text().splitlines()] == [
        "first",
        "second",
    ]


def test_export_after_shutdown_fails(tmp_path: Path) -> None:
    exporter = JsonlSpanExporter(tmp_path / "spans.jsonl")
    exporter.shutdown()
    exporter.shutdown()
    provider = TracerProvider(shutdown_on_exit=False)
    with provider.get_tracer("t").start_as_current_span("late") as span:
        pass
    assert exporter.export([span]) is SpanExportResult.FAILURE  # type: ignore[list-item]


def test_the_file_rotates_by_size_and_keeps_whole_lines(tmp_path: Path) -> None:
    path = tmp_path / "spans.jsonl"
    exporter = JsonlSpanExporter(path, Rotation(max_bytes=1500, backups=2))
    provider = TracerProvider(shutdown_on_exit=False)
    provider.add_span_processor(SimpleSpanProcessor(exporter))
    for n in range(40):
        with provider.get_tracer("t").start_as_current_span(f"span {n}"):
            pass
    provider.shutdown()
    files = kept_files(path)
    assert files == [backup_path(path, 2), backup_path(path, 1), path]
    names = [json.loads(line)["name"] for file in files for line in file.read_text().splitlines()]
    assert names == [f"span {n}" for n in range(40 - len(names), 40)]
    assert len(names) > 10
