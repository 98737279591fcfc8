"""`clipyard up` with tiny rotation limits: every service's log, nats-server's log and the shared
span file rotate while the stack starts, serves and stops; at most the configured number of old
files is kept and no line is torn."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import httpx
import pytest

from telemetry import span_files, spans_path
from telemetry.rotation import backup_path, kept_files
from tests.e2e.hostfacts import free_port, reap

pytestmark = pytest.mark.e2e

SERVICES = (
    "api-gateway",
    "workspace-realizer",
    "runtime-supervisor",
    "heartbeat-controller",
    "git-credentials",
)


def _whole_lines(files: list[Path]) -> list[str]:
    """The lines of ``files``; each JSON-looking one must parse (none is torn or interleaved)."""
    lines = []
    for file in files:
        text = file.read_text()
        assert text.endswith("\n") or not text, f"{file} ends inside a line"
        for line in text.splitlines():
            if line.startswith("{"):
                json.loads(line)
            lines.append(line)
    return lines


def test_logs_and_spans_rotate_under_up(tmp_path: Path) -> None:
    home = tmp_path / "home"
    port = free_port()
    env = {
        **os.environ,
        "CLIPYARD_HOME": str(home),
        "CLIPYARD_NATS_URL": f"nats://127.0.0.1:{free_port()}",
        "CLIPYARD_HTTP_PORT": str(port),
        "CLIPYARD_LOG_MAX_BYTES": "600",
        "CLIPYARD_LOG_BACKUPS": "2",
        "CLIPYARD_SPANS_MAX_BYTES": "3000",
        "CLIPYARD_SPANS_BACKUPS": "3",
    }
    env.pop("CLIPYARD_ADMIN_KEY", None)
    out = tmp_path / "up.log"
    with out.open("w") as log:
        proc = subprocess.Popen(
            [sys.executable, "-m", "clipyard_cli", "up"],
            env=env,
            stdout=log,
            stderr=subprocess.STDOUT,
            start_new_session=True,
        )
    try:
        deadline = time.monotonic() + 90
        healthy = 0
        while healthy < 20:  # a few requests more: spans from every service
            assert time.monotonic() < deadline, (
                f"the stack never became healthy:\n{out.read_text()}"
            )
            assert proc.poll() is None, f"clipyard up exited early:\n{out.read_text()}"
            try:
                answer = httpx.get(f"http://127.0.0.1:{port}/api/health", timeout=2)
                healthy += answer.status_code == 200
            except httpx.TransportError:
                pass
            time.sleep(0.05 if healthy else 0.2)
        os.killpg(proc.pid, signal.SIGINT)
        assert proc.wait(60) == 0, out.read_text()
    finally:
        if proc.poll() is None:
            os.killpg(proc.pid, signal.SIGKILL)
            proc.wait()
        reap(home)

    logs = home / "logs"
    for service in SERVICES:
        live = logs / f"{service}.log"
        files = kept_files(live)
        assert backup_path(live, 1) in files, f"{service}'s log never rotated"
        assert not backup_path(live, 3).exists(), f"{service} kept more than 2 old logs"
        lines = _whole_lines(files)
        # Its last words are kept: stdout and stderr followed the rotation.
        assert any('"msg": "service stopped"' in line for line in lines), lines
    nats_backups = sorted(logs.glob("nats-server.log.*"))
    assert 1 <= len(nats_backups) <= 2, nats_backups
    for line in _whole_lines([*nats_backups, logs / "nats-server.log"]):
        assert line.startswith(("[", "--- ")), line  # NATS's own lines, `up`'s start marker

    spans = span_files(home)
    assert backup_path(spans_path(home), 1) in spans, "the span file never rotated"
    assert not backup_path(spans_path(home), 4).exists()
    services = {json.loads(line)["service"] for line in _whole_lines(spans)}
    assert "api-gateway" in services
