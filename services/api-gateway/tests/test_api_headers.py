"""Every ``/api`` answer carries ``X-Content-Type-Options: nosniff``; the ``text/plain`` ones that
serve text commands produced (a workspace operation's output, a runtime service's log, a run's
log) also carry ``Content-Security-Policy: sandbox``. Pages keep their own policy."""

from __future__ import annotations

import importlib.util
import sys
from pathlib import Path
from typing import Any

import pytest
from litestar.testing import TestClient

from contracts import heartbeat_subjects as hb
from contracts import workspace_subjects as subjects
from contracts.base import ErrorReply
from contracts.runtime_subjects import RUNTIME_LOG


def _load(name: str) -> Any:
    spec = importlib.util.spec_from_file_location(name, Path(__file__).parent / f"{name}.py")
    assert spec
    assert spec.loader
    module = importlib.util.module_from_spec(spec)
    sys.modules.setdefault(name, module)
    spec.loader.exec_module(module)
    return module


fx: Any = _load("heartbeat_fixtures")
rt: Any = _load("runtime_fixtures")
wire: Any = rt.wire

Client = TestClient[Any]
HOSTILE = "<html><script>alert(document.cookie)</script></html>"


def _sandboxed(response: Any) -> None:
    assert response.status_code == 200, response.text
    assert response.headers["content-type"].startswith("text/plain")
    assert response.headers["x-content-type-options"] == "nosniff"
    assert response.headers["content-security-policy"] == "sandbox"


def test_a_workspace_operation_output_is_sandboxed(
    client: Client, bus: Any, board: dict[str, str]
) -> None:
    bus.replies[subjects.workspace_operation_output("realizer")] = wire.ok(
        {"data": HOSTILE.encode(), "offset": 0, "totalBytes": len(HOSTILE)}
    )
    bus.replies[subjects.workspace_operation_output("supervisor")] = ErrorReply(
        code="not_found", message="no such operation", status=404
    )
    response = client.get(f"/api/workspace-operations/{wire.OP}/output", headers=board)
    _sandboxed(response)
    assert response.text == HOSTILE


def test_a_runtime_service_log_is_sandboxed(
    client: Client, bus: Any, board: dict[str, str]
) -> None:
    bus.replies[RUNTIME_LOG] = wire.ok(
        {"text": HOSTILE, "offset": 0, "length": len(HOSTILE), "size": len(HOSTILE)}
    )
    url = f"/api/execution-workspaces/{wire.WS}/runtime-services/{rt.SERVICE}/logs?tail=5"
    _sandboxed(client.get(url, headers=board))


def test_a_run_log_is_sandboxed(
    client: Client, bus: Any, company: str, board: dict[str, str]
) -> None:
    bus.replies[hb.RUN_GET] = wire.ok(fx.run(company))
    bus.replies[hb.SLOT_RUN_LOG] = wire.ok(
        {"runId": fx.RUN, "offset": 0, "length": len(HOSTILE), "size": 99, "text": HOSTILE}
    )
    _sandboxed(client.get(f"/api/runs/{fx.RUN}/log", headers=board))


@pytest.mark.parametrize(
    ("path", "status"),
    [
        ("/api/health", 503),  # no service answers its ping here
        ("/api/companies/{company}", 200),
        ("/api/companies/{company}", 401),  # without a key
        ("/api/no-such-endpoint", 404),
    ],
)
def test_every_api_answer_is_nosniff_and_json_is_not_sandboxed(
    client: Client, company: str, board: dict[str, str], path: str, status: int
) -> None:
    headers = board if status != 401 else {}
    response = client.get(path.format(company=company), headers=headers)
    assert response.status_code == status, response.text
    assert response.headers["x-content-type-options"] == "nosniff"
    assert "content-security-policy" not in response.headers


def test_pages_keep_their_own_policy(client: Client) -> None:
    response = client.get("/sign-in")
    assert response.status_code == 200
    assert "script-src 'self'" in response.headers["content-security-policy"]
    assert response.headers.get_list("content-security-policy") == [
        response.headers["content-security-policy"]
    ]
