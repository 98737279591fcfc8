"""Every exporter configure_telemetry wires gets redacted spans: the JSONL file, the console, OTLP.

Each case runs in its own interpreter (the global tracer provider is set once per process).
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import threading
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

import pytest
from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import ExportTraceServiceRequest

from telemetry import spans_path

SECRET = "ghp_SECRET0123456789"

EMIT_FAILING_SPAN = f"""
import sys
from pathlib import Path
from opentelemetry.trace import Status, StatusCode
from telemetry import configure_telemetry, shutdown_telemetry, tracer
home = Path(sys.argv[1]) if len(sys.argv) > 1 else None
configure_telemetry("svc-r", home=home)
url = "https://x-access-token:{SECRET}@github.com/acme/app.git"
with tracer().start_as_current_span("git fetch", attributes={{"remote": url}}) as span:
    try:
        raise RuntimeError("fatal: unable to access " + url)
    except RuntimeError as exc:
        span.record_exception(exc)
        span.set_status(Status(StatusCode.ERROR, "fetch failed: " + str(exc)))
shutdown_telemetry()
"""


def _run(env: dict[str, str], *args: str) -> subprocess.CompletedProcess[str]:
    clean = {k: v for k, v in os.environ.items() if not k.startswith("OTEL_")}
    return subprocess.run(
        [sys.executable, "-c", EMIT_FAILING_SPAN, *args],
        env={**clean, **env},
        capture_output=True,
        text=True,
        timeout=30,
        check=False,
    )


def test_the_jsonl_file_gets_the_status_description_redacted(tmp_path: Path) -> None:
    result = _run({}, str(tmp_path))
    assert result.returncode == 0, result.stderr
    text = spans_path(tmp_path).read_text()
    assert SECRET not in text
    (span,) = (json.loads(line) for line in text.splitlines())
    assert span["status"] == {
        "code": "ERROR",
        "description": "fetch failed: fatal: unable to access https://***@github.com/acme/app.git",
    }
    assert span["attributes"]["remote"] == "https://***@github.com/acme/app.git"
    assert span["events"][0]["name"] == "exception"


def test_the_console_exporter_prints_redacted_spans() -> None:
    result = _run({"OTEL_TRACES_EXPORTER": "console"})
    assert result.returncode == 0, result.stderr
    assert '"name": "git fetch"' in result.stdout
    assert "https://***@github.com/acme/app.git" in result.stdout
    assert SECRET not in result.stdout


class _Collector(BaseHTTPRequestHandler):
    bodies: list[bytes]

    def do_POST(self) -> None:
        self.bodies.append(self.rfile.read(int(self.headers.get("Content-Length", "0"))))
        self.send_response(200)
        self.send_header("Content-Type", "application/x-protobuf")
        self.send_header("Content-Length", "0")
        self.end_headers()

    def log_message(self, format: str, *args: object) -> None:
        return


@pytest.fixture
def collector() -> Iterator[tuple[str, list[bytes]]]:
    """A tiny OTLP/HTTP receiver keeping the body of each POST."""
    bodies: list[bytes] = []
    server = ThreadingHTTPServer(
        ("127.0.0.1", 0), type("Handler", (_Collector,), {"bodies": bodies})
    )
    thread = threading.Thread(target=server.serve_forever, args=(0.05,), daemon=True)
    thread.start()
    yield f"http://127.0.0.1:{server.server_address[1]}", bodies
    server.shutdown()
    server.server_close()


def test_the_otlp_exporter_sends_redacted_spans(collector: tuple[str, list[bytes]]) -> None:
    endpoint, bodies = collector
    result = _run({"OTEL_EXPORTER_OTLP_ENDPOINT": endpoint})
    assert result.returncode == 0, result.stderr
    assert bodies, "no OTLP export reached the collector"
    assert all(SECRET.encode() not in body for body in bodies)
    request = ExportTraceServiceRequest()
    request.ParseFromString(bodies[0])
    span = request.resource_spans[0].scope_spans[0].spans[0]
    assert span.name == "git fetch"
    assert span.status.message == (
        "fetch failed: fatal: unable to access https://***@github.com/acme/app.git"
    )
    remote = next(a for a in span.attributes if a.key == "remote")
    assert remote.value.string_value == "https://***@github.com/acme/app.git"
    message = next(a for a in span.events[0].attributes if a.key == "exception.message")
    assert "https://***@github.com" in message.value.string_value
