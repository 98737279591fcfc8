"""One example of every tagged message, encoded into the golden samples under ``samples/``.

Add an example when you add a message; run ``python contracts/tests/examples.py`` to write the
samples that are missing. Never rewrite an existing sample: an old payload must keep decoding.
"""

from __future__ import annotations

import importlib.util
import sys
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import msgspec

from contracts.base import Accepted, Actor, ErrorReply, Message, Ok, Principal, Reply
from contracts.contained_commands import RunContainedCommand
from contracts.gateway import (
    ApiKeyCreated,
    ApiKeyRevoked,
    CompanyCreated,
    CompanyHostAccessChanged,
)
from contracts.service import (
    GetAuditTrail,
    GetOperation,
    InboxMessageRejected,
    OperationFinished,
    OperationProgress,
    OperationProgressed,
    OperationStarted,
    StopAllRuntimeServices,
    VerifyReplay,
)

SAMPLES = Path(__file__).parent / "samples"


def _load_sibling(name: str) -> Any:
    """Load a sibling module of examples (the tests folder is not a package)."""
    spec = importlib.util.spec_from_file_location(name, Path(__file__).parent / f"{name}.py")
    assert spec
    assert spec.loader
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


WHEN = datetime(2026, 11, 29, 12, 0, 0, tzinfo=UTC)
ADMIN = Actor(type="admin", id="admin")
SYSTEM = Actor(type="system", id="workspace-realizer")
PRINCIPAL = Principal(company_id="0b5f0c1e-4a43-4c8e-9c1e-1c2f3a4b5c6d", actor=ADMIN)
COMPANY = "0b5f0c1e-4a43-4c8e-9c1e-1c2f3a4b5c6d"


def _envelope(aggregate: str, version: int = 1) -> dict[str, object]:
    return {
        "event_id": "5d1a3c9e-8f7b-5e2d-9a1b-3c4d5e6f7a8b",
        "aggregate": aggregate,
        "aggregate_id": "6e2b4d0f-9a8c-4f3e-8b2c-4d5e6f7a8b9c",
        "aggregate_version": version,
        "company_id": COMPANY,
        "occurred_at": WHEN,
        "actor": ADMIN,
        "run_id": None,
        "reason": "example",
    }


MESSAGES: list[Message] = [
    CompanyCreated(**_envelope("company"), name="Acme Robotics", issue_prefix="ACME"),  # type: ignore[arg-type]
    CompanyHostAccessChanged(  # type: ignore[arg-type]
        **_envelope("company", 2), host_trusted=False, allowed_roots=["/home/me/src"]
    ),
    RunContainedCommand(
        principal=Principal(
            company_id=COMPANY, actor=Actor(type="system", id="workspace-realizer")
        ),
        company_id=COMPANY,
        command="make setup",
        cwd="/w/ACME-1",
        root="/w/ACME-1",
        env={"CLIPYARD_WORKSPACE_CWD": "/w/ACME-1"},
        timeout_sec=600.0,
        owned=True,
        label="provision",
    ),
    ApiKeyCreated(**_envelope("api_key"), name="ci", kind="board", agent_id=None),  # type: ignore[arg-type]
    ApiKeyRevoked(**_envelope("api_key", 2)),  # type: ignore[arg-type]
    OperationStarted(**_envelope("operation"), kind="realize"),  # type: ignore[arg-type]
    OperationProgressed(  # type: ignore[arg-type]
        **_envelope("operation", 2),
        kind="realize",
        progress=OperationProgress(
            phase="managed_clone",
            message="Receiving objects",
            percent=45,
            workspace_operation_id="0b8f3c2e-5d1a-4c6b-9e7f-1a2b3c4d5e6f",
            project_workspace_id="7c9e6679-7425-40de-944b-e07fc1f90ae7",
        ),
    ),
    OperationFinished(  # type: ignore[arg-type]
        **_envelope("operation", 2), kind="realize", status="succeeded", result={"created": True}
    ),
    InboxMessageRejected(  # type: ignore[arg-type]
        **_envelope("inbox"),
        upstream="controller",
        subject="ws.evt.run.finished",
        stream_sequence=42,
        error="payload is not valid JSON",
    ),
    GetAuditTrail(principal=PRINCIPAL, aggregate_id="6e2b4d0f-9a8c-4f3e-8b2c-4d5e6f7a8b9c"),
    VerifyReplay(principal=Principal(company_id=None, actor=SYSTEM)),
    GetOperation(principal=PRINCIPAL, operation_id="7f3c5e1a-0b9d-4a4f-9c3d-5e6f7a8b9c0d"),
    StopAllRuntimeServices(principal=Principal(company_id=None, actor=SYSTEM), node="local"),
    *_load_sibling("workspace_examples").build(_envelope, PRINCIPAL),
    *_load_sibling("credential_examples").build(_envelope, PRINCIPAL),
    *_load_sibling("runtime_examples").build(_envelope, PRINCIPAL),
    *_load_sibling("heartbeat_examples").build(_envelope, PRINCIPAL),
]

REPLIES: list[Reply] = [
    Ok(result={"id": "6e2b4d0f-9a8c-4f3e-8b2c-4d5e6f7a8b9c"}),
    ErrorReply(code="not_found", message="no such workspace", status=404, details={"id": "x"}),
    Accepted(operation_id="7f3c5e1a-0b9d-4a4f-9c3d-5e6f7a8b9c0d"),
]


def tag_of(message: msgspec.Struct) -> str:
    """The wire tag of a tagged message or reply."""
    tag = type(message).__struct_config__.tag
    assert isinstance(tag, str)
    return tag


def sample_path(kind: str, tag: str) -> Path:
    """Where the golden sample of ``tag`` lives."""
    return SAMPLES / f"{kind}.{tag}.json"


def write_missing() -> list[Path]:
    """Write the sample of every example that has none yet; never touch an existing one."""
    written = []
    for kind, items in (("message", MESSAGES), ("reply", REPLIES)):
        for item in items:
            path = sample_path(kind, tag_of(item))
            if not path.exists():
                path.write_bytes(msgspec.json.format(msgspec.json.encode(item)) + b"\n")
                written.append(path)
    return written


if __name__ == "__main__":
    for path in write_missing():
        sys.stdout.write(f"wrote {path}\n")
