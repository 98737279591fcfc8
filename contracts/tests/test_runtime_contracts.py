"""The runtime-supervisor's batch summaries query: its subject, its cap and its answer."""

from __future__ import annotations

import msgspec
import pytest

from contracts.base import Actor, Principal
from contracts.runtime_commands import ListRuntimeSummaries, RuntimeSummaries, RuntimeSummary
from contracts.runtime_subjects import RUNTIME_SUMMARIES

BOARD = Principal(company_id="c1", actor=Actor(type="board", id="k1"))


def _query(count: int) -> bytes:
    ids = [f"ws-{i}" for i in range(count)]
    return msgspec.json.encode(ListRuntimeSummaries(principal=BOARD, workspace_ids=ids))


def test_summaries_subject() -> None:
    assert RUNTIME_SUMMARIES == "ws.qry.runtime_service.summaries"


def test_at_most_200_workspaces_are_asked_at_once() -> None:
    decoded = msgspec.json.decode(_query(200), type=ListRuntimeSummaries)
    assert len(decoded.workspace_ids) == 200
    with pytest.raises(msgspec.ValidationError, match="workspaceIds"):
        msgspec.json.decode(_query(201), type=ListRuntimeSummaries)


def test_summaries_answer_is_camel_case() -> None:
    answer = RuntimeSummaries(items=[RuntimeSummary(workspace_id="ws-1", running=1, total=2)])
    wire = msgspec.json.decode(msgspec.json.encode(answer))
    assert wire == {"items": [{"workspaceId": "ws-1", "running": 1, "total": 2}]}
    assert msgspec.convert(wire, RuntimeSummaries) == answer
