"""configure_telemetry in a fresh process: JSONL file, OTEL_* exporters, idempotence, shutdown.

The global tracer provider can be set once per process, so each case runs in its own interpreter.
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
from opentelemetry.sdk.trace import TracerProvider

from telemetry import configure_telemetry, get_provider, span_files, spans_path

EMIT_SPANS = """
import sys
from pathlib import Path
from telemetry import configure_telemetry, consumer_span, producer_span, shutdown_telemetry
home = Path(sys.argv[1]) if len(sys.argv) > 1 else None
first = configure_telemetry("svc-a", home=home, version="9.9.9")
again = configure_telemetry("svc-b", home=None)
assert first is again, "second call must return the first provider"
with producer_span("ws.evt.workspace.realized") as headers:
    pass
with consumer_span("ws.evt.workspace.realized", headers, attributes={"db.password": "hunter2"}):
    pass
shutdown_telemetry()
shutdown_telemetry()
"""


def _clean_env(**extra: str) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("OTEL_")}
    env.update(extra)
    return env


def _run(env: dict[str, str], *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-c", EMIT_SPANS, *args],
        env=env,
        capture_output=True,
        text=True,
        timeout=30,
        check=False,
    )


def test_home_gets_a_jsonl_line_per_span(tmp_path: Path) -> None:
    result = _run(_clean_env(), str(tmp_path))
    assert result.returncode == 0, result.stderr
    lines = spans_path(tmp_path).read_text().splitlines()
    producer, consumer = (json.loads(line) for line in lines)
    assert producer["name"] == "publish ws.evt.workspace.realized"
    assert producer["kind"] == "PRODUCER"
    assert producer["service"] == "svc-a"
    assert producer["parent_span_id"] is None
    assert consumer["kind"] == "CONSUMER"
    assert consumer["trace_id"] == producer["trace_id"]
    assert consumer["parent_span_id"] == producer["span_id"]
    assert len(consumer["trace_id"]) == 32
    assert len(consumer["span_id"]) == 16
    assert consumer["attributes"]["messaging.system"] == "nats"
    assert consumer["attributes"]["db.password"] == "***"
    assert consumer["status"] == {"code": "UNSET", "description": None}
    assert consumer["start"].endswith("Z")
    assert consumer["start"] <= consumer["end"]
    # nothing else is printed: no console exporter by default, no override warning
    assert result.stdout == ""
    assert "Overriding" not in result.stderr


SERVICE_SPANS = """
import sys
from pathlib import Path
from telemetry import configure_telemetry, shutdown_telemetry, tracer
from telemetry.rotation import Rotation
home, service = Path(sys.argv[1]), sys.argv[2]
configure_telemetry(service, home=home, spans_rotation=Rotation(max_bytes=4096, backups=1000))
for n in range(150):
    with tracer().start_as_current_span(f"{service} {n}"):
        pass
assert shutdown_telemetry(timeout_millis=10000)
"""


def test_services_sharing_a_home_rotate_its_span_file_and_lose_no_span(tmp_path: Path) -> None:
    services = [f"svc-{n}" for n in range(4)]
    procs = [
        subprocess.Popen(
            [sys.executable, "-c", SERVICE_SPANS, str(tmp_path), service],
            env=_clean_env(OTEL_BSP_MAX_EXPORT_BATCH_SIZE="8"),
            stderr=subprocess.PIPE,
            text=True,
        )
        for service in services
    ]
    for proc in procs:
        _, err = proc.communicate(timeout=60)
        assert proc.returncode == 0, err
    files = span_files(tmp_path)
    assert len(files) > 10, "the shared file rotated"
    assert files[-1] == spans_path(tmp_path)
    spans = [json.loads(line) for file in files for line in file.read_text().splitlines()]
    for service in services:
        names = [span["name"] for span in spans if span["service"] == service]
        assert names == [f"{service} {n}" for n in range(150)]


def test_without_home_nothing_is_written(tmp_path: Path) -> None:
    result = _run(_clean_env())
    assert result.returncode == 0, result.stderr
    assert not (tmp_path / "telemetry").exists()


def test_console_exporter_prints_spans(tmp_path: Path) -> None:
    result = _run(_clean_env(OTEL_TRACES_EXPORTER="console"))
    assert result.returncode == 0, result.stderr
    assert '"name": "publish ws.evt.workspace.realized"' in result.stdout
    assert '"service.name": "svc-a"' in result.stdout
    assert '"service.version": "9.9.9"' in result.stdout


def test_unknown_exporter_is_a_configuration_error() -> None:
    result = _run(_clean_env(OTEL_TRACES_EXPORTER="zipkin"))
    assert result.returncode != 0
    assert "OTEL_TRACES_EXPORTER" in result.stderr


class _Collector(BaseHTTPRequestHandler):
    received: list[tuple[str, str, int]]

    def do_POST(self) -> None:
        length = int(self.headers.get("Content-Length", "0"))
        self.rfile.read(length)
        self.received.append((self.path, self.headers.get("Content-Type", ""), length))
        self.send_response(200)
        self.send_header("Content-Type", "application/x-protobuf")
        self.send_header("Content-Length", "0")
        self.end_headers()

    def log_message(self, format: str, *args: object) -> None:
        return


@pytest.fixture
def collector() -> Iterator[tuple[str, list[tuple[str, str, int]]]]:
    """A tiny OTLP/HTTP receiver recording (path, content type, size) of each POST."""
    received: list[tuple[str, str, int]] = []
    handler = type("Handler", (_Collector,), {"received": received})
    server = ThreadingHTTPServer(("127.0.0.1", 0), handler)
    thread = threading.Thread(target=server.serve_forever, args=(0.05,), daemon=True)
    thread.start()
    yield f"http://127.0.0.1:{server.server_address[1]}", received
    server.shutdown()
    server.server_close()


def test_otlp_endpoint_implies_the_otlp_exporter(
    collector: tuple[str, list[tuple[str, str, int]]],
) -> None:
    endpoint, received = collector
    result = _run(_clean_env(OTEL_EXPORTER_OTLP_ENDPOINT=endpoint))
    assert result.returncode == 0, result.stderr
    assert received, "no OTLP export reached the collector"
    path, content_type, size = received[0]
    assert path == "/v1/traces"
    assert content_type == "application/x-protobuf"
    assert size > 0


def test_exporter_none_wins_over_an_endpoint(
    collector: tuple[str, list[tuple[str, str, int]]],
) -> None:
    endpoint, received = collector
    result = _run(_clean_env(OTEL_EXPORTER_OTLP_ENDPOINT=endpoint, OTEL_TRACES_EXPORTER="none"))
    assert result.returncode == 0, result.stderr
    assert received == []


def test_configuring_twice_in_this_process_returns_the_same_provider() -> None:
    first = configure_telemetry("telemetry-tests")
    second = configure_telemetry("someone-else", version="2.0.0")
    assert first is second
    assert isinstance(first, TracerProvider)
    assert get_provider() is first
