"""`clipyard up` with tiny rotation limits: every service's log, nats-server's log and the shared
span file rotate while the stack starts, serves and stops; at most the configured number of old
files is kept and no line is torn."""

from __future__ import annotations

import json
from pathlib import Path

import httpx
import pytest

from telemetry import span_files, spans_path
from telemetry.rotation import backup_path, kept_files
from tests.upstack import SERVICES, running_up

pytestmark = pytest.mark.e2e


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
    tiny = {
        "CLIPYARD_LOG_MAX_BYTES": "600",
        "CLIPYARD_LOG_BACKUPS": "2",
        "CLIPYARD_SPANS_MAX_BYTES": "3000",
        "CLIPYARD_SPANS_BACKUPS": "3",
    }
    with running_up(tmp_path, **tiny) as up:
        up.wait_healthy()
        for _ in range(20):  # a few requests more: spans from every service
            assert httpx.get(f"{up.api}/health", timeout=5).status_code == 200
        assert up.interrupt() == 0, up.log.read_text()
    home = up.home

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
