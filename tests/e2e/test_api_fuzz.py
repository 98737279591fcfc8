"""schemathesis over every operation of ``/api/openapi.json`` on the running stack, with the admin
key and a board key (seeded: ``--generation-deterministic``; bounded: five examples an operation
in the fuzzing phase, the coverage phase's boundary values with the board key): no answer is a 5xx, none violates the document (status,
content type, headers, body schema, ``Allow``), and no schema-valid input is refused with 400 or
422 (404 and 409 are expected for the random ids). Two rules between query parameters cannot be
stated in OpenAPI (``version`` or ``at`` of a workspace's history; ``tail`` or ``offset``/``length``
of a service's log): those two operations run every check but that one. The company event stream
is left out (it does not end)."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

pytestmark = pytest.mark.e2e

CHECKS_LEFT_OUT = (
    "ignored_auth,use_after_free,ensure_resource_availability,object_level_authorization"
)
"""Stateful and authorization checks this run does not set up (the access sweep covers who)."""
CROSS_PARAMETER = r"/history$|/runtime-services/\{service_id\}/logs$"


def _run(
    api: str, key: str, report: Path, *filters: str, left_out: str, phases: str
) -> dict[str, Any]:
    argv = [
        str(Path(sys.executable).parent / "schemathesis"), "run", f"{api}/api/openapi.json",
        "-H", f"Authorization: Bearer {key}", "--checks", "all", "--exclude-checks", left_out,
        "--max-examples", "5", "--request-timeout", "20", "--generation-deterministic",
        "--phases", phases, *filters, "--report", "json", "--report-json-path", str(report), "--no-color",
    ]  # fmt: skip
    # Run in the report's folder: schemathesis keeps a cache of past failures in its working
    # directory (`.schemathesis/`) and replays them first; each run starts clean.
    done = subprocess.run(
        argv, capture_output=True, text=True, timeout=600, check=False, cwd=report.parent
    )
    assert report.exists(), done.stdout[-3000:] + done.stderr[-3000:]
    found: dict[str, Any] = json.loads(report.read_text())
    failures = done.stdout.find("FAILURES")
    found["output"] = done.stdout[max(failures, 0) :][:8000]
    return found


async def test_no_operation_answers_5xx_or_off_its_document_or_refuses_valid_input(
    stack: Any, tmp_path: Path
) -> None:
    async with stack.admin as admin:
        company = (await admin.post("/api/companies", json={"name": "Fuzz"})).json()
        board = (await admin.post(f"/api/companies/{company['id']}/api-keys",
                                  json={"name": "fuzz", "kind": "board"})).json()["key"]  # fmt: skip
    # The board key reaches every company route: all phases, the coverage phase's boundary
    # values included. The admin key is refused most of them (403): examples and fuzzing.
    for name, key, phases in (("board", board, "examples,coverage,fuzzing"),
                              ("admin", stack.admin_key, "examples,fuzzing")):  # fmt: skip
        runs = [
            _run(stack.api, key, tmp_path / f"{name}-all.json", "--exclude-path-regex",
                 f"events/stream|{CROSS_PARAMETER}", left_out=CHECKS_LEFT_OUT, phases=phases),
            _run(stack.api, key, tmp_path / f"{name}-cross.json", "--include-path-regex",
                 CROSS_PARAMETER, left_out=f"{CHECKS_LEFT_OUT},positive_data_acceptance",
                 phases=phases),
        ]  # fmt: skip
        for run in runs:
            assert run["operations"]["tested"] > 0, run["output"]
            assert run["failures"] == [], run["output"]
            assert run["errors"] == [], run["output"]
