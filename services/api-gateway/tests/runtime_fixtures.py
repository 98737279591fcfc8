"""Wire-shaped answers of the runtime-supervisor, for the runtime handler tests."""

from __future__ import annotations

import importlib.util
from pathlib import Path
from typing import Any

_spec = importlib.util.spec_from_file_location(
    "workspace_fixtures", Path(__file__).parent / "workspace_fixtures.py"
)
assert _spec
assert _spec.loader
wire: Any = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(wire)

SERVICE = "8a4d6f2b-1c0e-4b5a-8d4e-6f7a8b9c0d1e"
SUP_OP = "9b5e7a3c-2d1f-4c6b-9e5f-7a8b9c0d1e2f"
RUN = "0c6f8b4d-3e2a-4d7c-8f6a-8b9c0d1e2f3a"


def service(company_id: str, **changes: Any) -> dict[str, Any]:
    """A running ``service:web`` of the test workspace, as the supervisor shows it."""
    return {
        "id": SERVICE,
        "serviceName": "web",
        "status": "running",
        "desiredState": "running",
        "port": 41007,
        "url": "http://127.0.0.1:41007/",
        "healthStatus": "healthy",
        "companyId": company_id,
        "executionWorkspaceId": wire.WS,
        "serviceIndex": 0,
        "workspaceCommandId": "service:web",
        "lifecycle": "shared",
        "command": "python3 -m http.server $PORT --bind 127.0.0.1",
        "pid": 4242,
        "startedAt": wire.NOW,
        **changes,
    }


def state(company_id: str, **changes: Any) -> dict[str, Any]:
    """``RuntimeState`` with one running service and provisioned runtime."""
    return {
        "runtimeServices": [service(company_id)],
        "runtimeProvisioning": {"state": "provisioned", "at": wire.NOW, "operationId": SUP_OP},
        "desiredState": "running",
        "serviceStates": {"0": "running"},
        **changes,
    }


def sup_operation(company_id: str, **changes: Any) -> dict[str, Any]:
    """A workspace operation recorded by the supervisor."""
    supervisor = {
        "id": SUP_OP,
        "phase": "workspace_provision",
        "command": "python3 -m http.server $PORT --bind 127.0.0.1",
        "source": "supervisor",
    }
    return wire.operation(company_id, **(supervisor | changes))


def control_result(company_id: str, **changes: Any) -> dict[str, Any]:
    """``RuntimeControlResult`` of a start."""
    return {
        "operation": sup_operation(company_id),
        "runtimeServices": [service(company_id)],
        "runtimeProvisioning": {"state": "provisioned", "at": wire.NOW, "operationId": SUP_OP},
        "lease": {"outcome": "bypassed"},
        **changes,
    }
