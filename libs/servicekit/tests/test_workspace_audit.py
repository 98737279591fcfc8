"""A workspace operation and a stored event as the realizer and the supervisor both show them."""

from __future__ import annotations

import uuid
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import Any

from contracts.base import Actor
from eventstore.envelope import event_id
from servicekit.workspace_audit import (
    EXCERPT_BYTES,
    audit_row,
    excerpt,
    operation_detail,
    operation_row,
)

T0 = datetime(2026, 12, 2, 10, 0, tzinfo=UTC)


@dataclass
class _Operation:
    id: uuid.UUID = field(default_factory=uuid.uuid4)
    company_id: str = "c"
    execution_workspace_id: str | None = "w"
    phase: str = "workspace_provision"
    command: str = "make setup"
    cwd: str = "/work/w"
    status: str = "succeeded"
    exit_code: int | None = 0
    started_at: datetime = T0
    finished_at: datetime | None = T0
    run_id: str | None = "r"
    issue_id: str | None = "i"
    operation_id: str | None = "o"
    metadata: dict[str, Any] = field(default_factory=lambda: {"action": "start"})
    stdout_excerpt: str = "out"
    stderr_excerpt: str = "err"
    truncated: bool = False
    stdout_bytes: int = 3
    stderr_bytes: int = 3


def test_an_excerpt_keeps_the_last_64_kib_and_says_it_cut() -> None:
    assert excerpt(b"short") == ("short", False)
    text, cut = excerpt(b"a" + b"b" * EXCERPT_BYTES)
    assert (len(text), set(text), cut) == (EXCERPT_BYTES, {"b"}, True)
    assert excerpt(b"\xff") == ("\ufffd", False)  # never raises on bytes that are not UTF-8


def test_a_row_names_its_source_and_the_detail_adds_the_output() -> None:
    op = _Operation()
    row = operation_row(op, "supervisor")
    assert (row.id, row.source, row.status, row.metadata) == (
        str(op.id),
        "supervisor",
        "succeeded",
        {"action": "start"},
    )
    assert row.metadata is not op.metadata  # a copy: the aggregate's own stays untouched
    detail = operation_detail(op, "realizer")
    assert (detail.source, detail.stdout_excerpt, detail.stderr_bytes) == ("realizer", "out", 3)
    assert {f: getattr(detail, f) for f in row.__struct_fields__ if f != "source"} == {
        f: getattr(row, f) for f in row.__struct_fields__ if f != "source"
    }


@dataclass
class _Stored:
    originator_id: uuid.UUID
    originator_version: int
    timestamp: datetime
    actor: dict[str, str]
    run_id: str | None
    reason: str
    tenant_id: str
    name: str


class _Public:
    class __struct_config__:
        tag = "thing.renamed.v1"


def test_an_audit_row_carries_the_published_event_id_and_type_and_no_tenant() -> None:
    stored = _Stored(uuid.uuid4(), 3, T0, {"type": "board", "id": "k"}, "r", "renamed", "c", "x")
    row = audit_row(stored, lambda e: _Public(), "realizer")  # type: ignore[arg-type,return-value]
    assert row.event_id == event_id(stored)
    assert (row.type, row.source, row.aggregate_version) == ("thing.renamed.v1", "realizer", 3)
    assert row.actor == Actor(type="board", id="k")
    assert "tenant_id" not in row.data
    assert row.data["name"] == "x"
    private = audit_row(stored, lambda e: None, "supervisor")
    assert private.type != "thing.renamed.v1"  # a private event shows its stored type
