"""JSON log lines: trace ids of the current span, extra fields, redaction of secrets and URLs."""

from __future__ import annotations

import io
import json
import logging
from collections.abc import Iterator
from typing import Any

import pytest
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter

from telemetry import configure_logging, scrub_url_secrets, tracer


@pytest.fixture
def stream() -> Iterator[io.StringIO]:
    """Install the JSON handler on a string buffer; remove it afterwards."""
    root = logging.getLogger()
    level = root.level
    buffer = io.StringIO()
    handler = configure_logging("svc-test", level="DEBUG", stream=buffer)
    yield buffer
    root.removeHandler(handler)
    root.setLevel(level)


def _lines(buffer: io.StringIO) -> list[dict[str, Any]]:
    return [json.loads(line) for line in buffer.getvalue().splitlines()]


def test_a_line_has_the_standard_fields(stream: io.StringIO) -> None:
    logging.getLogger("clipyard.test").info("realized %s in %d ms", "ws-1", 12)
    (line,) = _lines(stream)
    assert line["level"] == "INFO"
    assert line["service"] == "svc-test"
    assert line["logger"] == "clipyard.test"
    assert line["msg"] == "realized ws-1 in 12 ms"
    assert line["ts"].endswith("Z")
    assert "T" in line["ts"]
    assert "trace_id" not in line


def test_a_line_inside_a_span_carries_its_ids(
    stream: io.StringIO, exporter: InMemorySpanExporter
) -> None:
    with tracer().start_as_current_span("work") as span:
        logging.getLogger("clipyard.test").warning("inside")
    (line,) = _lines(stream)
    ctx = span.get_span_context()
    assert line["trace_id"] == format(ctx.trace_id, "032x")
    assert line["span_id"] == format(ctx.span_id, "016x")


def test_extra_fields_are_kept_and_secret_ones_redacted(stream: io.StringIO) -> None:
    logging.getLogger("clipyard.test").info(
        "connecting",
        extra={
            "workspace_id": "ws-1",
            "attempt": 2,
            "api_key": "sk-123",
            "Authorization": "Bearer abc",
            "postgres_dsn": "postgresql://u:p@db/x",
            "remote": "https://bob:pw@git.example.com/repo.git?private_token=zz",
            "nested": {"password": "pw", "ok": "fine"},
        },
    )
    (line,) = _lines(stream)
    assert line["workspace_id"] == "ws-1"
    assert line["attempt"] == 2
    assert line["api_key"] == "***"
    assert line["Authorization"] == "***"
    assert line["postgres_dsn"] == "***"
    assert line["remote"] == "https://***@git.example.com/repo.git?***"
    assert line["nested"] == {"password": "***", "ok": "fine"}
    assert "sk-123" not in stream.getvalue()
    assert "bob:pw" not in stream.getvalue()


def test_urls_in_messages_and_exceptions_are_scrubbed(stream: io.StringIO) -> None:
    log = logging.getLogger("clipyard.test")
    log.info("cloning %s", "https://user:pw@host/x?token=y")
    try:
        raise RuntimeError("fetch failed: https://user:pw@host/x?token=y")
    except RuntimeError:
        log.exception("git failed")
    first, second = _lines(stream)
    assert first["msg"] == "cloning https://***@host/x?***"
    assert "https://***@host/x?***" in second["exc"]
    assert "pw@" not in stream.getvalue()
    assert "token=y" not in stream.getvalue()


def test_configuring_again_replaces_the_handler(stream: io.StringIO) -> None:
    root = logging.getLogger()
    before = len(root.handlers)
    second = io.StringIO()
    handler = configure_logging("svc-again", stream=second)
    try:
        assert len(root.handlers) == before
        logging.getLogger("x").info("once")
        assert stream.getvalue() == ""
        assert [line["service"] for line in _lines(second)] == ["svc-again"]
    finally:
        root.removeHandler(handler)


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("https://user:pw@host/x?token=y", "https://***@host/x?***"),
        ("nats://svc:secret@127.0.0.1:4222", "nats://***@127.0.0.1:4222"),
        (
            "see https://example.com/docs/page for more",
            "see https://example.com/docs/page for more",
        ),
        ("password=hunter2 user=bob", "password=*** user=bob"),
        ('{"api_key": "abc", "n": 1}', '{"api_key": "***", "n": 1}'),
        ("Authorization: Bearer abc.def", "Authorization: Bearer ***"),
        ("url='https://h/x?a=1'", "url='https://h/x?***'"),
        ("", ""),
    ],
)
def test_scrub_url_secrets(text: str, expected: str) -> None:
    assert scrub_url_secrets(text) == expected
